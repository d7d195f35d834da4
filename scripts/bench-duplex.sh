#!/usr/bin/env bash
# The full-duplex figures of docs/benchmarks.md: robot-agent duplex-bench on
# the simulated echo path (espeak-ng speech), every canceller and WebRTC
# configuration side by side in the same run. The 100-reply / 100-trial runs
# take several minutes of CPU each on 2 cores. Output also goes to
# out/bench-duplex.txt. REPLIES=N shortens the heavy runs; VAD=0 skips the
# VAD comparison; VARIED=0 skips the robustness runs (other rooms, delays,
# echo gains, seeds and voices).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/need-go.sh
mkdir -p out bin out/voices
tags=$(scripts/detect-tags.sh)
go build -tags "$tags" -o bin/robot-agent-bench ./cmd/robot-agent
n=${REPLIES:-100}
# Every canceller this build has (none = no AEC, the baseline).
aecs=$(bin/robot-agent-bench duplex-bench -h 2>&1 | sed -n 's/.*(default "\([a-z,]*\)").*/\1/p' | head -1)
# WebRTC configurations (duplex-bench --aec help): the default
# (delay-agnostic on top of the agent's estimator, 48 ms lead, moderate),
# the previous default (8 ms lead), the agent's estimator alone, the
# suppression levels, the short (48 ms) filter, and low suppression
# switched on in double talk.
webrtc="" prev=""
if [[ ",$aecs," == *,webrtc,* ]]; then
	webrtc="webrtc,webrtc:m8,webrtc:estimator,webrtc:low,webrtc:high,webrtc:short:m16,webrtc:dt-low"
	prev=",webrtc:m8"
fi
base=$(echo "$aecs" | sed 's/,\?webrtc//')
all=$(echo "$base,$webrtc" | sed 's/^,//; s/,$//')
best=$(echo "$aecs" | grep -o webrtc || echo "$aecs" | sed 's/.*,//')
run() { echo; echo "\$ robot-agent duplex-bench $*"; bin/robot-agent-bench duplex-bench "$@"; }
# The sections measured before the current defaults (drift compensation,
# guard margin 10, the linear-gated uplink) run with the defaults of the
# time; the noise guard (noise_guard_db 6) is on in them: it changes
# nothing in a quiet room.
prev_defaults="--drift-comp=false --guard-margin-db 0 --uplink canceller"
runp() { run $prev_defaults "$@"; }
{
	bin/robot-agent-bench version
	# Echo cancellation, far end only (ERLE first 2 s and after), with
	# 100 ppm of drift and without.
	runp --replies 20 --rt60 0.3 --drift-ppm 100 --aec "$all"
	runp --replies 20 --rt60 0.3 --drift-ppm 100 --soft-clip 2 --aec "$aecs$prev"
	runp --replies 20 --rt60 0.3 --drift-ppm 0 --aec "$aecs$prev"
	# False barge-ins: 100 replies at 0 dB echo gain in pink noise.
	runp --replies "$n" --echo-gain-db 0 --noise pink --snr-db 10 --aec "$best"
	# Barge-in at SER -10 dB: 100 trials; onset guard at the fixed
	# double_talk_db (default) and, without drift, following the canceller
	# (--guard-margin-db 10).
	runp --replies "$n" --barge-in --ser-db -10 --aec "$best$prev"
	runp --replies "$n" --barge-in --ser-db -10 --drift-ppm 0 --aec "$best"
	runp --replies "$n" --barge-in --ser-db -10 --drift-ppm 0 --guard-margin-db 10 --aec "$best"
	if [[ -n "$webrtc" ]]; then
		# Drift compensation (dc/nodc) x onset guard (g0: the fixed
		# double_talk_db; g10, g15: following the canceller), side by side
		# in each run: barge-in at 100, 0 and +50 ppm, false barge-ins in
		# noise, ERLE; -200 ppm with the far end written at the speaker's
		# pace (--speaker-clock: with the mic slower than the speaker the
		# default bench's echo overtakes what was written).
		dc="webrtc:nodc:g0:canc,webrtc:dc:g0:canc,webrtc:nodc:g10:canc,webrtc:dc:g10:canc,webrtc:dc:g15:canc"
		e="$base,webrtc:nodc:canc,webrtc:dc:canc"
		e=${e/speex/speex:nodc,speex:dc}
		e=${e#,}
		run --replies "$n" --barge-in --ser-db -10 --drift-ppm 100 --aec "$dc"
		run --replies "$n" --barge-in --ser-db -10 --drift-ppm 0 --aec "$dc"
		run --replies "$n" --barge-in --ser-db -10 --drift-ppm 50 --seed 3 --aec "$dc"
		run --speaker-clock --replies "$n" --barge-in --ser-db -10 --drift-ppm -200 --seed 2 --aec "$dc"
		run --speaker-clock --replies "$n" --barge-in --ser-db -10 --drift-ppm 100 --aec "$dc"
		for a in "--drift-ppm 100" "--drift-ppm 100 --soft-clip 2" "--drift-ppm 0" "--drift-ppm 50" "--speaker-clock --drift-ppm -200"; do
			# shellcheck disable=SC2086
			run --replies 20 --rt60 0.3 $a --aec "$e"
		done
		run --replies "$n" --echo-gain-db 0 --noise pink --snr-db 10 --aec "$dc"
		run --replies 30 --echo-gain-db 10 --noise motor --snr-db 10 --seed 6 --aec "$dc"
		# Noise guard and the new defaults: the previous defaults, drift
		# compensation + guard margin 10 without the noise guard (nf-1),
		# and the new defaults, side by side: false barge-ins with every
		# noise kind, barge-in on three seeds and in noise.
		nd="webrtc:nodc:g0:nf-1:canc,webrtc:dc:g10:nf-1:canc,webrtc:dc:g10:canc"
		for k in pink white motor babble; do
			run --replies "$n" --echo-gain-db 0 --noise "$k" --snr-db 10 --aec "$nd"
		done
		run --replies 30 --echo-gain-db 10 --noise motor --snr-db 10 --seed 6 --aec "$nd"
		for s in 1 2 3; do
			run --replies "$n" --barge-in --ser-db -10 --seed "$s" --aec "$nd"
		done
		run --replies "$n" --barge-in --ser-db -10 --noise pink --snr-db 10 --aec "$nd,webrtc:dc:g10:nf3:canc"
		run --replies "$n" --echo-gain-db 0 --noise motor --snr-db 10 --aec webrtc:dc:g10:nf3:canc
		# Dual-path uplink: WebRTC's output, the linear filter's, gated.
		if [[ ",$aecs," == *,speex,* ]]; then
			up="webrtc:nodc:g0:nf-1:canc,webrtc:dc:g10:canc,webrtc:dc:g10:lin,webrtc:dc:g10:lingate"
			run --replies "$n" --barge-in --ser-db -10 --aec "$up"
			run --replies 20 --rt60 0.3 --aec "$up"
			run --replies 20 --rt60 0.3 --soft-clip 2 --aec "$up"
			run --replies 20 --barge-in --ser-db 0 --aec "$up"
		fi
	fi
	if [[ -n "$webrtc" ]]; then
		runp --replies 20 --barge-in --ser-db -10 --aec webrtc,webrtc:estimator,webrtc:high,webrtc:low,webrtc:dt-low,webrtc:short:low:m16
	fi
	# Double talk at SER 0 dB: near-end correlation.
	runp --replies 20 --barge-in --ser-db 0 --aec "$aecs$prev${webrtc:+,webrtc:low}"
	if [[ "${VARIED:-1}" != 0 && -n "$webrtc" ]]; then
		# Robustness: other rooms, delays, echo gains, seeds and voices
		# (the default against the previous default and speex).
		v="$base,webrtc$prev"
		v=${v#,}
		for a in "--rt60 0.1" "--rt60 0.8" "--delay-ms 20" "--delay-ms 250" "--echo-gain-db -10" "--echo-gain-db 10" "--seed 2"; do
			# shellcheck disable=SC2086
			runp --replies 10 $a --aec "$v"
		done
		espeak-ng -v en-us -s 150 -w out/voices/far-us.wav "Here is the plan for the afternoon. First we go to the kitchen and pick up the red cup, then we bring it to the table next to the window, and after that I will charge my battery for a while."
		espeak-ng -v en-gb-scotland+m3 -s 170 -w out/voices/near-scot.wav "Wait, hold on, not that one."
		espeak-ng -v en+f4 -s 140 -w out/voices/near-f4.wav "Hey robot, please stop talking now."
		runp --replies 30 --far out/voices/far-us.wav --near out/voices/near-scot.wav --barge-in --ser-db -10 --aec "webrtc$prev"
		runp --replies 30 --far out/voices/far-us.wav --near out/voices/near-scot.wav --barge-in --ser-db -10 --drift-ppm 0 --guard-margin-db 10 --aec webrtc
		runp --replies 30 --far out/voices/far-us.wav --near out/voices/near-f4.wav --barge-in --ser-db -10 --rt60 0.8 --seed 2 --aec "webrtc$prev"
		runp --replies 30 --far out/voices/far-us.wav --near out/voices/near-f4.wav --barge-in --ser-db -10 --rt60 0.8 --seed 2 --drift-ppm 0 --guard-margin-db 10 --aec webrtc
		v4=webrtc:nodc:g0:canc,webrtc:dc:g0:canc,webrtc:dc:g10:canc,webrtc:dc:g15:canc
		run --replies 30 --far out/voices/far-us.wav --near out/voices/near-scot.wav --barge-in --ser-db -10 --aec "$v4"
		run --replies 30 --far out/voices/far-us.wav --near out/voices/near-f4.wav --barge-in --ser-db -10 --rt60 0.8 --seed 2 --aec "$v4"
		runp --replies 30 --echo-gain-db 10 --noise motor --snr-db 10 --seed 6 --aec webrtc
		nd="webrtc:nodc:g0:nf-1:canc,webrtc:dc:g10:nf-1:canc,webrtc:dc:g10:canc"
		run --replies 30 --far out/voices/far-us.wav --near out/voices/near-scot.wav --barge-in --ser-db -10 --aec "$nd"
		run --replies 30 --far out/voices/far-us.wav --near out/voices/near-f4.wav --barge-in --ser-db -10 --rt60 0.8 --seed 2 --aec "$nd"
	fi
	if [[ "${VAD:-1}" != 0 ]]; then
		run --vad-compare --replies 4 --vad-seeds 2
	fi
} 2>&1 | tee out/bench-duplex.txt

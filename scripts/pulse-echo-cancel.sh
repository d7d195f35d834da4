#!/usr/bin/env bash
# pulse-echo-cancel.sh [FAR.wav]: measures PulseAudio's system-level echo
# canceller (module-echo-cancel) on a real PulseAudio echo path, next to
# robot-agent's in-process canceller on the same kind of scene
# (docs/audio.md "System-level alternative", docs/benchmarks.md).
#
# The scene, for each aec_method (webrtc, speex):
#   paplay FAR -> ec_play (the echo-cancel sink) -> ec_spk (null sink, "the
#   speaker") -> module-loopback, 80 ms, 0 dB ("the room") -> ec_room (null
#   sink) -> ec_room.monitor ("the mic", the canceller's source master)
#   -> module-echo-cancel -> ec_mic (the cancelled source).
# parec records ec_room.monitor (the mic before cancelling) and ec_mic (after)
# at the same time; ERLE = mic energy / cancelled energy, far end only (no
# near-end talker, no noise: everything in the mic is echo), over the first
# 2 s of echo and over the rest.
#
# Then `robot-agent duplex-bench` runs the in-process cancellers on the same
# FAR with a simulated room of the same shape (80 ms, 0 dB, direct path only,
# no drift, no noise).
#
# Runs itself under scripts/with-pulse.sh when not already under it.
# SKIP_BENCH=1: only the PulseAudio part.
# Outputs in out/echo-cancel/. Needs pulseaudio-utils, sox, espeak-ng.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/.."
if [ -z "${ROBOT_AGENT_PULSE_SINK:-}" ]; then
  exec "$here/with-pulse.sh" "$here/pulse-echo-cancel.sh" "$@"
fi
out=out/echo-cancel
mkdir -p "$out"
far="${1:-}"
if [ -z "$far" ]; then
  far="$out/far.wav"
  espeak-ng -s 165 -w "$out/far-raw.wav" "Hello, I am your robot. I can tell you about the weather, \
read you the news, or play some music. The quick brown fox jumps over the lazy dog. \
Shall I tell you a story about a little robot who wanted to learn to sing?"
  sox "$out/far-raw.wav" -r 16000 -c 1 "$far" norm -3
fi
dur="$(soxi -D "$far")"

# rms FILE FROM TO: RMS amplitude of FILE between FROM and TO seconds.
rms() { sox "$1" -n trim "$2" ="$3" stat 2>&1 | awk '/^RMS +amplitude/ {print $3}'; }
# erle MIC OUT FROM TO: 20 log10(rms(mic) / rms(out)).
erle() {
  local m o
  m="$(rms "$1" "$3" "$4")"; o="$(rms "$2" "$3" "$4")"
  awk -v m="$m" -v o="$o" 'BEGIN { if (o <= 0) o = 1e-9; if (m <= 0) { print "n/a"; exit } printf "%.1f", 20 * log(m / o) / log(10) }'
}

mods=()
cleanup() {
  for ((i = ${#mods[@]} - 1; i >= 0; i--)); do pactl unload-module "${mods[$i]}" 2>/dev/null || true; done
  mods=()
}
trap cleanup EXIT

printf '| canceller | ERLE first 2 s | ERLE after 2 s |\n| --- | --- | --- |\n' >"$out/table.md"
for method in webrtc speex; do
  cleanup
  mods+=("$(pactl load-module module-null-sink sink_name=ec_spk rate=48000 channels=2)")
  mods+=("$(pactl load-module module-null-sink sink_name=ec_room rate=48000 channels=2)")
  mods+=("$(pactl load-module module-loopback source=ec_spk.monitor sink=ec_room latency_msec=80 source_dont_move=true sink_dont_move=true)")
  # No gain control: WebRTC's analog AGC (on by default in the module)
  # turns the master source's volume down, which would show as "echo
  # removed" in both recordings alike.
  args=()
  if [ "$method" = webrtc ]; then args=('aec_args="analog_gain_control=0 digital_gain_control=0"'); fi
  if ! m="$(pactl load-module module-echo-cancel aec_method="$method" "${args[@]}" source_master=ec_room.monitor sink_master=ec_spk \
      source_name=ec_mic sink_name=ec_play rate=16000 channels=1 use_master_format=0 2>&1)"; then
    echo "module-echo-cancel aec_method=$method: $m" >&2
    printf '| PulseAudio %s | not available: %s | |\n' "$method" "$m" >>"$out/table.md"
    continue
  fi
  mods+=("$m")
  pactl set-source-volume ec_room.monitor 100%
  sleep 1
  parec --device=ec_room.monitor --rate=16000 --channels=1 --format=s16le --file-format=wav --latency-msec=10 "$out/$method-mic.wav" &
  p1=$!
  parec --device=ec_mic --rate=16000 --channels=1 --format=s16le --file-format=wav --latency-msec=10 "$out/$method-out.wav" &
  p2=$!
  sleep 1
  paplay --device=ec_play "$far"
  sleep 1
  kill -INT "$p1" "$p2"
  wait "$p1" "$p2" 2>/dev/null || true
  # The far end starts about 1 s into the recordings (plus the path).
  first="$(erle "$out/$method-mic.wav" "$out/$method-out.wav" 1.0 3.0)"
  rest="$(erle "$out/$method-mic.wav" "$out/$method-out.wav" 3.0 "$(awk -v d="$dur" 'BEGIN { print d + 0.8 }')")"
  printf '| PulseAudio module-echo-cancel aec_method=%s | %s dB | %s dB |\n' "$method" "$first" "$rest" >>"$out/table.md"
done
cleanup
echo "== PulseAudio module-echo-cancel (80 ms module-loopback, 0 dB, far end only)"
cat "$out/table.md"

[ -z "${SKIP_BENCH:-}" ] || exit 0
echo "== robot-agent duplex-bench, same far end, simulated room: 80 ms, 0 dB, direct path, no drift, no noise"
tags="$(scripts/detect-tags.sh)"
go run -tags "$tags" ./cmd/robot-agent duplex-bench --far "$far" --replies 3 --delay-ms 80 --echo-gain-db 0 \
  --rt60 0 --drift-ppm 0 --noise none 2>&1 | tee "$out/duplex-bench.txt"

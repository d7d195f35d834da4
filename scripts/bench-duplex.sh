#!/usr/bin/env bash
# The full-duplex figures of docs/benchmarks.md: robot-agent duplex-bench on
# the simulated echo path (espeak-ng speech), every canceller side by side.
# The 100-reply / 100-trial runs take a few minutes on 2 cores. Output also
# goes to out/bench-duplex.txt. REPLIES=N shortens the heavy runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/need-go.sh
mkdir -p out bin
tags=$(scripts/detect-tags.sh)
go build -tags "$tags" -o bin/robot-agent-bench ./cmd/robot-agent
n=${REPLIES:-100}
# Every canceller this build has (none = no AEC, the baseline).
aecs=$(bin/robot-agent-bench duplex-bench -h 2>&1 | sed -n 's/.*(default "\(.*\)").*/\1/p' | head -1)
run() { echo; echo "\$ robot-agent duplex-bench $*"; bin/robot-agent-bench duplex-bench "$@"; }
{
	bin/robot-agent-bench version
	run --replies 20 --rt60 0.3 --drift-ppm 100 --aec "$aecs"
	run --replies 20 --rt60 0.3 --drift-ppm 100 --soft-clip 2 --aec "$aecs"
	run --replies "$n" --echo-gain-db 0 --noise pink --snr-db 10 --aec "$aecs"
	run --replies "$n" --echo-gain-db 0 --noise motor --snr-db 10 --aec "$aecs"
	run --replies "$n" --barge-in --ser-db -10 --aec "$aecs"
	run --replies 20 --barge-in --ser-db 0 --aec "$aecs"
	run --replies 20 --barge-in --ser-db 0 --aec "$aecs" --ns
	run --vad-compare --replies 4 --vad-seeds 2
} 2>&1 | tee out/bench-duplex.txt

#!/usr/bin/env bash
# Playout benchmarks (issue 11), run by scripts/bench.sh ('make bench'):
#  - every jitter-buffer policy on generated arrival traces (7 kinds x
#    BENCH_SEEDS seeds, 10-minute streams, generated now, not stored):
#    adaptive player, old stall policy, fixed 200 ms, pion/interceptor's
#    jitterbuffer (version pinned in go.mod), oracle fixed buffer, and the
#    adaptive player at fixed 200 ms's and pion's concealment (1x traces);
#  - interrupt -> first silent sample over 10 000 random interrupts (sim);
#  - 5-minute replies streamed at 4x and 10x through 'robot-agent
#    jitter-replay' (samples lost, peak buffer, peak RSS).
# The ring producer/consumer benchmarks run with ./playback/ in bench.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
SEEDS="${BENCH_SEEDS:-3}"
echo "# playout: policies on generated traces (seeds 1..${SEEDS})"
go test -run 'TestCompare$' -compare -seeds="${SEEDS}" -count 1 -v -timeout 60m ./jittertrace/ | grep '^|'
echo "# playout: interrupt -> first silent sample"
go test -run 'TestInterruptToSilence$' -count 1 -v -timeout 30m ./playback/ -args -interrupts=10000 | grep 'first silent'
echo "# playout: gateway bursts through robot-agent jitter-replay"
mkdir -p out/traces
go build -o out/robot-agent-bench ./cmd/robot-agent
for k in burst4x burst10x; do
  out/robot-agent-bench jitter-replay --generate "$k" --seed 1 > "out/traces/$k.trace"
  out/robot-agent-bench jitter-replay "out/traces/$k.trace"
done

#!/usr/bin/env bash
# make bench: every benchmark that docs/benchmarks.md reports, in one run,
# so ratios compare figures taken on the same (noisy, shared) machine.
# Raw output goes to out/bench.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
TAGS="$(scripts/detect-tags.sh)"
COUNT="${BENCH_COUNT:-3}"
mkdir -p out
{
  echo "# $(date -u +%FT%TZ) $(go version) $(nproc) cores tags='${TAGS}'"
  # v0 spine: jitter buffer vs channel baseline, fast-lane paths, codecs,
  # the echo canceller's linear filter (aec, with speexdsp).
  go test -tags "${TAGS}" -run '^$' -bench . -benchmem -count "${COUNT}" \
    ./playback/ ./uplink/ ./capture/ ./protocol/ ./codec/... ./aec/
  # End-to-end loopback latency (one 6 s session per count).
  go test -run '^$' -bench EndToEndLatency -benchtime 1x -count "${COUNT}" ./cmd/robot-agent/
  # Opus (needs the opus tag): bytes on the wire per minute of the make run
  # conversation, PCM then Opus (two WIRE_BENCH_FOR sessions, default 20 s).
  if [[ " ${TAGS} " == *" opus "* ]]; then
    go test -tags "${TAGS}" -run '^$' -bench WireBytes -benchtime 1x -count 1 ./cmd/robot-agent/
  fi
  # State modules: cost per event to the wire, IMU sampling.
  go test -run '^$' -bench . -benchmem -count "${COUNT}" ./state/... ./identity/
  # Video: pipeline CPU at 640x480 15 fps (capture-only baseline in the same run).
  go test -tags "${TAGS}" -run '^$' -bench . -benchmem -count "${COUNT}" ./video/
  for extra in scripts/bench.d/*.sh; do [ -x "$extra" ] && "$extra" "$TAGS" "$COUNT"; done
} 2>&1 | tee out/bench.txt
echo "raw results: out/bench.txt (summarised in docs/benchmarks.md)"

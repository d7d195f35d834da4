#!/usr/bin/env bash
# make bench: every benchmark that docs/benchmarks.md reports, in one run,
# so ratios compare figures taken on the same (noisy, shared) machine.
# Raw output goes to out/bench.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
TAGS="$(scripts/detect-tags.sh)"
mkdir -p out
{
  echo "# $(date -u +%FT%TZ) $(go version) $(nproc) cores tags='${TAGS}'"
  go test -run '^$' -bench . -benchmem -count 3 ./playback/ ./uplink/ ./capture/ ./codec/... ./protocol/
  go test -run '^$' -bench EndToEndLatency -benchtime 1x -count 3 ./cmd/robot-agent/
  for extra in scripts/bench.d/*.sh; do [ -x "$extra" ] && "$extra" "$TAGS"; done
} 2>&1 | tee out/bench.txt
echo "raw results: out/bench.txt (summarised in docs/benchmarks.md)"

#!/usr/bin/env bash
# The project's test command (make test): installs what is missing, checks
# formatting and vet (cgo and pure-Go), the pure-Go build, then runs the
# whole suite with -race and every build tag this machine supports (real
# PortAudio through a private PulseAudio null sink, the H264 encoder), and
# the pure-Go suite once more without cgo.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
scripts/need-go.sh
scripts/deps.sh
TAGS="$(scripts/detect-tags.sh)"
# ffmpeg is installed by deps.sh: video tests must check the stream, not skip.
export ROBOT_AGENT_REQUIRE_FFMPEG=1

echo "== lint (gofmt, go vet with and without cgo)"
make -s lint
echo "== pure-Go build and tests (CGO_ENABLED=0)"
CGO_ENABLED=0 go build ./...
CGO_ENABLED=0 go test -count=1 -timeout 20m ./... 
echo "== go test -race -tags '${TAGS}'"
if [ -x scripts/with-pulse.sh ]; then
  scripts/with-pulse.sh go test -race -count=1 -timeout 30m -tags "${TAGS}" ./...
else
  go test -race -count=1 -timeout 30m -tags "${TAGS}" ./...
fi
# The end-to-end tests once more without the race detector, which makes the
# simulated room ~15x slower than real time allows on 2 cores (the
# full-duplex barge-in through the echo path skips itself under -race).
echo "== end-to-end tests in real time, without -race, tags '${TAGS}'"
go test -count=1 -timeout 10m -tags "${TAGS}" -run 'TestEndToEnd' ./cmd/robot-agent/

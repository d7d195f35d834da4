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
# The duplex scenes too long for -race (they skip themselves under it).
echo "== long duplex scenes without -race, tags '${TAGS}'"
go test -count=1 -timeout 10m -tags "${TAGS}" -run 'TestRestoredRoom|TestReverbGuardQuietReverberantRoom|TestReverbGuardHoldsTheTailAfterAReply|TestAnswerInTheReplysTailIsHeard|TestReverbGuardJudgesTheMainCancellersOwnFilter|TestBargeInsInAReverberantHallEachStartAnUtterance|TestStartupSound' ./duplex/
# The real-time tests once more without the race detector, which slows the
# Go side several-fold: the end-to-end tests through the simulated room (its
# echo path costs ~15x more CPU under -race than real time allows on 2
# cores) and the PulseAudio audio-quality tests (NCC, clicks, interrupt to
# silence; in hw/portaudio the tone level, flush and device timing). They
# skip themselves under -race. -p 1: the two packages run one after the
# other, so neither's real-time audio competes with the other's simulated
# room for the 2 cores (CI once saw a device underflow in hw/portaudio's
# start-up test while cmd/robot-agent's end-to-end tests ran beside it).
echo "== real-time end-to-end and PulseAudio tests without -race, tags '${TAGS}'"
if [ -x scripts/with-pulse.sh ]; then
  scripts/with-pulse.sh go test -p 1 -count=1 -timeout 10m -tags "${TAGS}" -run 'TestEndToEnd|TestReal' ./cmd/robot-agent/ ./hw/portaudio/
else
  go test -p 1 -count=1 -timeout 10m -tags "${TAGS}" -run 'TestEndToEnd|TestReal' ./cmd/robot-agent/ ./hw/portaudio/
fi

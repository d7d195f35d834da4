#!/usr/bin/env bash
# run-real.sh (make run-real): `make run` with real audio devices: the agent
# built with PortAudio runs for RUN_FOR (default 20s) against the
# development gateway (`robot-agent gateway`, loopback), on a private
# PulseAudio (scripts/with-pulse.sh: the null sink is the speaker, its
# monitor the mic). A spoken phrase (espeak-ng, paplay) is played into the
# sink a few seconds in, so the agent hears an utterance and the gateway's
# echo plays back. The summary at the end includes the devices' callback
# timing (lateness against the device clock, device underflows, the ring
# running dry); docs/audio.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
tags="$(scripts/detect-tags.sh)"
case " $tags " in
  *" portaudio "*) ;;
  *) echo "run-real: PortAudio is not available (install portaudio19-dev; scripts/deps.sh)" >&2; exit 1;;
esac
mkdir -p bin
go build -tags "$tags" -o bin/robot-agent-real ./cmd/robot-agent
if [ "${1:-}" != "--inner" ]; then
  exec scripts/with-pulse.sh "$0" --inner
fi
work="$(mktemp -d)"
gw=""
cleanup() { if [ -n "$gw" ]; then kill "$gw" 2>/dev/null || true; wait "$gw" 2>/dev/null || true; fi; rm -rf "$work"; }
trap cleanup EXIT
port="${RUN_REAL_PORT:-18765}"
bin/robot-agent-real gateway --listen "127.0.0.1:$port" --log-level warn &
gw=$!
mkdir -p "$work/cred" && echo dev-token >"$work/cred/gateway-token"
if command -v espeak-ng >/dev/null && command -v paplay >/dev/null; then
  espeak-ng -w "$work/hello.wav" "Hello robot. What is the weather like today?" 2>/dev/null || true
  ( sleep 4; [ -s "$work/hello.wav" ] && paplay "$work/hello.wav" || true ) &
fi
sleep 1
CREDENTIALS_DIRECTORY="$work/cred" bin/robot-agent-real run --gateway-url "ws://127.0.0.1:$port/v1/robot" \
  --duration "${RUN_FOR:-20s}" --log-level "${LOG_LEVEL:-info}"

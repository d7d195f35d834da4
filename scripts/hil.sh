#!/usr/bin/env bash
# hil.sh: hardware-in-the-loop audio check for a board with a USB mic and
# speaker (`make hil`). Records a few seconds and reports level and
# clipping, plays a 1 kHz test tone and a short phrase, reports underruns
# and how loud the speaker is at the mic. Skips with a clear message where
# PortAudio or an audio device is missing.
#
# Devices: the system defaults, or ROBOT_AGENT_AUDIO_INPUT /
# ROBOT_AGENT_AUDIO_OUTPUT (a name or unique part of it, as
# `robot-agent devices` prints it). See docs/audio.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
scripts/need-go.sh
if ! pkg-config --exists portaudio-2.0 2>/dev/null; then
  echo "hil: SKIP: PortAudio development files are not installed (apt-get install portaudio19-dev, or scripts/deps.sh)"
  exit 0
fi
if [ ! -d /dev/snd ] && ! pactl info >/dev/null 2>&1; then
  echo "hil: SKIP: no sound card (/dev/snd) and no PulseAudio server on this machine"
  exit 0
fi
export JACK_NO_START_SERVER=1
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
set +e
ROBOT_AGENT_HIL=1 go test -count=1 -tags portaudio -run '^TestHIL$' -v ./hw/portaudio/ >"$out" 2>&1
rc=$?
set -e
# Keep the report lines, drop PortAudio's and the test runner's chatter.
grep -E 'hil_test.go|^(--- |ok|FAIL|PASS)' "$out" | sed -E 's/^ +hil_test.go:[0-9]+: /  /' || cat "$out"
if grep -q -- '--- SKIP: TestHIL' "$out"; then
  echo "hil: SKIPPED (see the reason above)"
  exit 0
fi
if [ "$rc" -ne 0 ]; then
  echo "hil: FAILED (full output follows)"; cat "$out"
fi
exit "$rc"

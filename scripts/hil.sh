#!/usr/bin/env bash
# hil.sh: hardware-in-the-loop check for a board with a USB mic, speaker and
# camera (`make hil`).
#
# Audio: records a few seconds and reports level and clipping, plays a 1 kHz
# test tone and a short phrase, reports underruns and how loud the speaker
# is at the mic. Devices: the system defaults, or ROBOT_AGENT_AUDIO_INPUT /
# ROBOT_AGENT_AUDIO_OUTPUT (a name or unique part of it, as `robot-agent
# devices` prints it). See docs/audio.md.
#
# Camera: lists the camera's modes, captures 3 s at 640x480 15 fps and
# reports the frame rate achieved and the H264 encode cost. Device:
# ROBOT_AGENT_HIL_CAMERA (by-id name, bus, card name or /dev/videoN; default
# the first /dev/video*). See docs/video.md.
#
# Echo path: plays pink noise and records the mic at the same time; prints
# the delay, echo gain (ERL) and RT60 of the board's echo path for the echo
# canceller's tuning (docs/audio.md), and writes its impulse response to
# out/hil/echo-ir.wav (HIL_IR_OUT) for duplex-bench --ir-wav.
#
# Each part skips with a clear message where its device or library is
# missing; the exit status is non-zero if a part that ran failed.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
scripts/need-go.sh || exit 1
TAGS="$(scripts/detect-tags.sh)"
status=0

# run_hil NAME OUTFILE -- go test args...: runs a HIL test, prints its
# report lines, and records failure.
run_hil() {
  local name="$1"; shift
  local out; out="$(mktemp)"
  go test -count=1 -v "$@" >"$out" 2>&1
  local rc=$?
  grep -E 'hil_test.go|^(--- |ok|FAIL|PASS)' "$out" | sed -E 's/^ +hil_test.go:[0-9]+: /  /' || cat "$out"
  if grep -q -- '--- SKIP' "$out"; then
    echo "hil: $name SKIPPED (see the reason above)"
  elif [ "$rc" -ne 0 ]; then
    echo "hil: $name FAILED (full output follows)"; cat "$out"; status=1
  else
    echo "hil: $name ok"
  fi
  rm -f "$out"
}

echo "== audio"
if ! pkg-config --exists portaudio-2.0 2>/dev/null; then
  echo "hil: audio SKIPPED: PortAudio development files are not installed (apt-get install portaudio19-dev, or scripts/deps.sh)"
elif [ ! -d /dev/snd ] && ! pactl info >/dev/null 2>&1; then
  echo "hil: audio SKIPPED: no sound card (/dev/snd) and no PulseAudio server on this machine"
else
  export JACK_NO_START_SERVER=1
  ROBOT_AGENT_HIL=1 run_hil audio -tags portaudio -run '^TestHIL$' ./hw/portaudio/
fi

echo "== echo path"
# Plays 3 s of pink noise through the default ALSA playback device while
# recording the default capture device, and prints the echo path: delay
# (device buffers + acoustic path), echo gain / ERL and the room's RT60
# (from the decay after the noise stops). These are the room figures to
# give `robot-agent duplex-bench` (docs/audio.md, "Tuning a real robot"). ALSA device names: HIL_PLAYBACK / HIL_CAPTURE (default: default).
if command -v aplay >/dev/null && command -v arecord >/dev/null && [ -d /dev/snd ]; then
  play_cmd() { aplay -q -D "${HIL_PLAYBACK:-default}" "$1"; }
  rec_cmd() { arecord -q -D "${HIL_CAPTURE:-default}" -f S16_LE -r 16000 -c 1 -d 5 "$1"; }
elif command -v paplay >/dev/null && command -v parec >/dev/null && pactl info >/dev/null 2>&1; then
  play_cmd() { paplay ${HIL_PLAYBACK:+--device=$HIL_PLAYBACK} "$1"; }
  rec_cmd() { timeout 5 parec ${HIL_CAPTURE:+--device=$HIL_CAPTURE} --file-format=wav --format=s16le --rate=16000 --channels=1 "$1"; }
fi
if ! command -v sox >/dev/null; then
  echo "hil: echo path SKIPPED: needs sox (scripts/deps.sh installs it)"
elif ! declare -F play_cmd >/dev/null; then
  echo "hil: echo path SKIPPED: needs aplay/arecord with a sound card (alsa-utils) or paplay/parec with a PulseAudio server"
else
  tmp="$(mktemp -d)"
  sox -q -n -r 16000 -c 1 -b 16 "$tmp/noise.wav" synth 3 pinknoise gain -18 pad 0 0.5
  rec_cmd "$tmp/rec.wav" &
  rec=$!
  sleep 0.5
  play_cmd "$tmp/noise.wav"
  wait "$rec"
  # The recording started about 0.5 s before the playback: the delay printed
  # includes that head start and the devices' buffers; the echo gain (ERL)
  # is the figure that matters (the agent estimates the delay itself).
  ir_out="${HIL_IR_OUT:-out/hil/echo-ir.wav}"
  mkdir -p "$(dirname "$ir_out")"
  if go run -tags "$TAGS" ./cmd/robot-agent duplex-bench --echo-played "$tmp/noise.wav" --echo-recorded "$tmp/rec.wav" --ir-out "$ir_out"; then
    echo "hil: echo path ok"
  else
    echo "hil: echo path FAILED"; status=1
  fi
  rm -rf "$tmp"
fi

echo "== camera"
if ! compgen -G "/dev/video*" >/dev/null; then
  echo "hil: camera SKIPPED: no V4L2 device (/dev/video*) on this machine"
elif [ -z "${ROBOT_AGENT_HIL_CAMERA:-}" ] && ! ROBOT_AGENT_HIL_CAMERA="$(ls /dev/video* | head -n1)"; then
  echo "hil: camera SKIPPED: could not pick a camera"
else
  export ROBOT_AGENT_HIL_CAMERA="${ROBOT_AGENT_HIL_CAMERA:-$(ls /dev/video* | head -n1)}"
  run_hil camera -tags "hil ${TAGS}" -run 'HIL' ./hw/camera/
fi
exit "$status"

#!/usr/bin/env bash
# Installs the Debian packages the test suite needs, if any are missing.
# Idempotent and quiet when everything is present. Needs root (or sudo) to
# install; otherwise prints the command to run.
set -euo pipefail
pkgs=(gcc pkg-config portaudio19-dev pulseaudio pulseaudio-utils libasound2-plugins ffmpeg espeak-ng sox file libx264-dev libwebrtc-audio-processing-dev libspeexdsp-dev libopus-dev libopusfile-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "deps: missing packages and not root: apt-get install -y ${missing[*]}" >&2; exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || echo "deps: apt-get update reported errors (continuing with the lists it got)"
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

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
update() { $SUDO apt-get update -qq || echo "deps: apt-get update reported errors (continuing with the lists it got)"; }
update
# A mirror caught mid-sync can leave an index of the wrong size behind, and
# a dependency then looks missing: refresh and try again, waiting 30, 60
# and 90 s.
attempt=1
until $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; do
  if [ "$attempt" -ge 4 ]; then
    echo "deps: apt-get install failed ($attempt attempts)" >&2
    exit 1
  fi
  echo "deps: apt-get install failed; refreshing the package lists in $((attempt * 30)) s" >&2
  sleep $((attempt * 30))
  update
  attempt=$((attempt + 1))
done

#!/usr/bin/env bash
# Prints the build tags for the real-device binary on this machine:
# portaudio when portaudio19-dev is installed.
tags=()
if pkg-config --exists portaudio-2.0 2>/dev/null; then tags+=(portaudio); fi
echo "${tags[*]}"

#!/usr/bin/env bash
# Prints the build tags for the real-device binary on this machine:
# portaudio when portaudio19-dev is installed, x264 (the H264 encoder)
# when libx264-dev is, webrtcapm (WebRTC echo canceller, VAD) when
# libwebrtc-audio-processing-dev is, speexdsp when libspeexdsp-dev is, opus (the Opus codec) when libopus-dev and
# libopusfile-dev are.
tags=()
if pkg-config --exists portaudio-2.0 2>/dev/null; then tags+=(portaudio); fi
if pkg-config --exists x264 2>/dev/null; then tags+=(x264); fi
if pkg-config --exists webrtc-audio-processing 2>/dev/null; then tags+=(webrtcapm); fi
if pkg-config --exists speexdsp 2>/dev/null; then tags+=(speexdsp); fi
# opus: libopus through gopkg.in/hraban/opus.v2, which also links opusfile.
if pkg-config --exists opus opusfile 2>/dev/null; then tags+=(opus); fi
echo "${tags[*]}"

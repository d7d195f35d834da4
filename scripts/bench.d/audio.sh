#!/usr/bin/env bash
# Real-audio benchmarks (issue 3): device-side lateness of the playback
# hand-off designs under saturated CPU and GC churn, and CPU per minute of
# full-duplex audio, through a private PulseAudio null sink.
set -euo pipefail
case " $1 " in *" portaudio "*) ;; *) echo "# audio benchmarks skipped: no portaudio tag"; exit 0;; esac
scripts/with-pulse.sh go test -tags "$1" -run '^$' -bench 'Handoff|FullDuplexCPU' -benchtime 1x -count "${2:-3}" ./hw/portaudio/

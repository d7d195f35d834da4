#!/usr/bin/env bash
# Real-audio benchmarks: the device hand-off designs (lateness of each
# period against the device cadence, device underflows; idle and saturated;
# SCHED_FIFO on and off where permitted) and CPU per minute of full-duplex
# audio, through a private PulseAudio null sink. See docs/benchmarks.md.
# HANDOFF_PERIODS (default 10000) sets the periods per design and condition
# (about 100 s each at 10 ms); HANDOFF_SOAK=10m adds the soak run.
set -euo pipefail
case " $1 " in *" portaudio "*) ;; *) echo "# audio benchmarks skipped: no portaudio tag"; exit 0;; esac
scripts/with-pulse.sh go test -tags "$1" -run '^$' -bench 'FullDuplexCPU' -benchtime 1x -count "${2:-3}" ./hw/portaudio/
HANDOFF_PERIODS="${HANDOFF_PERIODS:-10000}" scripts/with-pulse.sh go test -tags "$1" -run '^$' -bench 'Handoff' -benchtime 1x -count 1 -timeout 3h ./hw/portaudio/handoffbench/

package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/hw"
)

func cmdDevices(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "robot-agent devices: audio device listing is not built into this binary (build with -tags portaudio)")
	return 1
}

// openRealAudio opens the configured real mic and speaker.
func openRealAudio(cfg config.Config, log *slog.Logger) (hw.AudioSource, hw.AudioSink, error) {
	return nil, nil, fmt.Errorf("real audio devices: %w (build with -tags portaudio and portaudio19-dev installed, or run with --sim)", hw.ErrNotBuiltIn)
}

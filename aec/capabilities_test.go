package aec

import "github.com/robot-agent/robot-agent/hw/portaudio"

// The capabilities the Tap and the Source look for are the real devices'
// methods: a rename there must not silently turn the Tap's speaker
// dropout handling, or the Source's lost reads, off.
var (
	_ upReporter   = (*portaudio.Sink)(nil)
	_ lostReporter = (*portaudio.Source)(nil)
)

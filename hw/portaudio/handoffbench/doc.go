// Package handoffbench measures how promptly the device side gets each
// period under three ways of handing audio from Go to a PortAudio output
// (docs/audio.md, "Device hand-off"; docs/benchmarks.md):
//
//   - cring: what portaudio.Sink does, measured on the real Sink: Go writes
//     a lock-free ring in C memory, a C callback plays it and never enters
//     Go.
//   - gocallback: the PortAudio callback calls into Go (a cgo callback),
//     which computes the period.
//   - blocking: a goroutine locked to its OS thread calls Pa_WriteStream.
//
// Every design is judged by one definition: the start of the device
// side's work on each period (callback entry; for blocking, the write
// call) against the cadence the device clock implies, with
// portaudio.Cadence, and device underflows as PortAudio reports them
// (paOutputUnderflow in the callback flags, paOutputUnderflowed from
// Pa_WriteStream). The C ring's own "ran dry" is counted apart.
//
// The package exists for BenchmarkHandoff and BenchmarkHandoffSoak only
// (build tag portaudio, cgo); nothing in the agent imports it.
package handoffbench

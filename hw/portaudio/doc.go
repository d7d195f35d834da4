// Package portaudio is robot-agent's real microphone and speaker: an
// hw.AudioSource and an hw.AudioSink on PortAudio devices
// (github.com/gordonklaus/portaudio plus a small C layer), with format
// conversion, device selection by name, and hot-plug.
//
// It needs cgo and the build tag portaudio (and portaudio19-dev). Without
// them NewHost returns an error wrapping hw.ErrNotBuiltIn and BuiltIn is
// false; everything else still compiles, so `CGO_ENABLED=0 go build ./...`
// works.
//
// # Formats
//
// A Source captures at the device's rate and channel count (its default
// rate, min(channels, 2), with fallbacks) and delivers mono PCM16 in its
// configured format, hw.MicFormat (16 kHz) by default: stereo is averaged
// to mono and the rate converted by codec/resample's band-limited polyphase
// resampler. A Sink takes mono PCM16, hw.TTSFormat (24 kHz) by default,
// and plays it at whatever rate the device accepts, duplicated to every
// device channel.
//
// # Device hand-off
//
// Between Go and the device sits a lock-free single-producer single-
// consumer ring in C memory (ring.c). PortAudio's callback thread runs a C
// callback that copies from (output) or into (input) the ring and never
// enters Go, so it does not depend on Go scheduling, the garbage collector
// or a free P; it moves its thread to SCHED_FIFO on its first callback
// (DeviceConfig.RealtimePriority, best effort, logged once).
// On the Go side, Sink.Write converts and appends to the ring and sleeps
// while SinkConfig.BufferMS of audio is queued; Source.Read sleeps until
// enough has been captured. The queue absorbs the Go side's lateness: under
// saturated CPUs and a busy GC a goroutine wakes up to ~35 ms late on a
// 2-core board, which is what BufferMS (60 ms by default) covers; the
// device side does not wait for Go (BenchmarkHandoff in package
// handoffbench compares this design with a PortAudio callback into Go and
// with blocking writes).
//
// # Device timing
//
// Every callback also records its start, PortAudio's time info (DAC/ADC
// buffer times, current time) and status flags into a lock-free record
// ring that the Host's supervisor reads: lateness against the device
// cadence (Cadence), buffer-time jitter, device under/overflows and the
// device delay become metrics (and HostConfig.Timing sees every record);
// Sink.DeviceLatency and Source.DeviceLatency (hw.LatencyReporter) are
// computed from the newest record.
//
// Queued output does not delay interrupts: Sink.Flush (hw.Flusher, called
// right after the player's Interrupt) makes the next callback fade out
// within 4 ms what is playing and drop everything written before the flush, including a
// block the writer computed before the flush and published after it
// (generation tags). Underruns are concealed in the callback (the last
// frame held and faded to zero, audio faded back in) and counted. Each
// (re)started output stream begins with BufferMS of silence rendered by
// the callback itself, so start-up causes no underrun while the writer
// fills the queue.
//
// # Devices and hot-plug
//
// Devices are chosen by name (Match): empty for the system default, an
// exact name, a name without ALSA's "(hw:N,M)" suffix, or a unique
// case-insensitive substring; never by index. A Host owns PortAudio for
// the process and supervises every Sink and Source: a stream whose
// callback stops for HostConfig.StallTimeout is declared lost (logged
// once, counted in robot_agent_audio_{input,output}_lost_total), its Sink
// or Source degrades (Write discards and Read returns silence, both paced
// by the clock, so the agent keeps running) and the Host retries with
// exponential backoff. PortAudio only enumerates devices in Initialize, and
// Terminate closes every stream, so the Host re-initialises only when that
// costs nothing (no stream running) or when the system's sound devices
// visibly changed (/proc/asound/cards, /dev/snd); the device is then found
// again by name, also under a new ALSA card number. A device missing at
// start starts its Sink or Source degraded in the same way. Because no
// goroutine is ever inside a blocking PortAudio call, Terminate cannot
// crash a writer.
//
// # Concurrency
//
// A Host's methods are safe from any goroutine; its supervisor runs on its
// own goroutine. Sink.Write is called by one goroutine (the player);
// Source.Read by one (the capture pump); Flush, Latency, DeviceLatency,
// Up, Device and Close from any. Close makes a blocked Write or Read return hw.ErrClosed.
// Write and Read do not allocate, lock or spin in steady state (they
// allocate converters only when a device appears with a new format).
package portaudio

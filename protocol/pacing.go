package protocol

// Downlink pacing and jitter-buffer overflow (docs/protocol.md §7.7).

// CodeBufferOverflow is sent by the robot (once per response) when TTS
// audio arrived while its playback buffer was full: the rest of that
// response is dropped and its final playback_progress has
// interrupted: true and lost_samples > 0.
const CodeBufferOverflow = "buffer_overflow"

// DefaultPlaybackBufferMS is the buffer a gateway assumes for a robot
// whose hello has no playback_buffer_ms (the v1 rule: at most 10 s of
// audio not yet played).
const DefaultPlaybackBufferMS = 10000

// TTSSampleRate is the downlink rate pacing is counted in.
const TTSSampleRate = 24000

// PacingBudget is the pacing rule of §7.7 for a gateway: given the
// robot's advertised buffer (ms; 0 means DefaultPlaybackBufferMS), the
// samples of every response sent so far whose final playback_progress has
// not arrived, and the latest samples_played reported for each, it returns
// how many more samples the gateway may send now (never negative).
func PacingBudget(bufferMS int, sent, played map[uint32]int64) int64 {
	if bufferMS <= 0 {
		bufferMS = DefaultPlaybackBufferMS
	}
	budget := int64(bufferMS) * TTSSampleRate / 1000
	for id, n := range sent {
		budget -= n - min(played[id], n)
	}
	return max(budget, 0)
}

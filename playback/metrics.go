package playback

import "github.com/robot-agent/robot-agent/metrics"

// Histogram names (docs/metrics.md).
const (
	// LatencyMetric: TTS chunk pushed by the read pump → its last sample
	// handed to the device (the receipt → device half of the P4 path).
	LatencyMetric = "robot_agent_playback_latency_seconds"
	// BufferMetric: seconds of TTS audio buffered, sampled once per device
	// period while a response plays.
	BufferMetric = "robot_agent_playback_buffer_seconds"
)

// BufferBuckets are the buffer-depth histogram's bounds in seconds.
var BufferBuckets = []float64{0, 0.02, 0.04, 0.06, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30}

func (p *Player) registerHistograms(reg *metrics.Registry) {
	p.latency.hist = reg.Histogram(LatencyMetric, "TTS slot receipt (pushed by the read pump) to handed to the audio device, in seconds; includes queueing when the gateway streams faster than real time.", nil)
	p.depthHist = reg.Histogram(BufferMetric, "TTS audio buffered in the jitter buffer, in seconds, sampled every device period while a response plays.", BufferBuckets)
}

// observeDepth samples the buffer depth (Fill goroutine; no allocation).
func (p *Player) observeDepth() {
	if p.cur != 0 && p.depthHist != nil {
		p.depthHist.Observe(float64(max(0, p.depth.Load())) / sampleRate)
	}
}

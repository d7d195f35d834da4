//go:build portaudio && cgo

package portaudio

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/metrics"
)

// stampedRecorder reads a Source and stamps each block with the ADC time
// of its last sample (now - DeviceLatency), on time.Now's clock.
type stampedRecorder struct {
	mu     sync.Mutex
	pcm    []int16
	stamps []time.Time // per block
	blk    int
	stop   chan struct{}
	done   chan error
}

func recordStamped(s *Source) *stampedRecorder {
	r := &stampedRecorder{blk: s.Format().SampleRate / 100, stop: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		buf := make([]int16, r.blk)
		for {
			select {
			case <-r.stop:
				r.done <- nil
				return
			default:
			}
			if _, err := s.Read(buf); err != nil {
				r.done <- err
				return
			}
			at := time.Now().Add(-s.DeviceLatency())
			r.mu.Lock()
			r.pcm = append(r.pcm, buf...)
			r.stamps = append(r.stamps, at)
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *stampedRecorder) finish(t *testing.T) ([]int16, []time.Time) {
	t.Helper()
	close(r.stop)
	if err := <-r.done; err != nil {
		t.Fatal(err)
	}
	return r.pcm, r.stamps
}

// Through the real PortAudio path (private PulseAudio null sink, recorded
// from its monitor): the callbacks' time info gives a device delay, the
// lateness histogram fills, DeviceLatency of the sink and the source agree
// with it, and after Flush the tone stops within the device delay plus a
// period and the fade, without a click.
func TestRealDeviceTimingAndFlush(t *testing.T) {
	skipUnderRace(t)
	reg := metrics.NewRegistry()
	h, _, _ := openTestHost(t, HostConfig{Metrics: reg})
	sink, err := h.NewSink(SinkConfig{BufferMS: 120})
	if err != nil {
		t.Fatal(err)
	}
	src, err := h.NewSource(SourceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	rec := recordStamped(src)
	phase := 0
	const amp, hz = 8000.0, 440.0
	writeTone(t, sink, hz, amp, 1500*time.Millisecond, &phase)
	sinkLat := sink.DeviceLatency()
	srcLat := src.DeviceLatency()
	outDelay := time.Duration(reg.Value("robot_agent_audio_output_device_delay_microseconds")) * time.Microsecond
	flushAt := time.Now()
	n := sink.Flush()
	silence := make([]int16, 240)
	for range 40 {
		if err := sink.Write(silence); err != nil {
			t.Fatal(err)
		}
	}
	pcm, stamps := rec.finish(t)
	h.check() // take the last callback records into the metrics

	t.Logf("sink DeviceLatency %v (PortAudio latency %v + 120 ms queue), source DeviceLatency %v, output device delay %v, flushed %d frames",
		sinkLat, sink.Latency()-120*time.Millisecond, srcLat, outDelay, n)
	if outDelay <= 0 || outDelay > 500*time.Millisecond {
		t.Errorf("output device delay %v from PortAudio's time info, want (0, 500ms]", outDelay)
	}
	if sinkLat < 100*time.Millisecond || sinkLat > outDelay+120*time.Millisecond+50*time.Millisecond {
		t.Errorf("sink DeviceLatency %v, want about the 120 ms queue + device delay %v", sinkLat, outDelay)
	}
	if srcLat <= 0 || srcLat > 300*time.Millisecond {
		t.Errorf("source DeviceLatency %v, want (0, 300ms]", srcLat)
	}
	for _, name := range []string{"robot_agent_audio_output_callback_lateness_seconds", "robot_agent_audio_input_callback_lateness_seconds"} {
		if c := reg.Histogram(name, "", nil).Count(); c < 100 {
			t.Errorf("%s: %d observations, want one per callback after warm-up", name, c)
		}
	}
	t.Logf("output lateness max %d µs, device underflows %d, ring ran dry %d; input lateness max %d µs",
		reg.Value("robot_agent_audio_output_callback_lateness_max_microseconds"), reg.Value("robot_agent_audio_output_device_underflows_total"),
		reg.Value("robot_agent_audio_output_underruns_total"), reg.Value("robot_agent_audio_input_callback_lateness_max_microseconds"))

	// The last loud sample's ADC time on the monitor is its DAC time on
	// the sink (same PulseAudio clock).
	rate := src.Format().SampleRate
	last := -1
	for i, v := range pcm {
		if v > 1500 || v < -1500 {
			last = i
		}
	}
	if last < 0 {
		t.Fatal("the tone was not recorded")
	}
	b := last / rec.blk
	end := stamps[b].Add(-time.Duration(rec.blk-1-last%rec.blk) * time.Second / time.Duration(rate))
	toSilence := end.Sub(flushAt)
	limit := outDelay + 10*time.Millisecond + 4*time.Millisecond + 15*time.Millisecond
	t.Logf("flush → silence on the monitor: %v (device delay %v; limit %v)", toSilence, outDelay, limit)
	if toSilence > limit {
		t.Errorf("tone still played %v after Flush, want within device delay + period + fade (+15 ms) = %v", toSilence, limit)
	}
	// No click: the largest sample-to-sample step around the end is no
	// larger than the tone's own.
	toneStep := amp * 2 * math.Pi * hz / float64(rate)
	maxStep := 0.0
	for i := max(1, last-rate/20); i < min(len(pcm), last+rate/20); i++ {
		maxStep = max(maxStep, math.Abs(float64(pcm[i])-float64(pcm[i-1])))
	}
	if limit := 1.5*toneStep + 300; maxStep > limit {
		t.Errorf("click at the flush: step %.0f, want <= %.0f", maxStep, limit)
	}
}

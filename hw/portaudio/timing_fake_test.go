package portaudio

import (
	"testing"
	"time"
)

// run advances the fake clock by gaps, one callback of every live stream
// after each gap, and runs the supervisor every 100 ms of it.
func (fh *fakeHost) run(gaps ...time.Duration) {
	var since time.Duration
	for _, g := range gaps {
		fh.clk.Advance(g)
		for _, s := range fh.f.live() {
			s.tick(s.p.periodFrames)
		}
		if since += g; since >= DefaultWatchInterval {
			since = 0
			fh.check()
		}
	}
	fh.check()
}

func periods(n int) []time.Duration {
	g := make([]time.Duration, n)
	for i := range g {
		g[i] = 10 * time.Millisecond
	}
	return g
}

// The supervisor turns the callbacks' records into the lateness and jitter
// histograms, the device under/overflow counters and the device delay.
func TestTimingMetricsFake(t *testing.T) {
	fh := newFakeHost(t, usbDev(1))
	if _, err := fh.NewSink(SinkConfig{DeviceConfig: DeviceConfig{Device: "USB"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := fh.NewSource(SourceConfig{DeviceConfig: DeviceConfig{Device: "USB"}}); err != nil {
		t.Fatal(err)
	}
	fh.run(periods(100)...)
	// One output callback 3 ms late (and the next one on time again), then
	// one flagged with a device underflow, one input flagged with an overflow.
	fh.run(13*time.Millisecond, 7*time.Millisecond)
	for _, s := range fh.f.live() {
		s.r.mu.Lock()
		if s.output {
			s.r.flags = FlagOutputUnderflow
		} else {
			s.r.flags = FlagInputOverflow
		}
		s.r.mu.Unlock()
	}
	fh.run(periods(100)...)
	v := fh.reg.Value
	for name, want := range map[string]int64{
		"robot_agent_audio_output_device_underflows_total":   1,
		"robot_agent_audio_output_device_overflows_total":    0,
		"robot_agent_audio_input_device_overflows_total":     1,
		"robot_agent_audio_input_device_underflows_total":    0,
		"robot_agent_audio_output_device_delay_microseconds": 20000,
		"robot_agent_audio_input_device_delay_microseconds":  20000,
		"robot_agent_audio_output_timing_records_lost_total": 0,
		"robot_agent_audio_output_underruns_total":           v("robot_agent_audio_output_underruns_total"), // the ring ran dry: nothing written
	} {
		if got := v(name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	if got := v("robot_agent_audio_output_underruns_total"); got < 150 {
		t.Errorf("ring ran dry in %d callbacks, want every one (nothing was written) counted apart from device underflows", got)
	}
	if got := v("robot_agent_audio_output_callback_lateness_max_microseconds"); got < 2970 || got > 3000 {
		t.Errorf("max output lateness %d µs, want 3000", got)
	}
	h := fh.reg.Histogram("robot_agent_audio_output_callback_lateness_seconds", "", nil)
	// 202 callbacks, the first 250 ms (25) and the underflow not measured.
	if n := h.Count(); n != 176 {
		t.Errorf("lateness histogram has %d observations, want 176", n)
	}
	bounds, cum := h.Buckets()
	for i, b := range bounds {
		if b >= 0.002 && b < 0.005 && cum[i] != h.Count()-1 {
			t.Errorf("lateness: %d of %d within %v s, want all but the late one", cum[i], h.Count(), b)
		}
	}
	if n := fh.reg.Histogram("robot_agent_audio_output_buffer_time_jitter_seconds", "", nil).Count(); n < 150 {
		t.Errorf("jitter histogram has %d observations, want one per callback", n)
	}
}

// Flush reports what it discards; a Write blocked on a full queue returns
// early without queuing the rest; the next Write plays.
func TestSinkFlushFake(t *testing.T) {
	fh := newFakeHost(t, usbDev(1))
	s, err := fh.NewSink(SinkConfig{DeviceConfig: DeviceConfig{Device: "USB"}})
	if err != nil {
		t.Fatal(err)
	}
	tone := make([]int16, 960) // 40 ms at 24 kHz: fits the 60 ms queue
	for i := range tone {
		tone[i] = 1000
	}
	if err := s.Write(tone); err != nil {
		t.Fatal(err)
	}
	if n := s.Flush(); n < 955 || n > 960 {
		t.Errorf("Flush discarded %d frames, want the 960 queued (less the resampler's delay)", n)
	}
	fh.run(periods(5)...)
	r := fh.f.live()[0].r
	r.mu.Lock()
	for _, v := range r.played {
		if v != 0 {
			t.Fatalf("flushed audio was played")
		}
	}
	r.mu.Unlock()

	long := make([]int16, 48000) // 2 s: blocks on the full queue
	done := make(chan error, 1)
	go func() { done <- s.Write(long) }()
	for s.ep.conn.Load().ring.buffered() < 2000 {
		time.Sleep(time.Millisecond)
	}
	s.Flush()
	ticks := 0
	for ; ticks < 300; ticks++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if ticks > 10 {
				t.Errorf("Write returned %d periods after the flush, want at once", ticks)
			}
			// The stale frames occupy the ring until the device's next
			// callback fades them out and releases them (the fake device
			// only renders when the test ticks it). The long Write may have
			// returned before any tick since the flush (it was still filling
			// the ring when Flush came, and saw the new generation at once),
			// so tick once, as a real device does within a period;
			// otherwise this Write waits for room on a clock nobody
			// advances (it hung here under qemu-arm, where that
			// interleaving is common).
			fh.run(10 * time.Millisecond)
			if err := s.Write(tone); err != nil {
				t.Fatal(err)
			}
			if b := s.ep.conn.Load().ring.buffered(); b < 1900 {
				t.Errorf("a Write after the flush queued %d frames, want 1920", b)
			}
			return
		default:
		}
		fh.run(10 * time.Millisecond)
		time.Sleep(time.Millisecond)
	}
	t.Fatal("Write did not return after Flush")
}

// DeviceLatency adds the device delay from the callback's time info to
// what is queued (sink) or unread (source).
func TestDeviceLatencyFake(t *testing.T) {
	fh := newFakeHost(t, usbDev(1))
	sink, err := fh.NewSink(SinkConfig{DeviceConfig: DeviceConfig{Device: "USB"}})
	if err != nil {
		t.Fatal(err)
	}
	src, err := fh.NewSource(SourceConfig{DeviceConfig: DeviceConfig{Device: "USB"}})
	if err != nil {
		t.Fatal(err)
	}
	fh.run(periods(2)...)
	if err := sink.Write(make([]int16, 960)); err != nil { // 40 ms queued
		t.Fatal(err)
	}
	// Right after a callback: its 10 ms buffer reaches the DAC in 20 ms,
	// then the 40 ms queue.
	if d := sink.DeviceLatency(); d < 70*time.Millisecond || d > 72*time.Millisecond {
		t.Errorf("sink DeviceLatency %v, want 70 ms (+ resampler delay)", d)
	}
	fh.clk.Advance(5 * time.Millisecond)
	if d := sink.DeviceLatency(); d < 65*time.Millisecond || d > 67*time.Millisecond {
		t.Errorf("sink DeviceLatency 5 ms later %v, want 65 ms", d)
	}
	buf := make([]int16, 160) // 10 ms at 16 kHz
	done := make(chan error, 1)
	go func() { _, err := src.Read(buf); done <- err }()
	for waiting := true; waiting; {
		fh.clk.Advance(10 * time.Millisecond)
		for _, s := range fh.f.live() {
			if !s.output {
				s.tick(s.p.periodFrames)
			}
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			waiting = false
		case <-time.After(5 * time.Millisecond):
		}
	}
	// The newest frame was captured 20 ms before its callback (10 ms
	// callbacks); the returned samples are up to a period or two older.
	if d := src.DeviceLatency(); d < 20*time.Millisecond || d > 45*time.Millisecond {
		t.Errorf("source DeviceLatency %v, want 20..45 ms", d)
	}
}

// A Write that comes right after a Flush, before the device's next callback,
// finds the ring still holding the flushed frames (the callback fades them
// out and releases them). It waits for that callback — at most one period
// on a real device — and then queues in full. This is the interleaving that
// made TestSinkFlushFake hang under qemu-arm (its synchronous Write came
// before any tick of the fake device).
func TestSinkWriteRightAfterFlush(t *testing.T) {
	fh := newFakeHost(t, usbDev(1))
	s, err := fh.NewSink(SinkConfig{DeviceConfig: DeviceConfig{Device: "USB"}})
	if err != nil {
		t.Fatal(err)
	}
	fill := make([]int16, 1440) // 60 ms at 24 kHz: the whole default lead
	for i := range fill {
		fill[i] = 500
	}
	if err := s.Write(fill); err != nil {
		t.Fatal(err)
	}
	if b := s.ep.conn.Load().ring.buffered(); b < 2800 {
		t.Fatalf("queued %d frames, want the 60 ms lead (2880)", b)
	}
	s.Flush()
	tone := make([]int16, 960)
	for i := range tone {
		tone[i] = 1000
	}
	done := make(chan error, 1)
	go func() { done <- s.Write(tone) }()
	for ticks := 0; ; ticks++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if ticks == 0 {
				t.Fatal("Write queued over the flushed frames before the device released them")
			}
			if ticks > 2 {
				t.Errorf("Write after Flush returned after %d device periods, want 1", ticks)
			}
			fh.run(periods(6)...)
			r := fh.f.live()[0].r
			r.mu.Lock()
			defer r.mu.Unlock()
			var stale, fresh int
			for _, v := range r.played {
				switch {
				case v == 500:
					stale++
				case v > 900:
					fresh++
				}
			}
			if stale != 0 {
				t.Errorf("%d flushed samples played", stale)
			}
			// 1920 frames at 48 kHz, less the resampler's start-up ramp
			// from its reset history (about twice its delay).
			if want := 1920 - 2*int(s.rs.Delay()+1) - 8; fresh/2 < want {
				t.Errorf("%d frames of the new Write played, want >= %d", fresh/2, want)
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
		if ticks >= 100 {
			t.Fatal("Write after Flush never returned")
		}
		fh.run(10 * time.Millisecond)
	}
}

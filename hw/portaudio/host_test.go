package portaudio

import (
	"errors"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/hw/hwtest"
	"github.com/robot-agent/robot-agent/metrics"
)

type fakeHost struct {
	*Host
	f   *fakeBackend
	clk *clock.Fake
	reg *metrics.Registry
	log *logRecorder
}

// newFakeHost builds a Host on a fake backend with a fake clock; the test
// drives the supervisor with step.
func newFakeHost(t *testing.T, devs ...Device) *fakeHost {
	t.Helper()
	f := &fakeBackend{}
	f.plug(devs...)
	fh := &fakeHost{f: f, clk: clock.NewFake(), reg: metrics.NewRegistry(), log: &logRecorder{}}
	f.now = fh.clk.Mono
	h, err := newHost(f, HostConfig{Clock: fh.clk, Metrics: fh.reg, Log: slog.New(fh.log)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	fh.Host = h
	return fh
}

// step advances the clock by d in watch intervals, running one supervisor
// check per interval and one callback of every live stream except those
// on devices whose name contains frozen.
func (fh *fakeHost) step(d time.Duration, frozen string) {
	for t := time.Duration(0); t < d; t += DefaultWatchInterval {
		for _, s := range fh.f.live() {
			if frozen == "" || !strings.Contains(s.dev.Name, frozen) {
				s.tick(s.p.periodFrames)
			}
		}
		fh.clk.Advance(DefaultWatchInterval)
		fh.check()
	}
}

func TestNewHostOnlyOnce(t *testing.T) {
	newFakeHost(t, defaultDev())
	if _, err := newHost(&fakeBackend{}, HostConfig{}); !errors.Is(err, ErrHostOpen) {
		t.Fatalf("second host: err = %v, want ErrHostOpen", err)
	}
}

func TestAmbiguousDeviceFailsAtOpen(t *testing.T) {
	fh := newFakeHost(t, defaultDev(), usbDev(1), Device{Name: "USB Speaker (hw:4,0)", MaxOutputChannels: 2, DefaultSampleRate: 48000})
	if _, err := fh.NewSink(SinkConfig{DeviceConfig: DeviceConfig{Device: "usb"}}); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("NewSink(usb) err = %v, want ErrAmbiguous", err)
	}
}

func TestInvalidConfig(t *testing.T) {
	fh := newFakeHost(t, defaultDev())
	for _, cfg := range []SinkConfig{
		{Format: hw.AudioFormat{SampleRate: 24000, Channels: 2}},
		{BufferMS: 1},
		{DeviceConfig: DeviceConfig{SampleRate: 1000}},
		{DeviceConfig: DeviceConfig{PeriodMS: 500}},
	} {
		if _, err := fh.NewSink(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewSink(%+v) err = %v, want ErrInvalidConfig", cfg, err)
		}
	}
	if _, err := fh.NewSource(SourceConfig{Format: hw.AudioFormat{SampleRate: 16000, Channels: 3}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewSource(3 channels) err = %v, want ErrInvalidConfig", err)
	}
}

// A device missing at start: the Sink starts degraded, one warning, and
// picks the device up when it is plugged in (after a rescan, since
// PortAudio only enumerates at initialisation).
func TestMissingAtStartThenPlugged(t *testing.T) {
	fh := newFakeHost(t, defaultDev())
	s, err := fh.NewSink(SinkConfig{DeviceConfig: DeviceConfig{Device: "USB PnP Sound Device"}})
	if err != nil {
		t.Fatalf("NewSink with the device missing: %v (want a degraded sink)", err)
	}
	if s.Up() {
		t.Fatal("Up() with the device missing")
	}
	if n := fh.reg.Value("robot_agent_audio_output_lost_total"); n != 1 {
		t.Errorf("lost_total = %d, want 1", n)
	}
	fh.step(20*time.Second, "")
	if s.Up() {
		t.Fatal("Up() with the device still missing")
	}
	if n := fh.log.count(slog.LevelWarn, "not available"); n != 1 {
		t.Errorf("%d warnings for one outage, want 1", n)
	}
	fh.f.plug(defaultDev(), usbDev(2))
	fh.step(DefaultRetryMax+DefaultWatchInterval, "")
	if !s.Up() {
		t.Fatalf("device plugged in %v ago, still not up", DefaultRetryMax)
	}
	if got := s.Device(); got != usbDev(2).Name {
		t.Errorf("Device() = %q, want %q", got, usbDev(2).Name)
	}
	if n := fh.reg.Value("robot_agent_audio_output_reopened_total"); n != 1 {
		t.Errorf("reopened_total = %d, want 1", n)
	}
	if n := fh.reg.Value("robot_agent_audio_output_up"); n != 1 {
		t.Errorf("up = %d, want 1", n)
	}
}

// A device that stops calling back is declared lost after StallTimeout,
// logged once, retried with exponential backoff without disturbing the
// healthy input stream, and resumed when it comes back under another ALSA
// card number.
func TestLostThenBackUnderNewCardNumber(t *testing.T) {
	fh := newFakeHost(t, defaultDev(), usbDev(1))
	sink, err := fh.NewSink(SinkConfig{DeviceConfig: DeviceConfig{Device: usbDev(1).Name}})
	if err != nil {
		t.Fatal(err)
	}
	src, err := fh.NewSource(SourceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if !sink.Up() || !src.Up() {
		t.Fatalf("up: sink %v source %v", sink.Up(), src.Up())
	}
	fh.step(time.Second, "")
	if !sink.Up() {
		t.Fatal("sink lost while its callbacks run")
	}

	// Unplug: the stream's callbacks stop.
	fh.f.plug(defaultDev())
	fh.step(DefaultStallTimeout+DefaultWatchInterval, "USB")
	if sink.Up() {
		t.Fatalf("sink still up %v after its callbacks stopped", DefaultStallTimeout+DefaultWatchInterval)
	}
	if n := fh.reg.Value("robot_agent_audio_output_lost_total"); n != 1 {
		t.Errorf("lost_total = %d, want 1", n)
	}
	// The first retry finds the card gone; the fingerprint changed, so the
	// host rescans once (reopening the input), then keeps retrying with
	// backoff and without further rescans.
	inits := fh.f.inits
	var backoffs []time.Duration
	last := time.Duration(0)
	for range 200 {
		fh.step(DefaultWatchInterval, "")
		fh.mu.Lock()
		if b := sink.ep.backoff; b != last {
			backoffs = append(backoffs, b)
			last = b
		}
		fh.mu.Unlock()
	}
	if fh.f.inits != inits+1 {
		t.Errorf("%d rescans while the device stayed away, want 1 (after the change)", fh.f.inits-inits)
	}
	want := []time.Duration{DefaultRetryMin, 2 * DefaultRetryMin, 4 * DefaultRetryMin, 8 * DefaultRetryMin, 16 * DefaultRetryMin, DefaultRetryMax}
	if len(backoffs) < len(want) || !slices.Equal(backoffs[:len(want)], want) {
		t.Errorf("backoff sequence %v, want it to start %v", backoffs, want)
	}
	if !src.Up() {
		t.Error("the healthy input did not survive the rescan")
	}
	if n := fh.log.count(slog.LevelWarn, "device lost"); n != 1 {
		t.Errorf("%d 'device lost' warnings for one outage, want 1", n)
	}

	// Replug as card 2.
	fh.f.plug(defaultDev(), usbDev(2))
	fh.step(DefaultRetryMax+DefaultWatchInterval, "")
	if !sink.Up() {
		t.Fatal("sink not back after the device returned as card 2")
	}
	if got := sink.Device(); got != usbDev(2).Name {
		t.Errorf("Device() = %q, want %q", got, usbDev(2).Name)
	}
	if n := fh.reg.Value("robot_agent_audio_output_reopened_total"); n != 1 {
		t.Errorf("reopened_total = %d, want 1", n)
	}
	if n := fh.log.count(slog.LevelInfo, "device back"); n != 1 {
		t.Errorf("%d 'device back' lines, want 1", n)
	}
	for _, s := range fh.f.live() {
		if strings.Contains(s.dev.Name, "hw:1,0") {
			t.Errorf("a stream on the old card is still open")
		}
	}
}

// While degraded, Write and Read keep time with the clock (so the player
// and the capture pump keep running), Read's silence is reported as lost
// (capture.LostReporter), and Close unblocks them.
func TestDegradedPacingAndClose(t *testing.T) {
	f := &fakeBackend{}
	f.plug()
	h, err := newHost(f, HostConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	sink, err := h.NewSink(SinkConfig{})
	if err != nil {
		t.Fatal(err)
	}
	src, err := h.NewSource(SourceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := sink.Write(make([]int16, 2400)); err != nil { // 100 ms
		t.Fatal(err)
	}
	buf := make([]int16, 1600) // 100 ms
	buf[0] = 1
	if n, err := src.Read(buf); err != nil || n != len(buf) || buf[0] != 0 {
		t.Fatalf("degraded Read = %d, %v, first sample %d; want %d samples of silence", n, err, buf[0], len(buf))
	}
	if !src.Lost() {
		t.Error("Lost() false after a degraded Read: the capture chain would take its silence for the room")
	}
	if el := time.Since(start); el < 190*time.Millisecond {
		t.Errorf("200 ms of degraded audio took %v", el)
	}
	errs := make(chan error, 2)
	go func() { errs <- sink.Write(make([]int16, 24000*5)) }()
	go func() { _, err := src.Read(make([]int16, 16000*5)); errs <- err }()
	time.Sleep(50 * time.Millisecond)
	sink.Close()
	src.Close()
	for range 2 {
		select {
		case err := <-errs:
			if !errors.Is(err, hw.ErrClosed) {
				t.Errorf("blocked call returned %v after Close, want hw.ErrClosed", err)
			}
		case <-time.After(time.Second):
			t.Fatal("Close did not unblock a degraded Write/Read")
		}
	}
}

// realTimeFakeHost runs a Host with its supervisor on the real clock over
// fake devices whose callbacks run every period.
func realTimeFakeHost(t *testing.T, devs ...Device) (*Host, *fakeBackend) {
	t.Helper()
	f := &fakeBackend{auto: true}
	f.plug(devs...)
	h, err := newHost(f, HostConfig{})
	if err != nil {
		t.Fatal(err)
	}
	h.wg.Add(1)
	go h.supervise()
	t.Cleanup(func() { h.Close() })
	return h, f
}

func TestSinkConformanceFake(t *testing.T) {
	h, _ := realTimeFakeHost(t, usbDev(1), defaultDev())
	hwtest.TestAudioSink(t, func() hw.AudioSink {
		s, err := h.NewSink(SinkConfig{DeviceConfig: DeviceConfig{Device: "USB"}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestSourceConformanceFake(t *testing.T) {
	h, _ := realTimeFakeHost(t, usbDev(1), defaultDev())
	hwtest.TestAudioSource(t, func() hw.AudioSource {
		s, err := h.NewSource(SourceConfig{DeviceConfig: DeviceConfig{Device: "USB"}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// The Sink converts 24 kHz mono to the device's 48 kHz stereo: both
// channels equal, the tone's frequency kept.
func TestSinkConvertsToDeviceFormat(t *testing.T) {
	h, f := realTimeFakeHost(t, usbDev(1))
	s, err := h.NewSink(SinkConfig{DeviceConfig: DeviceConfig{Device: "USB"}})
	if err != nil {
		t.Fatal(err)
	}
	tone := make([]int16, 24000/2)
	for i := range tone {
		tone[i] = int16(10000 * math.Sin(2*math.Pi*1000*float64(i)/24000))
	}
	if err := s.Write(tone); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	s.Close()
	r := f.streams[0].r
	r.mu.Lock()
	played := append([]int16(nil), r.played...)
	r.mu.Unlock()
	if f.streams[0].p.rate != 48000 || f.streams[0].p.channels != 2 {
		t.Fatalf("stream opened at %d Hz x %d, want the device's 48000 x 2", f.streams[0].p.rate, f.streams[0].p.channels)
	}
	var left []int16
	for i := 0; i+1 < len(played); i += 2 {
		if played[i] != played[i+1] {
			t.Fatalf("frame %d: left %d != right %d", i/2, played[i], played[i+1])
		}
		left = append(left, played[i])
	}
	// Count rising zero crossings over the loud part: 1 kHz at 48 kHz.
	first, last := -1, -1
	for i, v := range left {
		if v > 5000 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 || last-first < 20000 {
		t.Fatalf("loud part %d..%d of %d frames, want about 24000 frames", first, last, len(left))
	}
	cross := 0
	for i := first + 1; i <= last; i++ {
		if left[i-1] < 0 && left[i] >= 0 {
			cross++
		}
	}
	if hz := float64(cross) * 48000 / float64(last-first); math.Abs(hz-1000) > 10 {
		t.Errorf("played tone at %.1f Hz, want 1000", hz)
	}
}

// The Source converts the device's 48 kHz (mono here) to 16 kHz: a ramp of
// +1 per device frame becomes +3 per output sample.
func TestSourceConvertsFromDeviceFormat(t *testing.T) {
	h, _ := realTimeFakeHost(t, usbDev(1))
	s, err := h.NewSource(SourceConfig{DeviceConfig: DeviceConfig{Device: "USB"}})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]int16, 3200)
	for range 2 { // past the filter's start-up
		if _, err := s.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	slope := float64(int(buf[3199])-int(buf[200])) / float64(2999)
	if math.Abs(slope-3) > 0.01 {
		t.Errorf("ramp slope %.4f per sample at 16 kHz, want 3", slope)
	}
	if s.Lost() {
		t.Error("Lost() after a Read of the device's audio")
	}
}

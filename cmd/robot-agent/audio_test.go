package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/hw/portaudio"
	"github.com/robot-agent/robot-agent/metrics"
)

func decodeTestConfig(t *testing.T, y string) config.Config {
	t.Helper()
	c := config.Default()
	if err := config.Decode(strings.NewReader(y), &c, append(extraSections, audioDevicesSection)...); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLoadAudioDevices(t *testing.T) {
	noEnv := func(string) string { return "" }
	c, err := loadAudioDevices(config.Default(), noEnv)
	if err != nil || c != defaultAudioDevices() {
		t.Fatalf("no section: %+v, %v; want the defaults", c, err)
	}
	cfg := decodeTestConfig(t, `
audio_devices:
  input: "USB PnP Sound Device"
  output: "USB PnP Sound Device"
  output_rate: 48000
  half_duplex: mute
  half_duplex_tail_ms: 500
`)
	c, err = loadAudioDevices(cfg, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c.Input != "USB PnP Sound Device" || c.OutputRate != 48000 || c.HalfDuplex != halfDuplexMute || c.HalfDuplexTailMS != 500 || c.PeriodMS != 10 {
		t.Errorf("decoded %+v", c)
	}
	if p := c.Device(false).RealtimePriority; p != 20 {
		t.Errorf("default realtime priority %d, want 20", p)
	}
	if c, err := loadAudioDevices(decodeTestConfig(t, "audio_devices:\n  realtime_priority: 0\n"), noEnv); err != nil || c.Device(true).RealtimePriority != -1 {
		t.Errorf("realtime_priority 0: device priority %d, %v; want -1 (off)", c.Device(true).RealtimePriority, err)
	}
	env := map[string]string{"ROBOT_AGENT_AUDIO_OUTPUT": "hdmi", "ROBOT_AGENT_HALF_DUPLEX": "off"}
	c, err = loadAudioDevices(cfg, func(k string) string { return env[k] })
	if err != nil || c.Output != "hdmi" || c.HalfDuplex != halfDuplexOff || c.Input != "USB PnP Sound Device" {
		t.Errorf("with env: %+v, %v", c, err)
	}

	for _, tc := range []struct{ yaml, want string }{
		{"audio_devices:\n  inptu: x\n", "audio_devices.inptu: unknown key (did you mean input?; line 2)"},
		{"audio_devices:\n  half_duplex: sometimes\n", `audio_devices.half_duplex: "sometimes": want gate, mute or off`},
		{"audio_devices:\n  output_rate: 7\n", "audio_devices.output_rate: 7:"},
		{"audio_devices:\n  period_ms: 0\n", "audio_devices.period_ms: 0:"},
		{"audio_devices:\n  output_buffer_ms: 1\n", "audio_devices.output_buffer_ms: 1:"},
		{"audio_devices: [1, 2]\n", "want a mapping"},
		{"audio_devices:\n  realtime_priority: 120\n", "audio_devices.realtime_priority: 120:"},
	} {
		_, err := loadAudioDevices(decodeTestConfig(t, tc.yaml), noEnv)
		if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want config.ErrInvalid mentioning %q", tc.yaml, err, tc.want)
		}
	}
}

type fixedLatency time.Duration

func (l fixedLatency) Latency() time.Duration { return time.Duration(l) }

// The gate closes on the first audible block written and opens only after
// that audio has been played out (block + output latency) plus the tail.
func TestSpeechTapGate(t *testing.T) {
	clk := clock.NewFake()
	tap := newSpeechTap(clk, fixedLatency(80*time.Millisecond), 24000, 300*time.Millisecond)
	if tap.Gated() {
		t.Fatal("gated before anything was played")
	}
	tap.observe(make([]int16, 240)) // silence
	if tap.Gated() {
		t.Fatal("gated by silence")
	}
	loud := make([]int16, 240) // 10 ms
	loud[100] = 3000
	tap.observe(loud)
	for _, tc := range []struct {
		at    time.Duration
		gated bool
	}{
		{0, true},
		{200 * time.Millisecond, true},
		{389 * time.Millisecond, true}, // 10 ms block + 80 ms latency + 300 ms tail
		{391 * time.Millisecond, false},
	} {
		clk.Advance(tc.at - clk.Mono())
		if got := tap.Gated(); got != tc.gated {
			t.Errorf("%v after the block: Gated = %v, want %v", tc.at, got, tc.gated)
		}
	}
	tap.observe(loud) // speech again
	if !tap.Gated() {
		t.Error("not gated while speaking again")
	}
}

// flushSink is a speaker with a flushable queue (hw.Flusher).
type flushSink struct{ hw.AudioSink }

func (flushSink) Flush() int { return 0 }

type tapped struct {
	hw.AudioSink
	tap  *speechTap
	mode string
}

func (t tapped) speechTap() *speechTap  { return t.tap }
func (t tapped) halfDuplexMode() string { return t.mode }

func TestHalfDuplexGateFindsTheTap(t *testing.T) {
	tap := newSpeechTap(clock.NewFake(), nil, 24000, 0)
	for _, tc := range []struct {
		name string
		spk  hw.AudioSink
		gate bool
	}{
		{"no tap", flushSink{}, false},
		{"tapped", tapped{tap: tap, mode: halfDuplexGate}, true},
		{"mode off", tapped{tap: tap, mode: halfDuplexOff}, false},
		{"behind the watchdog wrapper", beatingSink{tapped{tap: tap, mode: halfDuplexGate}, func() {}}, true},
	} {
		a := &agent{speaker: tc.spk}
		if g := a.halfDuplexGate(); (g != nil) != tc.gate {
			t.Errorf("%s: gate %v, want one: %v", tc.name, g, tc.gate)
		}
	}
}

func TestWithoutPortAudio(t *testing.T) {
	if portaudio.BuiltIn {
		t.Skip("this binary has PortAudio")
	}
	_, _, err := openRealAudio(config.Default(), quietLog())
	if !errors.Is(err, hw.ErrNotBuiltIn) || !strings.Contains(err.Error(), "--sim") {
		t.Errorf("openRealAudio = %v, want hw.ErrNotBuiltIn with a hint", err)
	}
	var out, errb bytes.Buffer
	if code := cmdDevices(nil, &out, &errb); code != exitDevice || !strings.Contains(errb.String(), "portaudio") {
		t.Errorf("devices: exit %d, stderr %q", code, errb.String())
	}
}

func TestSummaryDeviceTiming(t *testing.T) {
	reg := metrics.NewRegistry()
	var b strings.Builder
	writeDeviceTiming(&b, reg)
	if b.Len() != 0 {
		t.Fatalf("no device streams: summary %q, want nothing", b.String())
	}
	h := reg.Histogram("robot_agent_audio_output_callback_lateness_seconds", "", portaudio.TimingBuckets)
	for range 98 {
		h.Observe(0.00004)
	}
	h.Observe(0.0015)
	h.Observe(0.3)
	reg.Gauge("robot_agent_audio_output_callback_lateness_max_microseconds", "").Set(3000)
	reg.Counter("robot_agent_audio_output_device_underflows_total", "").Add(2)
	reg.Counter("robot_agent_audio_output_underruns_total", "").Add(5)
	reg.Gauge("robot_agent_audio_output_device_delay_microseconds", "").Set(31000)
	writeDeviceTiming(&b, reg)
	want := "  device:    output 100 callbacks, lateness p50 <= 50µs p99 <= 2ms max 3ms; device underflows 2, overflows 0; ring ran dry 5; device delay 31ms\n"
	if b.String() != want {
		t.Errorf("summary\n%q\nwant\n%q", b.String(), want)
	}
	for range 10 {
		h.Observe(0.3) // beyond the last bucket
	}
	b.Reset()
	writeDeviceTiming(&b, reg)
	want = "  device:    output 110 callbacks, lateness p50 <= 50µs p99 > 100ms max 3ms; device underflows 2, overflows 0; ring ran dry 5; device delay 31ms\n"
	if b.String() != want {
		t.Errorf("summary\n%q\nwant\n%q", b.String(), want)
	}
}

package portaudio

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/config/field"
)

// TestConfigValidate: every bad option is reported at once, named by its
// YAML key, in the configuration's "key: value: problem" form.
func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	c := DefaultConfig()
	c.InputRate, c.OutputChannels, c.PeriodMS, c.LatencyMS = 7, 9, 0, 2000
	c.OutputBufferMS, c.RetryMaxMS, c.RealtimePriority = 1, 100, 120
	want := []string{
		"input_rate: 7: want 0 (device default) or 8000..384000",
		"output_channels: 9: want 0 (automatic) or 1..8",
		"period_ms: 0: want 1..100",
		"latency_ms: 2000: want 0 (device default) or up to 1000",
		"output_buffer_ms: 1: want 5..2000",
		"retry_max_ms: 100: want 250..60000",
		"realtime_priority: 120: want 0 (normal scheduling) or 1..99 (SCHED_FIFO)",
	}
	err := c.Validate()
	if !errors.Is(err, field.ErrInvalid) || err.Error() != strings.Join(want, "\n") {
		t.Errorf("Validate() =\n%v\nwant\n%s", err, strings.Join(want, "\n"))
	}
}

// TestConfigMapsToDriverOptions: a valid Config gives device, sink and
// host options the driver accepts, for the input and the output.
func TestConfigMapsToDriverOptions(t *testing.T) {
	for _, c := range []Config{
		DefaultConfig(),
		{Input: "USB", Output: "hdmi", InputRate: 8000, OutputRate: 384000, InputChannels: 8, OutputChannels: 1,
			PeriodMS: 100, LatencyMS: 1000, OutputBufferMS: 2000, RetryMaxMS: 60000, RealtimePriority: 99},
		{PeriodMS: 1, OutputBufferMS: 5, RetryMaxMS: 250},
	} {
		if err := c.Validate(); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		in, out := c.Device(false), c.Device(true)
		if err := in.validate("input"); err != nil {
			t.Errorf("%+v: input %v", c, err)
		}
		sink := c.Sink(4)
		if err := sink.defaults(); err != nil {
			t.Errorf("%+v: sink %v", c, err)
		}
		src := c.Source()
		if err := src.defaults(); err != nil {
			t.Errorf("%+v: source %v", c, err)
		}
		if in.Device != c.Input || out.Device != c.Output || in.SampleRate != c.InputRate || out.Channels != c.OutputChannels ||
			out.Latency != time.Duration(c.LatencyMS)*time.Millisecond || sink.BufferMS != c.OutputBufferMS || c.RetryMax() != time.Duration(c.RetryMaxMS)*time.Millisecond {
			t.Errorf("%+v mapped to input %+v, output %+v, sink %+v", c, in, out, sink)
		}
		// realtime_priority 0 is normal scheduling: the driver's -1.
		if want := map[bool]int{true: -1, false: c.RealtimePriority}[c.RealtimePriority == 0]; out.RealtimePriority != want {
			t.Errorf("realtime_priority %d mapped to %d, want %d", c.RealtimePriority, out.RealtimePriority, want)
		}
	}
}

package main

import (
	"errors"
	"regexp"
	"testing"

	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/config/field"
)

// TestValidateConfigReportsEveryError: a config with several problems in
// each of the state, skills, identity, duplex, audio_codec and support
// sections
// gets every one of them reported at once (not the first of each
// section), each as a *field.Error "yaml.path: value: problem (hint)".
func TestValidateConfigReportsEveryError(t *testing.T) {
	const y = `
state:
  gpio:
    enabled: true
    inputs:
      button: {pin: GPIO27, pull: sideways, debounce: 2s}
    outputs:
      led: {pin: GPIO27, safe: middle}
  imu: {enabled: true, sample_hz: 5000, model: bno055}
  battery: {poll: 1ms}
  thermal: {zones: [""]}
skills:
  allow: [gpio.fly, gpio.set, gpio.set]
  pins: [GPIO17]
  burst: -1
  function_calls: {on_timeout: panic, max_pending: 20000}
identity:
  http: 0.0.0.0:8765
  min_confidence: 2
  max_line: 10
duplex:
  aec: magic
  double_talk_db: 99
  sim_echo: loud
  sim_room: {delay_ms: 5000}
audio_codec:
  opus: maybe
  bitrate: 1000
  gateway: aac
support:
  audio_seconds: 0
  control_messages: 0
  keep_bundles: 0
`
	want := []struct{ section, line string }{
		{"state", `state.gpio.inputs.button.pull: "sideways": want up, down or none`},
		{"state", `state.gpio.inputs.button.debounce: 2s: want 0 < debounce <= 1s`},
		{"state", `state.gpio.outputs.led.pin: "GPIO27": already used by state.gpio.inputs.button (one pin per input or output)`},
		{"state", `state.gpio.outputs.led.safe: "middle": want low or high`},
		{"state", `state.imu.model: "bno055": want auto, mpu6050, mpu6500 or mpu9250`},
		{"state", `state.imu.sample_hz: 5000: want 1..1000`},
		{"state", `state.battery.poll: 1ms: want 100ms..10m`},
		{"state", `state.thermal.zones[0]: "": must not be empty (a zone type such as cpu-thermal)`},
		{"skills", `skills.allow[0]: "gpio.fly": want one of gpio.set, gpio.blink, audio.volume`},
		{"skills", `skills.allow[2]: "gpio.set": listed twice`},
		{"skills", `skills.pins[0]: "GPIO17": want an output name from state.gpio.outputs (a logical name such as led_eyes, not a pin number)`},
		{"skills", `skills.burst: -1: want 1..1000`},
		{"skills", `skills.function_calls.on_timeout: "panic": want delegate or drop`},
		{"skills", `skills.function_calls.max_pending: 20000: want 1..10000`},
		{"identity", `identity.min_confidence: 2: want 0..1`},
		{"identity", `identity.max_line: 10: want 64..65536`},
		{"identity", `identity.http: "0.0.0.0:8765": the recogniser endpoint must listen on loopback (use 127.0.0.1, ::1 or localhost)`},
		{"duplex", `duplex.aec: "magic": want auto, none, webrtc, speex (set by duplex.aec or $ROBOT_AGENT_AEC)`},
		{"duplex", `duplex.double_talk_db: 99: want 0..60`},
		{"duplex", `duplex.sim_echo: "loud": want moderate or none`},
		{"duplex", `duplex.sim_room.delay_ms: 5000: out of range 0..1000`},
		{"audio_codec", `audio_codec.opus: "maybe": want auto, on or off`},
		{"audio_codec", `audio_codec.bitrate: 1000: want 6000..128000 (bit/s)`},
		{"audio_codec", `audio_codec.gateway: "aac": want pcm or opus`},
		{"support", `support.audio_seconds: 0: want 1..600`},
		{"support", `support.control_messages: 0: want 1..100000`},
		{"support", `support.keep_bundles: 0: want 1..1000`},
	}
	err := validateConfig(decodeTestConfig(t, y), true, func(string) string { return "" })
	if !errors.Is(err, config.ErrInvalid) {
		t.Fatalf("validateConfig = %v, want config.ErrInvalid", err)
	}
	got := map[string]bool{}
	form := regexp.MustCompile(`^[a-z_]+(\.[a-z_]+|\[\d+\])*: .+`)
	for _, e := range field.All(err) {
		var fe *field.Error
		if !errors.As(e, &fe) {
			t.Errorf("%q is not a *field.Error", e)
		}
		if !form.MatchString(e.Error()) {
			t.Errorf("%q is not in the yaml.path: value: problem form", e)
		}
		got[e.Error()] = true
	}
	perSection := map[string]int{}
	for _, w := range want {
		if !got[w.line] {
			t.Errorf("not reported: %s", w.line)
		}
		perSection[w.section]++
	}
	if len(got) != len(want) {
		t.Errorf("%d problems reported, want %d:\n%v", len(got), len(want), err)
	}
	for s, n := range perSection {
		if n < 3 {
			t.Errorf("section %s: only %d problems in the test; several are needed to show none stops at the first", s, n)
		}
	}
}

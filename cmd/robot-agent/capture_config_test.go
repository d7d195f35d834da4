package main

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/config"
)

// TestValidateAudio: the audio section is validated with capture's rules,
// every problem at once, named by its YAML path; run and doctor see them
// through validateConfig.
func TestValidateAudio(t *testing.T) {
	cases := []struct {
		mod  func(*config.Config)
		want []string
	}{
		{func(c *config.Config) { c.Audio.FrameMS = 15 }, []string{"audio.frame_ms: 15: want 10, 20, 40 or 60"}},
		{func(c *config.Config) { c.Audio.Mode = "push-to-talk" }, []string{`audio.mode: "push-to-talk": want continuous or vad`}},
		{func(c *config.Config) { c.Audio.VAD.PreRollMS = 9000 }, []string{"audio.vad.preroll_ms: 9000: out of range 0..2000"}},
		{func(c *config.Config) { c.Audio.MicQueueMS = 5 }, []string{"audio.mic_queue_ms: 5: want between one frame and 60000"}},
		{func(c *config.Config) {
			c.Audio.Mode, c.Audio.VAD.Detector, c.Audio.MicQueueMS = "ptt", "magic", 90000
		}, []string{`audio.mode: "ptt": want continuous or vad`, `audio.vad.detector: "magic": want auto or one of`, "audio.mic_queue_ms: 90000: want between one frame and 60000"}},
	}
	for _, tc := range cases {
		c := config.Default()
		c.Gateway.URL = "wss://gw.example.com/v1/robot"
		tc.mod(&c)
		err := validateConfig(c, false, func(string) string { return "" })
		if !errors.Is(err, config.ErrInvalid) {
			t.Errorf("validateConfig = %v, want config.ErrInvalid", err)
			continue
		}
		lines := strings.Split(err.Error(), "\n")
		if len(lines) != len(tc.want) {
			t.Errorf("got %d problems, want %d:\n%v", len(lines), len(tc.want), err)
		}
		for _, w := range tc.want {
			if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, w) }) {
				t.Errorf("no line %q in\n%v", w, err)
			}
		}
	}
	if err := validateAudio(config.Default().Audio); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// TestAudioDefaultsFromCapture: unset audio settings take capture's
// defaults in the agent; the agent's own default mode (vad) and set
// values are kept.
func TestAudioDefaultsFromCapture(t *testing.T) {
	c := withAudioDefaults(config.Default())
	a := c.Audio
	if a.FrameMS != capture.DefaultFrameMS || a.Mode != capture.ModeVAD || a.VAD.HangoverMS != capture.DefaultHangoverMS ||
		a.VAD.StartDB != capture.DefaultStartDB || a.MicQueueMS != 2000 {
		t.Errorf("defaults %+v", a)
	}
	in := config.Default()
	in.Audio.FrameMS, in.Audio.VAD.PreRollMS = 40, 120
	if got := captureConfig(in.Audio); got.FrameMS != 40 || got.VAD.PreRollMS != 120 || got.VAD.MinSpeechMS != capture.DefaultMinSpeechMS {
		t.Errorf("captureConfig %+v", got)
	}
}

// TestAudioSchemaMatchesCapture: config's schema of the audio section has
// exactly capture.Config's YAML keys and types, so that no setting of the
// pump is missing from (or invented by) the configuration file.
func TestAudioSchemaMatchesCapture(t *testing.T) {
	want := yamlKeys(reflect.TypeFor[capture.Config](), "")
	got := yamlKeys(reflect.TypeFor[config.Mic](), "")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("config.Mic keys\n%v\nwant capture.Config's\n%v", got, want)
	}
	if len(want) < 10 {
		t.Fatalf("only %d keys found in capture.Config", len(want))
	}
}

// yamlKeys lists a struct's YAML keys (nested ones as a.b) with their kinds.
func yamlKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if f.Type.Kind() == reflect.Struct {
			keys = append(keys, yamlKeys(f.Type, prefix+name+".")...)
			continue
		}
		keys = append(keys, prefix+name+" "+f.Type.Kind().String())
	}
	slices.Sort(keys)
	return keys
}

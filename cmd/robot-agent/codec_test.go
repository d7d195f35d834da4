package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/robot-agent/robot-agent/config"
)

func TestLoadAudioCodec(t *testing.T) {
	tests := []struct {
		yaml string
		want string // error text, "" for valid
	}{
		{"", ""},
		{"audio_codec:\n  opus: off\n  bitrate: 24000\n  dtx: true\n  down: false\n", ""},
		{"audio_codec:\n  opus: maybe\n", `audio_codec.opus: "maybe": want auto, on or off`},
		{"audio_codec:\n  bitrate: 1000\n", "audio_codec.bitrate: 1000: want 6000..128000 (bit/s)"},
		{"audio_codec:\n  gateway: aac\n", `audio_codec.gateway: "aac": want pcm or opus`},
		{"audio_codec:\n  bitrat: 1\n", `audio_codec.bitrat: unknown key (did you mean bitrate?; line 2)`},
		{"audio_codec: 3\n", "audio_codec: 3: want a mapping (key: value lines), got a single value (line 1)"},
	}
	for _, tt := range tests {
		var cfg config.Config
		if err := config.Decode(strings.NewReader(tt.yaml), &cfg, extraSections...); err != nil {
			t.Fatalf("%q: %v", tt.yaml, err)
		}
		c, err := loadAudioCodec(cfg)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tt.yaml, err)
			}
			continue
		}
		if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want one naming %q", tt.yaml, err, tt.want)
		}
		_ = c
	}
	// Defaults: Opus offered when built in, 16 kbit/s, TTS too, the
	// embedded gateway stays PCM.
	c, _ := loadAudioCodec(config.Config{Extra: map[string]yaml.Node{}})
	if c.Opus != opusAuto || c.Bitrate != 16000 || !c.Down || c.DTX || c.Gateway != "pcm" {
		t.Errorf("defaults %+v", c)
	}
}

// TestRunRejectsBadAudioCodec: a bad audio_codec value stops run with one
// line naming it.
func TestRunRejectsBadAudioCodec(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte("audio_codec:\n  bitrate: 999999\n"), 0o644)
	code, _, errs := runCLI("run", "--sim", "--duration", "1s", "--config", path)
	if code != 2 || !strings.Contains(errs, "audio_codec.bitrate: 999999: want 6000..128000") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Fatalf("exit %d, stderr %q; want 2 (configuration) and one line naming audio_codec.bitrate", code, errs)
	}
}

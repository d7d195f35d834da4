package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultIsValid(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
}

func TestDecodeOverridesDefaults(t *testing.T) {
	c := Default()
	y := `
device:
  id: robo-7
gateway:
  url: wss://gw.example.com/v1/robot
audio:
  mode: continuous
  frame_ms: 40
  vad:
    preroll_ms: 200
playback:
  prebuffer_ms: 80
state:
  anything: goes here
`
	if err := Decode(strings.NewReader(y), &c, "state"); err != nil {
		t.Fatal(err)
	}
	if c.Device.ID != "robo-7" || c.Audio.Mode != "continuous" || c.Audio.FrameMS != 40 || c.Audio.VAD.PreRollMS != 200 || c.Playback.PrebufferMS != 80 {
		t.Fatalf("decoded %+v", c)
	}
	if c.Audio.VAD.HangoverMS != 600 || c.Playback.FadeMS != 4 {
		t.Fatal("unset fields lost their defaults")
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeRejectsUnknownKeys(t *testing.T) {
	cases := map[string]string{
		"top level": "devise:\n  id: x\n",
		"nested":    "audio:\n  frame_mss: 20\n",
	}
	for name, y := range cases {
		c := Default()
		err := Decode(strings.NewReader(y), &c, "state")
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("%s: err = %v, want ErrInvalid", name, err)
		}
		if !strings.Contains(err.Error(), "line ") {
			t.Fatalf("%s: error %q does not give the line", name, err)
		}
	}
}

func TestValidateNamesFieldAndValue(t *testing.T) {
	cases := []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Device.ID = "" }, "device.id"},
		{func(c *Config) { c.Device.ID = "a b" }, `device.id = "a b"`},
		{func(c *Config) { c.Gateway.URL = "http://x/v1/robot" }, `gateway.url = "http://x/v1/robot"`},
		{func(c *Config) { c.Gateway.URL = "wss://x/v1/robot?token=secret" }, "gateway.url = (redacted)"},
		{func(c *Config) { c.Gateway.TTSMode = "opus" }, `gateway.tts_mode = "opus"`},
		{func(c *Config) { c.Audio.FrameMS = 15 }, "frame_ms 15"},
		{func(c *Config) { c.Audio.Mode = "push-to-talk" }, `mode "push-to-talk"`},
		{func(c *Config) { c.Audio.MicQueueMS = 5 }, "audio.mic_queue_ms = 5"},
		{func(c *Config) { c.Playback.PrebufferMS = 5000 }, "playback.prebuffer_ms = 5000"},
		{func(c *Config) { c.Playback.PeriodMS = 0 }, "playback.period_ms = 0"},
		{func(c *Config) { c.Log.Level = "loud" }, `log.level = "loud"`},
	}
	for _, tc := range cases {
		c := Default()
		tc.mod(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error leaks the token: %v", err)
		}
	}
}

func TestEnvAndToken(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "tok")
	os.WriteFile(tok, []byte("  s3cret\n"), 0o600)
	env := map[string]string{"ROBOT_AGENT_DEVICE_ID": "env-bot", "ROBOT_AGENT_TOKEN_FILE": tok}
	c := Default()
	c.ApplyEnv(func(k string) string { return env[k] })
	if c.Device.ID != "env-bot" {
		t.Fatal("env did not override device.id")
	}
	if err := c.LoadToken(func(k string) string { return env[k] }, true); err != nil || c.Gateway.Token != "s3cret" {
		t.Fatalf("token %q err %v", c.Gateway.Token, err)
	}
	// systemd credentials directory.
	os.WriteFile(filepath.Join(dir, "gateway-token"), []byte("cred"), 0o600)
	c = Default()
	if err := c.LoadToken(func(k string) string { return map[string]string{"CREDENTIALS_DIRECTORY": dir}[k] }, true); err != nil || c.Gateway.Token != "cred" {
		t.Fatalf("credentials token %q err %v", c.Gateway.Token, err)
	}
	c = Default()
	err := c.LoadToken(func(string) string { return "" }, true)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "gateway.token_file") {
		t.Fatalf("missing token: %v", err)
	}
	c = Default()
	c.Gateway.TokenFile = filepath.Join(dir, "empty")
	os.WriteFile(c.Gateway.TokenFile, nil, 0o600)
	if err := c.LoadToken(func(string) string { return "" }, true); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Fatalf("empty token file: %v", err)
	}
}

// FuzzDecode: any YAML input gives a config or an error wrapping
// ErrInvalid, never a panic.
func FuzzDecode(f *testing.F) {
	f.Add("device:\n  id: x\n")
	f.Add("audio:\n  frame_ms: [1, 2]\n")
	f.Add("audio: {vad: {preroll_ms: 99999999999999999999}}")
	f.Add("gateway: !!binary AAAA")
	f.Add("\xff\xfe")
	f.Add("&a [*a]")
	f.Add("state: {x: 1}\nunknown: 2\n")
	f.Fuzz(func(t *testing.T, y string) {
		c := Default()
		if err := Decode(strings.NewReader(y), &c, "state"); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		_ = c.Validate()
	})
}

func TestSpoolSection(t *testing.T) {
	for _, tc := range []struct {
		yaml, err string
		memory    bool
	}{
		{"", "", true},
		{"spool:\n  path: memory\n", "", true},
		{"spool:\n  path: /var/lib/robot-agent/spool\n  max_mb: 16\n", "", false},
		{"spool:\n  path: relative/dir\n", `spool.path = "relative/dir"`, false},
		{"spool:\n  max_mb: 0\n", "spool.max_mb = 0", true},
		{"spool:\n  pathh: /x\n", "pathh", true},
	} {
		c := Default()
		err := Decode(strings.NewReader(tc.yaml), &c)
		if err == nil {
			err = c.Validate()
		}
		if tc.err == "" && err != nil {
			t.Errorf("%q: %v", tc.yaml, err)
			continue
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%q: error %v, want one naming %s", tc.yaml, err, tc.err)
			continue
		}
		if err == nil && c.Spool.Memory() != tc.memory {
			t.Errorf("%q: memory %v", tc.yaml, c.Spool.Memory())
		}
	}
}

package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
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
	// Unset capture settings stay zero (capture's defaults, applied where
	// cmd/robot-agent maps the section); config's own keep theirs.
	if c.Audio.VAD.HangoverMS != 0 || c.Playback.FadeMS != 4 || c.Audio.MicQueueMS != 2000 {
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

// TestValidateNamesFieldAndValue: each problem is one line
// "yaml.path: value: problem (hint)".
func TestValidateNamesFieldAndValue(t *testing.T) {
	cases := []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Device.ID = "" }, `device.id: "": must not be empty (set it or leave it out for the hostname)`},
		{func(c *Config) { c.Device.ID = "a b" }, `device.id: "a b": must not contain spaces or '/'`},
		{func(c *Config) { c.Gateway.URL = "http://x/v1/robot" }, `gateway.url: "http://x/v1/robot": scheme must be wss (or ws to a loopback host)`},
		{func(c *Config) { c.Gateway.URL = "wss://x/v1/robot?token=secret" }, "gateway.url: (redacted): must not carry credentials or a query (put the token in gateway.token_file)"},
		{func(c *Config) { c.Gateway.URL = "ws://192.168.1.5:8765/v1/robot" }, `gateway.url: "ws://192.168.1.5:8765/v1/robot": plain ws:// to a non-loopback host sends audio and the token in clear text (use wss://, or set gateway.allow_insecure_ws: true for a LAN development gateway)`},
		{func(c *Config) {
			c.Gateway.URL, c.Gateway.AllowInsecureWS, c.Gateway.TLS.CAFile = "ws://gw.lan/v1/robot", true, "ca.pem"
		}, "gateway.tls: set but gateway.url is plain ws:// (use a wss:// URL or remove gateway.tls)"},
		{func(c *Config) { c.Gateway.TLS.CertFile = "robot.pem" }, `gateway.tls.cert_file: "robot.pem": cert_file and key_file go together (set both for mutual TLS, or neither)`},
		{func(c *Config) { c.Gateway.TTSMode = "opus" }, `gateway.tts_mode: "opus": want binary or base64`},
		{func(c *Config) { c.Playback.PrebufferMS = 5000 }, "playback.prebuffer_ms: 5000: want 0..2000"},
		{func(c *Config) { c.Playback.PeriodMS = 0 }, "playback.period_ms: 0: want 2..100"},
		{func(c *Config) { c.Playback.MinDelayMS = 2500 }, "playback.min_delay_ms: 2500: want 0..2000"},
		{func(c *Config) { c.Playback.ConcealPct = 0 }, "playback.conceal_pct: 0: want 0.01..10 (percent of the output)"},
		{func(c *Config) { c.Playback.ConcealPct = math.NaN() }, "playback.conceal_pct: NaN: want 0.01..10 (percent of the output)"},
		{func(c *Config) { c.Playback.VolumeDB = 6 }, "playback.volume_db: 6: want -60..0 (dB; 0 = the voice as sent) (for a louder robot turn its amplifier up)"},
		{func(c *Config) { c.Playback.VolumeDB = -70 }, "playback.volume_db: -70: want -60..0 (dB; 0 = the voice as sent)"},
		{func(c *Config) { c.Metrics.Listen = "9464" }, `metrics.listen: "9464": not host:port (e.g. 127.0.0.1:9464, or off to disable)`},
		{func(c *Config) { c.Log.Level = "loud" }, `log.level: "loud": want debug, info, warn or error`},
	}
	for _, tc := range cases {
		c := Default()
		tc.mod(&c)
		err := c.Validate()
		if !errors.Is(err, ErrInvalid) || !slices.Contains(strings.Split(err.Error(), "\n"), tc.want) {
			t.Errorf("Validate() = %v\nwant a line %q", err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error leaks the token: %v", err)
		}
	}
}

// TestInsecureWSOptIn: plain ws:// is allowed to loopback, and to another
// host only with gateway.allow_insecure_ws.
func TestInsecureWSOptIn(t *testing.T) {
	for _, tc := range []struct {
		url   string
		allow bool
		ok    bool
	}{
		{"ws://127.0.0.1:8765/v1/robot", false, true},
		{"ws://[::1]:8765/v1/robot", false, true},
		{"ws://localhost/v1/robot", false, true},
		{"ws://127.0.0.1.evil.example/v1/robot", false, false},
		{"ws://192.168.1.5:8765/v1/robot", false, false},
		{"ws://192.168.1.5:8765/v1/robot", true, true},
		{"wss://gw.example.com/v1/robot", false, true},
	} {
		c := Default()
		c.Gateway.URL, c.Gateway.AllowInsecureWS = tc.url, tc.allow
		if err := c.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s allow_insecure_ws=%v: Validate() = %v, want ok=%v", tc.url, tc.allow, err, tc.ok)
		}
	}
}

// TestDecodeProblems: type errors name their field, every problem is
// reported at once, unknown keys get suggestions, quoted numbers are
// accepted.
func TestDecodeProblems(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string // lines of the error; nil: no error
	}{
		{"word for a number", "audio:\n  frame_ms: twenty\n", []string{`audio.frame_ms: "twenty": want a whole number (line 2)`}},
		{"quoted number", "audio:\n  frame_ms: \"40\"\n  vad:\n    start_db: '15.5'\n", nil},
		{"quoted bool", "gateway:\n  allow_insecure_ws: \"true\"\n", nil},
		{"float for int", "playback:\n  fade_ms: 2.5\n", []string{`playback.fade_ms: 2.5: want a whole number (line 2)`}},
		{"bool", "gateway:\n  allow_insecure_ws: maybe\n", []string{`gateway.allow_insecure_ws: "maybe": want true or false (line 2)`}},
		{"list for a number", "audio:\n  frame_ms: [1, 2]\n", []string{`audio.frame_ms: want a whole number, got a list (line 2)`}},
		{"scalar for a section", "gateway: wss://x\n", []string{`gateway: "wss://x": want a mapping (key: value lines), got a single value (line 1)`}},
		{"typo", "gateway:\n  tokenfile: /x\n", []string{`gateway.tokenfile: unknown key (did you mean token_file?; line 2)`}},
		{"typo top", "devise:\n  id: x\n", []string{`devise: unknown key (did you mean device?; line 1)`}},
		{"typo nested", "audio:\n  vad:\n    prerol_ms: 10\n", []string{`audio.vad.prerol_ms: unknown key (did you mean preroll_ms?; line 3)`}},
		{"no suggestion", "gateway:\n  zzzzzz: 1\n", []string{`gateway.zzzzzz: unknown key (known keys: allow_insecure_ws, speed, tls, token_file, tts_mode, url; line 2)`}},
		{"all at once", "audio:\n  frame_ms: twenty\n  mode: vad\ngateway:\n  urll: x\nplayback:\n  fade_ms: lots\n", []string{
			`audio.frame_ms: "twenty": want a whole number (line 2)`,
			`gateway.urll: unknown key (did you mean url?; line 5)`,
			`playback.fade_ms: "lots": want a whole number (line 7)`}},
		{"extra section accepted", "state:\n  anything: 1\n", nil},
		{"syntax", "audio: [\n", []string{"(file): not valid YAML: line 1: did not find expected node content"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			err := Decode(strings.NewReader(tc.yaml), &c, "state")
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Decode = %v, want ErrInvalid", err)
			}
			if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, tc.want) {
				t.Fatalf("Decode error lines\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
	c := Default()
	if err := Decode(strings.NewReader("audio:\n  frame_ms: \"40\"\n  vad:\n    start_db: '15.5'\ngateway:\n  allow_insecure_ws: \"true\"\n"), &c); err != nil ||
		c.Audio.FrameMS != 40 || c.Audio.VAD.StartDB != 15.5 || !c.Gateway.AllowInsecureWS {
		t.Fatalf("quoted values: %v %+v", err, c)
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte("audio:\n  frame_ms: twenty\nlog:\n  levl: debug\n"), 0o644)
	_, err := Load(p)
	want := []string{p + `: audio.frame_ms: "twenty": want a whole number (line 2)`, p + ": log.levl: unknown key (did you mean level?; line 4)"}
	if got := strings.Split(fmt.Sprint(err), "\n"); !slices.Equal(got, want) {
		t.Fatalf("Load error lines %q, want %q", got, want)
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
	// The package's empty placeholder credential: no token when the token
	// is optional, an error when it is required.
	os.WriteFile(filepath.Join(dir, "gateway-token"), []byte("\n"), 0o600)
	creds := func(k string) string { return map[string]string{"CREDENTIALS_DIRECTORY": dir}[k] }
	c = Default()
	if err := c.LoadToken(creds, false); err != nil || c.Gateway.Token != "" {
		t.Fatalf("empty credential, token optional: token %q err %v, want no token", c.Gateway.Token, err)
	}
	c = Default()
	if err := c.LoadToken(creds, true); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Fatalf("empty credential, token required: %v", err)
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
	f.Add("audio: {frame_ms: \"20\", vad: {start_db: '3'}}\ngateway: {allow_insecure_ws: 'true'}")
	f.Add("a: &a [1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b]\naudio: {vad: [*c,*c,*c,*c,*c,*c,*c,*c]}")
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
		{"spool:\n  path: relative/dir\n", `spool.path: "relative/dir": must be an absolute directory`, false},
		{"spool:\n  max_mb: 0\n", "spool.max_mb: 0:", true},
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

package skills

import (
	"fmt"
	"math"
	"regexp"
	"time"

	"github.com/robot-agent/robot-agent/config/field"
	"github.com/robot-agent/robot-agent/protocol"
)

// Built-in skills the gateway may call (when allowed in Config.Allow).
const (
	// SkillSet drives an output: {"pin": "led_eyes", "on": true}.
	SkillSet = "gpio.set"
	// SkillBlink blinks an output and leaves it off:
	// {"pin": "led_eyes", "times": 3, "period_ms": 400}.
	SkillBlink = "gpio.blink"
	// SkillVolume sets the robot's own volume (above the echo canceller's
	// reference): {"level_db": -12} or {"change_db": 6}.
	SkillVolume = "audio.volume"
)

var knownSkills = map[string]bool{SkillSet: true, SkillBlink: true, SkillVolume: true}

// Config configures the safety arbiter; the agent config embeds it under
// "skills". Zero values mean the defaults.
type Config struct {
	// Allow lists the skills the gateway may call. Empty: none.
	Allow []string `yaml:"allow"`
	// Pins lists the outputs (logical names from state.gpio.outputs) skills
	// may drive. Empty: none.
	Pins []string `yaml:"pins"`
	// RatePerSec and Burst limit calls per skill (defaults 5 and 5).
	RatePerSec float64 `yaml:"rate_per_sec"`
	Burst      int     `yaml:"burst"`
	// Blink bounds gpio.blink's arguments.
	Blink BlinkLimits `yaml:"blink"`
	// Volume bounds audio.volume.
	Volume VolumeLimits `yaml:"volume"`
	// FunctionCalls configures function calls the robot raises.
	FunctionCalls FunctionCallConfig `yaml:"function_calls"`
}

// BlinkLimits bounds gpio.blink.
type BlinkLimits struct {
	MaxTimes  int           `yaml:"max_times"`  // default 20
	MinPeriod time.Duration `yaml:"min_period"` // default 100ms
	MaxPeriod time.Duration `yaml:"max_period"` // default 5s
}

// VolumeLimits bounds audio.volume.
type VolumeLimits struct {
	// MinDB is the quietest level the gateway may set (default -40; -60..0).
	// 0 dB is the voice as sent: the control only attenuates.
	MinDB float64 `yaml:"min_db"`
}

// FunctionCallConfig configures robot-raised function calls.
type FunctionCallConfig struct {
	// Policy is sent in function_call.policy when the raiser leaves it
	// empty (default "arbitrate": the robot waits for the gateway's
	// function_call_arbiter decision).
	Policy string `yaml:"policy"`
	// Timeout is how long to wait for a decision (default 3s).
	Timeout time.Duration `yaml:"timeout"`
	// OnTimeout is what happens without a decision: "delegate" (default:
	// run the robot's default handler, so a button still works offline) or
	// "drop".
	OnTimeout string `yaml:"on_timeout"`
	// MaxPending bounds calls waiting for a decision (default 32).
	MaxPending int `yaml:"max_pending"`
}

// Defaults returns c with zero fields set to their defaults.
func (c Config) Defaults() Config {
	if c.RatePerSec == 0 {
		c.RatePerSec = 5
	}
	if c.Burst == 0 {
		c.Burst = 5
	}
	b := &c.Blink
	if b.MaxTimes == 0 {
		b.MaxTimes = 20
	}
	if b.MinPeriod == 0 {
		b.MinPeriod = 100 * time.Millisecond
	}
	if b.MaxPeriod == 0 {
		b.MaxPeriod = 5 * time.Second
	}
	if c.Volume.MinDB == 0 {
		c.Volume.MinDB = DefaultVolumeMinDB
	}
	f := &c.FunctionCalls
	if f.Policy == "" {
		f.Policy = "arbitrate"
	}
	if f.Timeout == 0 {
		f.Timeout = 3 * time.Second
	}
	if f.OnTimeout == "" {
		f.OnTimeout = protocol.DecisionDelegate
	}
	if f.MaxPending == 0 {
		f.MaxPending = 32
	}
	return c
}

// DefaultVolumeMinDB is VolumeLimits.MinDB's default.
const DefaultVolumeMinDB = -40.0

// volumeFloorDB is the lowest VolumeLimits.MinDB (the volume package's
// range).
const volumeFloorDB = -60.0

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// Section is the YAML path of the skills configuration in the agent's
// config; every problem Validate reports is named below it.
const Section = "skills"

// Validate checks c (after Defaults) and returns every problem at once,
// each a *field.Error naming the YAML path under "skills" and the value.
func (c Config) Validate() error {
	c = c.Defaults()
	var errs field.List
	at := func(key string, i int) string { return fmt.Sprintf("%s.%s[%d]", Section, key, i) }
	seen := map[string]bool{}
	for i, s := range c.Allow {
		switch {
		case !knownSkills[s]:
			errs.Add(at("allow", i), s, fmt.Sprintf("want one of %s, %s, %s", SkillSet, SkillBlink, SkillVolume), "")
		case seen[s]:
			errs.Add(at("allow", i), s, "listed twice", "")
		}
		seen[s] = true
	}
	for i, p := range c.Pins {
		switch {
		case !nameRE.MatchString(p):
			errs.Add(at("pins", i), p, "want an output name from state.gpio.outputs", "a logical name such as led_eyes, not a pin number")
		case seen["pin:"+p]:
			errs.Add(at("pins", i), p, "listed twice", "")
		}
		seen["pin:"+p] = true
	}
	const s = Section + "."
	if c.RatePerSec <= 0 || c.RatePerSec > 1000 {
		errs.Add(s+"rate_per_sec", c.RatePerSec, "want 0 < rate <= 1000", "")
	}
	if c.Burst < 1 || c.Burst > 1000 {
		errs.Add(s+"burst", c.Burst, "want 1..1000", "")
	}
	if v := c.Volume.MinDB; math.IsNaN(v) || v < volumeFloorDB || v >= 0 {
		errs.Add(s+"volume.min_db", v, fmt.Sprintf("want %g <= min_db < 0", volumeFloorDB), "")
	}
	b := c.Blink
	if b.MaxTimes < 1 || b.MaxTimes > 1000 {
		errs.Add(s+"blink.max_times", b.MaxTimes, "want 1..1000", "")
	}
	if b.MinPeriod < 10*time.Millisecond {
		errs.Add(s+"blink.min_period", b.MinPeriod, "want at least 10ms", "")
	}
	if b.MaxPeriod < b.MinPeriod || b.MaxPeriod > time.Minute {
		errs.Add(s+"blink.max_period", b.MaxPeriod, fmt.Sprintf("want min_period (%v) up to 1m", b.MinPeriod), "")
	}
	f := c.FunctionCalls
	if f.Timeout < 0 || f.Timeout > time.Minute {
		errs.Add(s+"function_calls.timeout", f.Timeout, "want 0..1m", "")
	}
	if f.OnTimeout != protocol.DecisionDelegate && f.OnTimeout != "drop" {
		errs.Add(s+"function_calls.on_timeout", f.OnTimeout, "want delegate or drop", "")
	}
	if f.MaxPending < 1 || f.MaxPending > 10000 {
		errs.Add(s+"function_calls.max_pending", f.MaxPending, "want 1..10000", "")
	}
	return errs.Err()
}

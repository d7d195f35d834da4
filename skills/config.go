package skills

import (
	"fmt"
	"regexp"
	"time"

	"github.com/robot-agent/robot-agent/protocol"
)

// Built-in skills the gateway may call (when allowed in Config.Allow).
const (
	// SkillSet drives an output: {"pin": "led_eyes", "on": true}.
	SkillSet = "gpio.set"
	// SkillBlink blinks an output and leaves it off:
	// {"pin": "led_eyes", "times": 3, "period_ms": 400}.
	SkillBlink = "gpio.blink"
)

var knownSkills = map[string]bool{SkillSet: true, SkillBlink: true}

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
	// FunctionCalls configures function calls the robot raises.
	FunctionCalls FunctionCallConfig `yaml:"function_calls"`
}

// BlinkLimits bounds gpio.blink.
type BlinkLimits struct {
	MaxTimes  int           `yaml:"max_times"`  // default 20
	MinPeriod time.Duration `yaml:"min_period"` // default 100ms
	MaxPeriod time.Duration `yaml:"max_period"` // default 5s
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

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// Validate checks c (after Defaults) and names the first bad field.
func (c Config) Validate() error {
	c = c.Defaults()
	seen := map[string]bool{}
	for i, s := range c.Allow {
		if !knownSkills[s] {
			return fmt.Errorf("skills: allow[%d] is %q, want one of %s, %s", i, s, SkillSet, SkillBlink)
		}
		if seen[s] {
			return fmt.Errorf("skills: allow[%d] %q is listed twice", i, s)
		}
		seen[s] = true
	}
	for i, p := range c.Pins {
		if !nameRE.MatchString(p) {
			return fmt.Errorf("skills: pins[%d] is %q, want an output name from state.gpio.outputs (not a pin number)", i, p)
		}
		if seen["pin:"+p] {
			return fmt.Errorf("skills: pins[%d] %q is listed twice", i, p)
		}
		seen["pin:"+p] = true
	}
	switch {
	case c.RatePerSec <= 0 || c.RatePerSec > 1000:
		return fmt.Errorf("skills: rate_per_sec is %v, want 0 < rate <= 1000", c.RatePerSec)
	case c.Burst < 1 || c.Burst > 1000:
		return fmt.Errorf("skills: burst is %d, want 1..1000", c.Burst)
	case c.Blink.MaxTimes < 1 || c.Blink.MaxTimes > 1000:
		return fmt.Errorf("skills: blink.max_times is %d, want 1..1000", c.Blink.MaxTimes)
	case c.Blink.MinPeriod < 10*time.Millisecond || c.Blink.MaxPeriod < c.Blink.MinPeriod || c.Blink.MaxPeriod > time.Minute:
		return fmt.Errorf("skills: blink periods %v..%v, want 10ms <= min_period <= max_period <= 1m", c.Blink.MinPeriod, c.Blink.MaxPeriod)
	case c.FunctionCalls.Timeout < 0 || c.FunctionCalls.Timeout > time.Minute:
		return fmt.Errorf("skills: function_calls.timeout is %v, want 0..1m", c.FunctionCalls.Timeout)
	case c.FunctionCalls.OnTimeout != protocol.DecisionDelegate && c.FunctionCalls.OnTimeout != "drop":
		return fmt.Errorf("skills: function_calls.on_timeout is %q, want delegate or drop", c.FunctionCalls.OnTimeout)
	case c.FunctionCalls.MaxPending < 1 || c.FunctionCalls.MaxPending > 10000:
		return fmt.Errorf("skills: function_calls.max_pending is %d, want 1..10000", c.FunctionCalls.MaxPending)
	}
	return nil
}

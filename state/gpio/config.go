package gpio

import (
	"regexp"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/robot-agent/robot-agent/config/field"
	"github.com/robot-agent/robot-agent/state"
)

// Section is the YAML path of this module's configuration in the agent's
// configuration; every problem Validate reports is named below it.
const Section = "state.gpio"

var pinRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,32}$`)

const nameHint = "lower-case letters, digits and _, starting with a letter, at most 32"

// Config names the robot's GPIO lines: the state.gpio section of the
// agent's configuration, whose options and validation this package owns.
// Inputs (buttons, bump sensors) become state events; outputs (LEDs,
// enables) are driven only by skills that pass the safety arbiter. Logical names ("led_eyes") are what the
// gateway sees; pin names ("GPIO17") never come from the network.
type Config struct {
	Enabled bool                    `yaml:"enabled"`
	Inputs  map[string]InputConfig  `yaml:"inputs"`
	Outputs map[string]OutputConfig `yaml:"outputs"`
}

// InputConfig is one GPIO input. In YAML it is either a mapping or just the
// pin name ("button_head: GPIO27").
type InputConfig struct {
	Pin string `yaml:"pin"`
	// Pull is the internal resistor: "up" (default), "down" or "none".
	Pull string `yaml:"pull"`
	// ActiveLow means the input is active (pressed) when the line is low:
	// the usual button-to-ground with pull-up. Default true.
	ActiveLow *bool `yaml:"active_low"`
	// Debounce is how long the line must stay quiet after an edge before
	// the new level counts (default 20ms, 0 < debounce <= 1s).
	Debounce time.Duration `yaml:"debounce"`
	// FunctionCall, when set, raises a function call of this type (source
	// "gpio", value = the input name) each time the input becomes active.
	FunctionCall string `yaml:"function_call"`
}

// OutputConfig is one GPIO output. In YAML it is either a mapping or just
// the pin name ("led_eyes: GPIO17", safe level low).
type OutputConfig struct {
	Pin string `yaml:"pin"`
	// Safe is the level the output returns to when the gateway link drops
	// and at start and stop: "low" (default) or "high".
	Safe string `yaml:"safe"`
}

// UnmarshalYAML accepts "name: PIN" as well as the mapping form.
func (c *InputConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		c.Pin = n.Value
		return nil
	}
	type plain InputConfig
	return n.Decode((*plain)(c))
}

// UnmarshalYAML accepts "name: PIN" as well as the mapping form.
func (c *OutputConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		c.Pin = n.Value
		return nil
	}
	type plain OutputConfig
	return n.Decode((*plain)(c))
}

// Defaults returns c with zero fields set to their defaults.
func (c Config) Defaults() Config {
	in := make(map[string]InputConfig, len(c.Inputs))
	for n, i := range c.Inputs {
		if i.Pull == "" {
			i.Pull = "up"
		}
		if i.ActiveLow == nil {
			t := true
			i.ActiveLow = &t
		}
		if i.Debounce == 0 {
			i.Debounce = 20 * time.Millisecond
		}
		in[n] = i
	}
	out := make(map[string]OutputConfig, len(c.Outputs))
	for n, o := range c.Outputs {
		if o.Safe == "" {
			o.Safe = "low"
		}
		out[n] = o
	}
	c.Inputs, c.Outputs = in, out
	return c
}

// Validate checks c (after Defaults) and returns every problem, each a
// *field.Error named by its YAML path under state.gpio.
func (c Config) Validate() error {
	c = c.Defaults()
	var errs field.List
	pins := map[string]string{}
	usePin := func(path, pin string) {
		if !pinRE.MatchString(pin) {
			errs.Add(path+".pin", pin, "want a pin name like GPIO17", "")
			return
		}
		if other, ok := pins[pin]; ok {
			errs.Add(path+".pin", pin, "already used by "+other, "one pin per input or output")
			return
		}
		pins[pin] = path
	}
	for _, n := range state.SortedKeys(c.Inputs) {
		i := c.Inputs[n]
		f := Section + ".inputs." + n
		if !state.ValidName(n) {
			errs.Add(f, nil, "not a valid input name", nameHint)
		}
		if _, dup := c.Outputs[n]; dup {
			errs.Add(f, nil, "the name is both an input and an output", "give them different names")
		}
		usePin(f, i.Pin)
		switch i.Pull {
		case "up", "down", "none":
		default:
			errs.Add(f+".pull", i.Pull, "want up, down or none", "")
		}
		if i.Debounce <= 0 || i.Debounce > time.Second {
			errs.Add(f+".debounce", i.Debounce, "want 0 < debounce <= 1s", "")
		}
		if i.FunctionCall != "" && !state.ValidName(i.FunctionCall) {
			errs.Add(f+".function_call", i.FunctionCall, "not a valid function call type", nameHint)
		}
	}
	for _, n := range state.SortedKeys(c.Outputs) {
		o := c.Outputs[n]
		f := Section + ".outputs." + n
		if !state.ValidName(n) {
			errs.Add(f, nil, "not a valid output name", nameHint)
		}
		usePin(f, o.Pin)
		if o.Safe != "low" && o.Safe != "high" {
			errs.Add(f+".safe", o.Safe, "want low or high", "")
		}
	}
	return errs.Err()
}

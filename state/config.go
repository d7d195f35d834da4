package state

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config configures the state modules; the agent config embeds it under
// "state". Zero values mean "use the default" (see Defaults).
type Config struct {
	GPIO    GPIOConfig    `yaml:"gpio"`
	IMU     IMUConfig     `yaml:"imu"`
	Battery BatteryConfig `yaml:"battery"`
	Thermal ThermalConfig `yaml:"thermal"`
}

// GPIOConfig names the robot's GPIO lines. Inputs (buttons, bump sensors)
// become state events; outputs (LEDs, enables) are driven only by skills
// that pass the safety arbiter. Logical names ("led_eyes") are what the
// gateway sees; pin names ("GPIO17") never come from the network.
type GPIOConfig struct {
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

// IMUConfig configures an MPU-6050/6500/9250-class IMU on I²C.
type IMUConfig struct {
	Enabled bool `yaml:"enabled"`
	// Bus is the periph I²C bus name ("" = first bus, "1", "/dev/i2c-1").
	Bus string `yaml:"bus"`
	// Addr is the 7-bit device address (default 0x68; 0x69 with AD0 high).
	Addr uint16 `yaml:"addr"`
	// Model is "auto" (default: identified by WHO_AM_I), "mpu6050",
	// "mpu6500" or "mpu9250".
	Model string `yaml:"model"`
	// SampleHz is the sampling rate (default 200, 1..1000).
	SampleHz int `yaml:"sample_hz"`
	// PublishHz bounds how often coalesced values are sent (default 10,
	// 1..SampleHz).
	PublishHz int `yaml:"publish_hz"`
	// AccelRangeG is the full-scale range: 2, 4 (default), 8 or 16 g.
	AccelRangeG int `yaml:"accel_range_g"`
	// GyroRangeDPS is the full-scale range: 250, 500 (default), 1000 or
	// 2000 °/s.
	GyroRangeDPS int `yaml:"gyro_range_dps"`
	// Deadbands: a coalesced value is sent only when it moved more than this.
	AccelDeadband float64 `yaml:"accel_deadband"` // m/s², default 0.5
	GyroDeadband  float64 `yaml:"gyro_deadband"`  // °/s, default 5
	TiltDeadband  float64 `yaml:"tilt_deadband"`  // degrees, default 3
	// Heartbeat resends unchanged values this often (0 = never, default).
	Heartbeat time.Duration `yaml:"heartbeat"`
	Motion    MotionConfig  `yaml:"motion"`
}

// MotionConfig tunes the derived motion events (see package imu).
type MotionConfig struct {
	// FallTiltDeg: tilt beyond this for FallHold is "fell_over" (default 60).
	FallTiltDeg float64       `yaml:"fall_tilt_deg"`
	FallHold    time.Duration `yaml:"fall_hold"` // default 500ms
	// PickupMS2: upward linear acceleration beyond this for PickupHold is
	// "picked_up" (default 1.5 m/s²).
	PickupMS2  float64       `yaml:"pickup_ms2"`
	PickupHold time.Duration `yaml:"pickup_hold"` // default 80ms
	// ShakeMS2 / ShakePeaks / ShakeWindow: ShakePeaks rises of the linear
	// acceleration above ShakeMS2 within ShakeWindow is "shaken" (defaults
	// 8 m/s², 4, 1s).
	ShakeMS2    float64       `yaml:"shake_ms2"`
	ShakePeaks  int           `yaml:"shake_peaks"`
	ShakeWindow time.Duration `yaml:"shake_window"`
	// Cooldown is the minimum time between two events of the same kind
	// (default 2s).
	Cooldown time.Duration `yaml:"cooldown"`
}

// BatteryConfig configures the battery module (sysfs power_supply).
type BatteryConfig struct {
	Enabled bool `yaml:"enabled"`
	// Root is the sysfs mount point (default "/sys").
	Root string `yaml:"root"`
	// Supply is the power_supply name ("" = the first of type Battery).
	Supply string `yaml:"supply"`
	// Poll is the read interval (default 10s, 100ms..10m).
	Poll time.Duration `yaml:"poll"`
	// VoltageDeadband in volts (default 0.05); capacity and status changes
	// are always sent.
	VoltageDeadband float64 `yaml:"voltage_deadband"`
}

// ThermalConfig configures the thermal module (sysfs thermal zones).
type ThermalConfig struct {
	Enabled bool   `yaml:"enabled"`
	Root    string `yaml:"root"` // default "/sys"
	// Zones lists zone types to report ("cpu-thermal"); empty = all.
	Zones []string      `yaml:"zones"`
	Poll  time.Duration `yaml:"poll"` // default 5s, 100ms..10m
	// Deadband in °C (default 1).
	Deadband float64 `yaml:"deadband"`
}

var (
	nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
	pinRE  = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,32}$`)
)

// ValidName reports whether s is a valid logical input/output name.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// Defaults returns c with zero fields set to their defaults.
func (c Config) Defaults() Config {
	c.GPIO = c.GPIO.Defaults()
	c.IMU = c.IMU.Defaults()
	c.Battery = c.Battery.Defaults()
	c.Thermal = c.Thermal.Defaults()
	return c
}

// Validate checks c (after Defaults) and names the first bad field.
func (c Config) Validate() error {
	c = c.Defaults()
	return errors.Join(
		c.GPIO.Validate(),
		c.IMU.Validate(),
		c.Battery.Validate(),
		c.Thermal.Validate(),
	)
}

// Defaults returns c with zero fields set to their defaults.
func (c GPIOConfig) Defaults() GPIOConfig {
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

// SortedKeys returns m's keys in order.
func SortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Validate checks c (after Defaults).
func (c GPIOConfig) Validate() error {
	c = c.Defaults()
	pins := map[string]string{}
	usePin := func(field, pin string) error {
		if !pinRE.MatchString(pin) {
			return fmt.Errorf("state: %s.pin is %q, want a pin name like GPIO17", field, pin)
		}
		if other, ok := pins[pin]; ok {
			return fmt.Errorf("state: %s.pin %q is already used by %s", field, pin, other)
		}
		pins[pin] = field
		return nil
	}
	for _, n := range SortedKeys(c.Inputs) {
		i := c.Inputs[n]
		f := "gpio.inputs." + n
		if !nameRE.MatchString(n) {
			return fmt.Errorf("state: gpio.inputs name %q must match %s", n, nameRE)
		}
		if _, dup := c.Outputs[n]; dup {
			return fmt.Errorf("state: gpio name %q is both an input and an output", n)
		}
		if err := usePin(f, i.Pin); err != nil {
			return err
		}
		switch i.Pull {
		case "up", "down", "none":
		default:
			return fmt.Errorf("state: %s.pull is %q, want up, down or none", f, i.Pull)
		}
		if i.Debounce <= 0 || i.Debounce > time.Second {
			return fmt.Errorf("state: %s.debounce is %v, want 0 < debounce <= 1s", f, i.Debounce)
		}
		if i.FunctionCall != "" && !nameRE.MatchString(i.FunctionCall) {
			return fmt.Errorf("state: %s.function_call is %q, must match %s", f, i.FunctionCall, nameRE)
		}
	}
	for _, n := range SortedKeys(c.Outputs) {
		o := c.Outputs[n]
		f := "gpio.outputs." + n
		if !nameRE.MatchString(n) {
			return fmt.Errorf("state: gpio.outputs name %q must match %s", n, nameRE)
		}
		if err := usePin(f, o.Pin); err != nil {
			return err
		}
		if o.Safe != "low" && o.Safe != "high" {
			return fmt.Errorf("state: %s.safe is %q, want low or high", f, o.Safe)
		}
	}
	return nil
}

// Defaults returns c with zero fields set to their defaults.
func (c IMUConfig) Defaults() IMUConfig {
	def := func(p *float64, v float64) {
		if *p == 0 {
			*p = v
		}
	}
	if c.Addr == 0 {
		c.Addr = 0x68
	}
	if c.Model == "" {
		c.Model = "auto"
	}
	if c.SampleHz == 0 {
		c.SampleHz = 200
	}
	if c.PublishHz == 0 {
		c.PublishHz = min(10, c.SampleHz)
	}
	if c.AccelRangeG == 0 {
		c.AccelRangeG = 4
	}
	if c.GyroRangeDPS == 0 {
		c.GyroRangeDPS = 500
	}
	def(&c.AccelDeadband, 0.5)
	def(&c.GyroDeadband, 5)
	def(&c.TiltDeadband, 3)
	m := &c.Motion
	def(&m.FallTiltDeg, 60)
	def(&m.PickupMS2, 1.5)
	def(&m.ShakeMS2, 8)
	if m.FallHold == 0 {
		m.FallHold = 500 * time.Millisecond
	}
	if m.PickupHold == 0 {
		m.PickupHold = 80 * time.Millisecond
	}
	if m.ShakePeaks == 0 {
		m.ShakePeaks = 4
	}
	if m.ShakeWindow == 0 {
		m.ShakeWindow = time.Second
	}
	if m.Cooldown == 0 {
		m.Cooldown = 2 * time.Second
	}
	return c
}

// Validate checks c (after Defaults).
func (c IMUConfig) Validate() error {
	c = c.Defaults()
	switch {
	case c.Addr > 0x7f:
		return fmt.Errorf("state: imu.addr is %#x, want a 7-bit address", c.Addr)
	case !oneOf(c.Model, "auto", "mpu6050", "mpu6500", "mpu9250"):
		return fmt.Errorf("state: imu.model is %q, want auto, mpu6050, mpu6500 or mpu9250", c.Model)
	case c.SampleHz < 1 || c.SampleHz > 1000:
		return fmt.Errorf("state: imu.sample_hz is %d, want 1..1000", c.SampleHz)
	case c.PublishHz < 1 || c.PublishHz > c.SampleHz:
		return fmt.Errorf("state: imu.publish_hz is %d, want 1..sample_hz (%d)", c.PublishHz, c.SampleHz)
	case !oneOfInt(c.AccelRangeG, 2, 4, 8, 16):
		return fmt.Errorf("state: imu.accel_range_g is %d, want 2, 4, 8 or 16", c.AccelRangeG)
	case !oneOfInt(c.GyroRangeDPS, 250, 500, 1000, 2000):
		return fmt.Errorf("state: imu.gyro_range_dps is %d, want 250, 500, 1000 or 2000", c.GyroRangeDPS)
	case c.AccelDeadband < 0 || c.GyroDeadband < 0 || c.TiltDeadband < 0:
		return fmt.Errorf("state: imu deadbands must be >= 0 (accel %v, gyro %v, tilt %v)", c.AccelDeadband, c.GyroDeadband, c.TiltDeadband)
	case c.Heartbeat < 0:
		return fmt.Errorf("state: imu.heartbeat is %v, want >= 0", c.Heartbeat)
	}
	m := c.Motion
	switch {
	case m.FallTiltDeg <= 0 || m.FallTiltDeg >= 180:
		return fmt.Errorf("state: imu.motion.fall_tilt_deg is %v, want 0 < x < 180", m.FallTiltDeg)
	case m.PickupMS2 < 0 || m.ShakeMS2 < 0:
		return fmt.Errorf("state: imu.motion thresholds must be >= 0 (pickup_ms2 %v, shake_ms2 %v)", m.PickupMS2, m.ShakeMS2)
	case m.ShakePeaks < 1 || m.ShakePeaks > 100:
		return fmt.Errorf("state: imu.motion.shake_peaks is %d, want 1..100", m.ShakePeaks)
	case m.FallHold < 0 || m.PickupHold < 0 || m.ShakeWindow <= 0 || m.Cooldown < 0:
		return fmt.Errorf("state: imu.motion durations must be >= 0 (fall_hold %v, pickup_hold %v, shake_window %v, cooldown %v)", m.FallHold, m.PickupHold, m.ShakeWindow, m.Cooldown)
	}
	return nil
}

// Defaults returns c with zero fields set to their defaults.
func (c BatteryConfig) Defaults() BatteryConfig {
	if c.Root == "" {
		c.Root = "/sys"
	}
	if c.Poll == 0 {
		c.Poll = 10 * time.Second
	}
	if c.VoltageDeadband == 0 {
		c.VoltageDeadband = 0.05
	}
	return c
}

// Validate checks c (after Defaults).
func (c BatteryConfig) Validate() error {
	c = c.Defaults()
	switch {
	case c.Poll < 100*time.Millisecond || c.Poll > 10*time.Minute:
		return fmt.Errorf("state: battery.poll is %v, want 100ms..10m", c.Poll)
	case c.VoltageDeadband < 0:
		return fmt.Errorf("state: battery.voltage_deadband is %v, want >= 0", c.VoltageDeadband)
	case strings.Contains(c.Supply, "/") || c.Supply == "." || c.Supply == "..":
		return fmt.Errorf("state: battery.supply is %q, want a power_supply name", c.Supply)
	}
	return nil
}

// Defaults returns c with zero fields set to their defaults.
func (c ThermalConfig) Defaults() ThermalConfig {
	if c.Root == "" {
		c.Root = "/sys"
	}
	if c.Poll == 0 {
		c.Poll = 5 * time.Second
	}
	if c.Deadband == 0 {
		c.Deadband = 1
	}
	return c
}

// Validate checks c (after Defaults).
func (c ThermalConfig) Validate() error {
	c = c.Defaults()
	switch {
	case c.Poll < 100*time.Millisecond || c.Poll > 10*time.Minute:
		return fmt.Errorf("state: thermal.poll is %v, want 100ms..10m", c.Poll)
	case c.Deadband < 0:
		return fmt.Errorf("state: thermal.deadband is %v, want >= 0", c.Deadband)
	}
	for i, z := range c.Zones {
		if z == "" {
			return fmt.Errorf("state: thermal.zones[%d] is empty", i)
		}
	}
	return nil
}

func oneOf(s string, vs ...string) bool {
	for _, v := range vs {
		if s == v {
			return true
		}
	}
	return false
}

func oneOfInt(x int, vs ...int) bool {
	for _, v := range vs {
		if x == v {
			return true
		}
	}
	return false
}

package modules

import (
	"github.com/robot-agent/robot-agent/config/field"
	"github.com/robot-agent/robot-agent/state/gpio"
	"github.com/robot-agent/robot-agent/state/imu"
	"github.com/robot-agent/robot-agent/state/sysfs"
)

// Section is the YAML path of the state modules' configuration in the
// agent's configuration.
const Section = "state"

// Config configures the state modules: the agent config's "state"
// section, one sub-section per module, each owned (options, defaults,
// validation) by its module's package. Zero values mean "use the default"
// (see Defaults).
type Config struct {
	GPIO    gpio.Config         `yaml:"gpio"`
	IMU     imu.Config          `yaml:"imu"`
	Battery sysfs.BatteryConfig `yaml:"battery"`
	Thermal sysfs.ThermalConfig `yaml:"thermal"`
}

// Defaults returns c with zero fields set to their defaults.
func (c Config) Defaults() Config {
	c.GPIO = c.GPIO.Defaults()
	c.IMU = c.IMU.Defaults()
	c.Battery = c.Battery.Defaults()
	c.Thermal = c.Thermal.Defaults()
	return c
}

// Validate checks c (after Defaults) and returns every problem of every
// module at once, each a *field.Error naming the YAML path under "state"
// and the value.
func (c Config) Validate() error {
	var errs field.List
	errs.Append(c.GPIO.Validate())
	errs.Append(c.IMU.Validate())
	errs.Append(c.Battery.Validate())
	errs.Append(c.Thermal.Validate())
	return errs.Err()
}

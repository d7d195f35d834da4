package sysfs

import (
	"fmt"
	"strings"
	"time"

	"github.com/robot-agent/robot-agent/config/field"
)

// The YAML paths of the battery and thermal modules' configurations in the
// agent's configuration (this package owns their options and validation);
// every problem Validate reports is named below them.
const (
	BatterySection = "state.battery"
	ThermalSection = "state.thermal"
)

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

// Validate checks c (after Defaults) and returns every problem, each a
// *field.Error named by its YAML path under state.battery.
func (c BatteryConfig) Validate() error {
	c = c.Defaults()
	var errs field.List
	const p = BatterySection + "."
	if c.Poll < 100*time.Millisecond || c.Poll > 10*time.Minute {
		errs.Add(p+"poll", c.Poll, "want 100ms..10m", "")
	}
	if c.VoltageDeadband < 0 {
		errs.Add(p+"voltage_deadband", c.VoltageDeadband, "want >= 0", "")
	}
	if strings.Contains(c.Supply, "/") || c.Supply == "." || c.Supply == ".." {
		errs.Add(p+"supply", c.Supply, "want a power_supply name", "as listed in /sys/class/power_supply, or empty for the first battery")
	}
	return errs.Err()
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

// Validate checks c (after Defaults) and returns every problem, each a
// *field.Error named by its YAML path under state.thermal.
func (c ThermalConfig) Validate() error {
	c = c.Defaults()
	var errs field.List
	const p = ThermalSection + "."
	if c.Poll < 100*time.Millisecond || c.Poll > 10*time.Minute {
		errs.Add(p+"poll", c.Poll, "want 100ms..10m", "")
	}
	if c.Deadband < 0 {
		errs.Add(p+"deadband", c.Deadband, "want >= 0", "")
	}
	for i, z := range c.Zones {
		if z == "" {
			errs.Add(fmt.Sprintf("%szones[%d]", p, i), z, "must not be empty", "a zone type such as cpu-thermal")
		}
	}
	return errs.Err()
}

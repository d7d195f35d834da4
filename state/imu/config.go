package imu

import (
	"fmt"
	"slices"
	"time"

	"github.com/robot-agent/robot-agent/config/field"
)

// Section is the YAML path of this module's configuration in the agent's
// configuration; every problem Validate reports is named below it.
const Section = "state.imu"

// Config configures an MPU-6050/6500/9250-class IMU on I²C (the state.imu
// section of the agent's configuration; this package owns its options and
// validation).
type Config struct {
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

// Defaults returns c with zero fields set to their defaults.
func (c Config) Defaults() Config {
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

// Validate checks c (after Defaults) and returns every problem, each a
// *field.Error named by its YAML path under state.imu.
func (c Config) Validate() error {
	c = c.Defaults()
	var errs field.List
	const p = Section + "."
	if c.Addr > 0x7f {
		errs = append(errs, &field.Error{Path: p + "addr", Value: fmt.Sprintf("%#x", c.Addr), Problem: "want a 7-bit address", Hint: "0x68, or 0x69 with AD0 high"})
	}
	if !slices.Contains([]string{"auto", "mpu6050", "mpu6500", "mpu9250"}, c.Model) {
		errs.Add(p+"model", c.Model, "want auto, mpu6050, mpu6500 or mpu9250", "")
	}
	if c.SampleHz < 1 || c.SampleHz > 1000 {
		errs.Add(p+"sample_hz", c.SampleHz, "want 1..1000", "")
	} else if c.PublishHz < 1 || c.PublishHz > c.SampleHz {
		errs.Add(p+"publish_hz", c.PublishHz, fmt.Sprintf("want 1..sample_hz (%d)", c.SampleHz), "")
	}
	if !slices.Contains([]int{2, 4, 8, 16}, c.AccelRangeG) {
		errs.Add(p+"accel_range_g", c.AccelRangeG, "want 2, 4, 8 or 16", "")
	}
	if !slices.Contains([]int{250, 500, 1000, 2000}, c.GyroRangeDPS) {
		errs.Add(p+"gyro_range_dps", c.GyroRangeDPS, "want 250, 500, 1000 or 2000", "")
	}
	for _, d := range []struct {
		key string
		v   float64
	}{{"accel_deadband", c.AccelDeadband}, {"gyro_deadband", c.GyroDeadband}, {"tilt_deadband", c.TiltDeadband}} {
		if d.v < 0 {
			errs.Add(p+d.key, d.v, "want >= 0", "")
		}
	}
	if c.Heartbeat < 0 {
		errs.Add(p+"heartbeat", c.Heartbeat, "want >= 0", "0 never resends unchanged values")
	}
	m := c.Motion
	const mp = p + "motion."
	if m.FallTiltDeg <= 0 || m.FallTiltDeg >= 180 {
		errs.Add(mp+"fall_tilt_deg", m.FallTiltDeg, "want 0 < x < 180", "")
	}
	if m.PickupMS2 < 0 {
		errs.Add(mp+"pickup_ms2", m.PickupMS2, "want >= 0", "")
	}
	if m.ShakeMS2 < 0 {
		errs.Add(mp+"shake_ms2", m.ShakeMS2, "want >= 0", "")
	}
	if m.ShakePeaks < 1 || m.ShakePeaks > 100 {
		errs.Add(mp+"shake_peaks", m.ShakePeaks, "want 1..100", "")
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"fall_hold", m.FallHold}, {"pickup_hold", m.PickupHold}, {"cooldown", m.Cooldown}} {
		if d.v < 0 {
			errs.Add(mp+d.key, d.v, "want >= 0", "")
		}
	}
	if m.ShakeWindow <= 0 {
		errs.Add(mp+"shake_window", m.ShakeWindow, "want > 0", "")
	}
	return errs.Err()
}

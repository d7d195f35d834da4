// Package imu is the IMU state module: an MPU-6050/6500/9250-class sensor
// on I²C, sampled at a configured rate on the injected clock.
//
// Published state (units are fixed):
//
//	imu.accel   {"x","y","z"}             m/s², sensor axes, gravity included
//	imu.gyro    {"x","y","z"}             °/s
//	imu.tilt    {"pitch","roll","tilt"}   degrees; tilt is 0 upright, 90 on its side
//	imu.motion  {"event": "picked_up" | "shaken" | "fell_over" | "upright"}
//
// accel, gyro and tilt are high-rate values: they are coalesced (latest
// value wins) and flushed at publish_hz, and a value is only sent when it
// moved more than its deadband, so a still robot sends nothing after the
// first values. Motion events are change-driven and sent as they happen.
// Every event's ts is the capture time of the sample it came from.
//
// periph.io/x/devices' adxl345 driver is not used: over I²C it sets bit 7
// of register addresses (an SPI convention), reads two bytes per 8-bit
// register and discards errors.
//
// # Concurrency
//
// Open, Run and Close are called by the state Manager, never concurrently;
// Run samples on its own goroutine.
package imu

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"periph.io/x/conn/v3/i2c"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/state"
)

// Name is the module name.
const Name = "imu"

// maxReadErrors consecutive failed reads make Run fail (the Manager then
// reopens the device with backoff).
const maxReadErrors = 10

// Coalesced keys.
const (
	keyAccel = iota
	keyGyro
	keyTilt
)

// Module is the IMU state module. Create it with New.
type Module struct {
	cfg   Config
	buses hw.I2C
	clk   clock.Clock
	log   *slog.Logger

	samples, readErrs, overruns *metrics.Counter

	bus i2c.BusCloser
	mpu *MPU

	// Owned by the Run goroutine.
	period    time.Duration
	every     int
	n         int
	s         Sample
	motion    *Motion
	coalescer *state.Coalescer
	pub       *state.Publisher
	vec       [3]float64

	onArm func() // tests: called each time Run arms its timer
}

// New returns the module; it touches no hardware until Open.
func New(cfg Config, buses hw.I2C, deps state.Deps) (*Module, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	deps = deps.WithDefaults()
	cfg = cfg.Defaults()
	r := deps.Metrics
	return &Module{
		cfg:      cfg,
		buses:    buses,
		clk:      deps.Clock,
		log:      deps.Log.With("module", Name),
		samples:  r.Counter("robot_agent_imu_samples_total", "IMU samples read."),
		readErrs: r.Counter("robot_agent_imu_read_errors_total", "IMU reads that failed."),
		overruns: r.Counter("robot_agent_imu_overruns_total", "IMU sample ticks skipped because sampling fell behind."),
		period:   time.Second / time.Duration(cfg.SampleHz),
		every:    max(1, cfg.SampleHz/cfg.PublishHz),
	}, nil
}

// Name implements state.Module.
func (m *Module) Name() string { return Name }

// Open opens the bus and configures the sensor. No bus or no device at the
// address makes the module unavailable.
func (m *Module) Open() error {
	if m.buses == nil {
		return fmt.Errorf("imu: no I2C on this host: %w", state.ErrUnavailable)
	}
	bus, err := m.buses.OpenI2C(m.cfg.Bus)
	if err != nil {
		return fmt.Errorf("imu: %v: %w", err, state.ErrUnavailable)
	}
	mpu, err := NewMPU(bus, m.cfg.Addr, MPUOptions{Model: m.cfg.Model, SampleHz: m.cfg.SampleHz, AccelRangeG: m.cfg.AccelRangeG, GyroRangeDPS: m.cfg.GyroRangeDPS})
	if err != nil {
		bus.Close()
		return fmt.Errorf("%v: %w", err, state.ErrUnavailable)
	}
	m.bus, m.mpu = bus, mpu
	m.log.Info("imu: sensor ready", "model", mpu.Model(), "addr", fmt.Sprintf("%#x", m.cfg.Addr), "sample_hz", m.cfg.SampleHz, "publish_hz", m.cfg.PublishHz)
	return nil
}

// Close releases the bus.
func (m *Module) Close() error {
	if m.bus == nil {
		return nil
	}
	err := m.bus.Close()
	m.bus, m.mpu = nil, nil
	return err
}

func (m *Module) start(pub *state.Publisher) {
	m.pub = pub
	m.motion = NewMotion(m.cfg.Motion, m.period)
	m.n = 0
	m.coalescer = state.NewCoalescer(pub, m.cfg.Heartbeat,
		state.Key{Name: "imu.accel", Fields: []string{"x", "y", "z"}, Deadband: m.cfg.AccelDeadband, Decimals: 2},
		state.Key{Name: "imu.gyro", Fields: []string{"x", "y", "z"}, Deadband: m.cfg.GyroDeadband, Decimals: 1},
		state.Key{Name: "imu.tilt", Fields: []string{"pitch", "roll", "tilt"}, Deadband: m.cfg.TiltDeadband, Decimals: 1},
	)
}

// Run samples every 1/sample_hz on the clock until ctx is done. It returns
// an error after maxReadErrors consecutive failed reads.
func (m *Module) Run(ctx context.Context, pub *state.Publisher) error {
	m.start(pub)
	next := m.clk.Mono() + m.period
	t := m.clk.NewTimer(m.period)
	defer t.Stop()
	fails := 0
	for {
		if m.onArm != nil {
			m.onArm()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
		now := m.clk.Mono()
		if err := m.step(now); err != nil {
			fails++
			if fails >= maxReadErrors {
				return fmt.Errorf("imu: %d reads in a row failed, last: %w", fails, err)
			}
		} else {
			fails = 0
		}
		next += m.period
		if next <= now {
			skipped := (now - next) / m.period
			m.overruns.Add(int64(skipped) + 1)
			next = now + m.period
		}
		t.Reset(next - now)
	}
}

// step reads one sample captured at now, feeds the motion detector and the
// coalescer, and flushes every publish period.
func (m *Module) step(now time.Duration) error {
	if err := m.mpu.Read(&m.s); err != nil {
		m.readErrs.Inc()
		return err
	}
	m.samples.Inc()
	if ev := m.motion.Update(&m.s, now); ev != EventNone {
		m.pub.Publish("imu.motion", motionValue(ev), now)
	}
	m.coalescer.Update(keyAccel, now, m.s.Accel[:])
	m.coalescer.Update(keyGyro, now, m.s.Gyro[:])
	m.vec[0], m.vec[1], m.vec[2] = m.motion.Tilt()
	m.coalescer.Update(keyTilt, now, m.vec[:])
	m.n++
	if m.n%m.every == 0 {
		m.coalescer.Flush(now)
	}
	return nil
}

func motionValue(e Event) json.RawMessage {
	return json.RawMessage(`{"event":"` + e.String() + `"}`)
}

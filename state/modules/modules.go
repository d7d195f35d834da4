// Package modules builds the agent's state modules from configuration,
// with real devices (periph.io host drivers, /sys) or the simulated robot
// that `make run --sim` uses: scripted buttons on periph gpiotest pins, IMU
// playback of recorded I²C traffic, a clock-driven fake sysfs, a simulated
// recogniser and a simulated LED that skills blink.
//
// # Concurrency
//
// Build and NewSim are for start-up. Sim.Run runs on its own goroutine.
package modules

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/hw/host"
	"github.com/robot-agent/robot-agent/identity"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/skills"
	"github.com/robot-agent/robot-agent/state"
	"github.com/robot-agent/robot-agent/state/gpio"
	"github.com/robot-agent/robot-agent/state/imu"
	"github.com/robot-agent/robot-agent/state/sysfs"
)

// Devices are the hardware seams the modules use.
type Devices struct {
	GPIO    hw.GPIO
	I2C     hw.I2C
	Battery fs.FS // rooted at the sysfs mount
	Thermal fs.FS
}

// RealDevices returns the board's devices: periph host GPIO and I²C
// (host.Init on first use; a host without them makes the modules
// unavailable, not the agent fail) and sysfs at the configured roots.
func RealDevices(cfg Config) Devices {
	cfg = cfg.Defaults()
	return Devices{
		GPIO:    host.NewGPIO(),
		I2C:     host.NewI2C(),
		Battery: os.DirFS(cfg.Battery.Root),
		Thermal: os.DirFS(cfg.Thermal.Root),
	}
}

// Set is the built modules, registered with a Manager that is not started.
type Set struct {
	Manager *state.Manager
	GPIO    *gpio.Module // nil when gpio is disabled
}

// Build validates cfg and creates the enabled modules on dev, publishing
// through emit.
func Build(cfg Config, dev Devices, emit state.Emitter, deps state.Deps) (*Set, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	deps = deps.WithDefaults()
	s := &Set{Manager: state.NewManager(emit, deps)}
	var mods []state.Module
	if cfg.GPIO.Enabled {
		g, err := gpio.New(cfg.GPIO, dev.GPIO, deps)
		if err != nil {
			return nil, err
		}
		s.GPIO = g
		mods = append(mods, g)
	}
	if cfg.IMU.Enabled {
		m, err := imu.New(cfg.IMU, dev.I2C, deps)
		if err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	if cfg.Battery.Enabled {
		b, err := sysfs.NewBattery(cfg.Battery, dev.Battery, deps)
		if err != nil {
			return nil, err
		}
		mods = append(mods, b)
	}
	if cfg.Thermal.Enabled {
		t, err := sysfs.NewThermal(cfg.Thermal, dev.Thermal, deps)
		if err != nil {
			return nil, err
		}
		mods = append(mods, t)
	}
	if err := s.Manager.Add(mods...); err != nil {
		return nil, err
	}
	return s, nil
}

// Outputs returns the GPIO outputs for skills.New (all unavailable when
// gpio is disabled).
func (s *Set) Outputs() skills.Outputs {
	return skills.OutputsFunc(func(name string) (skills.Output, error) {
		if s.GPIO == nil {
			return nil, fmt.Errorf("modules: gpio is disabled: %w", state.ErrUnavailable)
		}
		o, err := s.GPIO.Output(name)
		if err != nil {
			return nil, err
		}
		return o, nil
	})
}

// Raiser connects GPIO inputs with a function_call to the arbiter. Call
// before Manager.Start.
func (s *Set) Raiser(r gpio.Raiser) {
	if s.GPIO != nil {
		s.GPIO.SetRaiser(r)
	}
}

// Sim is the simulated robot.
type Sim struct {
	Devices    Devices
	Pins       *gpio.SimPins
	Scenario   *gpio.Scenario
	Recogniser *identity.SimRecogniser

	cfg  Config
	deps state.Deps
}

// NewSim returns simulated devices for cfg: GPIO pins (outputs log their
// level changes, so a blinking LED shows in the log), the default button
// scenario, IMU playback of the embedded recording (a live register model
// when cfg.IMU differs from the recording's settings), a clock-driven
// sysfs tree and the default recogniser script.
func NewSim(cfg Config, deps state.Deps) *Sim {
	deps = deps.WithDefaults()
	cfg = cfg.Defaults()
	pins := gpio.NewSimPins(deps.Log)
	c := cfg.IMU
	live := c.Addr != imu.RecordingAddr || c.SampleHz != imu.RecordingHz || c.AccelRangeG != imu.RecordingAccelG ||
		c.GyroRangeDPS != imu.RecordingGyroDPS || (c.Model != "auto" && c.Model != "mpu6050")
	sfs := sysfs.NewSimFS(deps.Clock)
	return &Sim{
		Devices:    Devices{GPIO: pins, I2C: imu.SimI2C{Live: live, Addr: c.Addr}, Battery: sfs, Thermal: sfs},
		Pins:       pins,
		Scenario:   gpio.DefaultScenario(),
		Recogniser: identity.DefaultSim(),
		cfg:        cfg,
		deps:       deps,
	}
}

// Run plays the button scenario and the recogniser script until ctx is
// done. Recogniser lines go to submit: identity.Server.SubmitLine, or the
// send function of identity.DialUnix to go through the real socket.
func (s *Sim) Run(ctx context.Context, submit func(line []byte) error) error {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		errs[0] = s.Scenario.Play(ctx, s.deps.Clock, s.cfg.GPIO, s.Pins, s.deps.Log)
	}()
	go func() {
		defer wg.Done()
		errs[1] = s.Recogniser.Run(ctx, s.deps.Clock, submit)
	}()
	wg.Wait()
	for _, err := range errs {
		if err != nil && err != context.Canceled {
			return err
		}
	}
	return nil
}

// RegisterHandlers registers the simulator's default function-call
// handlers on a: a head-button press the gateway delegates back blinks
// led_eyes twice.
func (s *Sim) RegisterHandlers(a *skills.Arbiter) {
	a.RegisterDefault("button_press", func(ctx context.Context, _ protocol.FunctionCallInfo, _ json.RawMessage) error {
		return a.Local(skills.SkillBlink, json.RawMessage(`{"pin":"led_eyes","times":2,"period_ms":300}`))
	})
}

// SimConfig returns configuration for the simulated robot with every
// module enabled: a head button (raising button_press) and a bump sensor,
// the led_eyes output skills may set and blink, the IMU at the recording's
// settings, battery and thermal, and a recogniser socket at socketPath
// ("" for in-process submission only) with a 20 s absence so the sim's
// returning visitor is greeted again.
func SimConfig(socketPath string) (Config, skills.Config, identity.Config) {
	st := Config{
		GPIO: gpio.Config{
			Enabled: true,
			Inputs: map[string]gpio.InputConfig{
				"button_head": {Pin: "GPIO27", FunctionCall: "button_press"},
				"bump_front":  {Pin: "GPIO22", Debounce: 10 * time.Millisecond},
			},
			Outputs: map[string]gpio.OutputConfig{"led_eyes": {Pin: "GPIO17"}},
		},
		IMU:     imu.Config{Enabled: true},
		Battery: sysfs.BatteryConfig{Enabled: true},
		Thermal: sysfs.ThermalConfig{Enabled: true},
	}
	sk := skills.Config{Allow: []string{skills.SkillSet, skills.SkillBlink, skills.SkillVolume}, Pins: []string{"led_eyes"}}
	id := identity.Config{Socket: socketPath, Absence: 20 * time.Second, GreetCooldown: 30 * time.Second}
	return st, sk, id
}

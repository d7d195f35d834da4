package main

import (
	"context"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/identity"
	"github.com/robot-agent/robot-agent/skills"
	"github.com/robot-agent/robot-agent/state"
	"github.com/robot-agent/robot-agent/state/modules"
)

// robotParts are the control-lane producers and consumers besides audio:
// state modules (GPIO, IMU, battery, thermal), the recogniser endpoint
// (faces, greetings) and the skills/function-call arbiter.
type robotParts struct {
	set *modules.Set
	arb *skills.Arbiter
	ids *identity.Server
	sim *modules.Sim

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// decodeSection decodes the optional top-level section name into dst
// (config.DecodeSection: every problem named by its YAML path); it
// reports whether the section was present.
func decodeSection(extra map[string]yaml.Node, name string, dst any) (bool, error) {
	return config.DecodeSection(extra, name, dst)
}

// setupRobot builds the state modules, recogniser endpoint and arbiter.
// With --sim and no state section the simulated robot is used (scripted
// button, IMU playback, fake sysfs, simulated recogniser, simulated LED).
func (a *agent) setupRobot() error {
	var stCfg modules.Config
	var skCfg skills.Config
	var idCfg identity.Config
	hasState, err := decodeSection(a.cfg.Extra, modules.Section, &stCfg)
	if err != nil {
		return err
	}
	hasSkills, err := decodeSection(a.cfg.Extra, "skills", &skCfg)
	if err != nil {
		return err
	}
	hasID, err := decodeSection(a.cfg.Extra, "identity", &idCfg)
	if err != nil {
		return err
	}
	deps := state.Deps{Clock: a.clk, Log: a.log, Metrics: a.reg}
	r := &robotParts{}
	var devs modules.Devices
	if a.opts.sim {
		// Sections the file leaves out take the simulated robot's.
		st, sk, id := modules.SimConfig("")
		if !hasState {
			stCfg = st
		}
		if !hasSkills {
			skCfg = sk
		}
		if !hasID {
			idCfg = id
		}
		r.sim = modules.NewSim(stCfg, deps)
		devs = r.sim.Devices
	} else {
		devs = modules.RealDevices(stCfg)
	}
	if r.set, err = modules.Build(stCfg, devs, a.client, deps); err != nil {
		return err
	}
	if r.arb, err = skills.New(skCfg, r.set.Outputs(), a.client, deps); err != nil {
		return err
	}
	r.set.Raiser(r.arb)
	if a.volume != nil {
		r.arb.SetVolume(a.volume) // audio.volume, where the config allows it
	}
	a.client.AddObserver(r.arb)
	a.control.skills, a.control.arbiter = r.arb, r.arb
	if r.sim != nil {
		r.sim.RegisterHandlers(r.arb)
	}
	if r.ids, err = identity.New(idCfg, a.client, deps); err != nil {
		return err
	}
	a.robot = r
	return nil
}

// start runs the modules, the recogniser endpoint and the simulator.
func (r *robotParts) start(a *agent) {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.set.Manager.Start(ctx)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if err := r.ids.Run(ctx); err != nil && ctx.Err() == nil {
			a.log.Error("identity endpoint stopped", "err", err)
		}
	}()
	if r.sim != nil {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if err := r.sim.Run(ctx, r.ids.SubmitLine); err != nil && ctx.Err() == nil {
				a.log.Error("robot simulator stopped", "err", err)
			}
		}()
	}
}

// stop stops producing events, then puts every output in its safe state.
func (r *robotParts) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.set.Manager.Stop()
	r.wg.Wait()
	r.arb.Close()
	r.cancel = nil
}

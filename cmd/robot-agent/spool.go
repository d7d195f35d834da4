package main

import (
	"fmt"

	"github.com/robot-agent/robot-agent/spool"
	"github.com/robot-agent/robot-agent/uplink"
)

// openSpool opens the durable control-event spool (spool.path), or returns
// nil for the memory-only mode.
func (a *agent) openSpool() (uplink.Spool, error) {
	sc := a.cfg.Spool
	if sc.Memory() {
		a.log.Info("spool: memory only; control events do not survive a restart (set spool.path)")
		return nil, nil
	}
	l, err := spool.Open(spool.Config{Dir: sc.Path, MaxBytes: int64(sc.MaxMB) << 20}, a.clk, a.reg, a.log)
	if err != nil {
		// A deployment problem: restarting does not help.
		return nil, &failure{code: exitConfig, err: fmt.Errorf("spool.path %q: %w", sc.Path, err),
			fix: "make spool.path a directory the agent can write (packaged: /var/lib/robot-agent/spool, the unit's StateDirectory), or set it to memory"}
	}
	a.closers = append(a.closers, l.Close)
	a.log.Info("spool: control events are durable", "path", sc.Path, "unsettled", l.Len())
	return l, nil
}

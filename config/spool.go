package config

import (
	"path/filepath"

	"github.com/robot-agent/robot-agent/config/field"
)

// Spool configures the durable control-event spool (package spool).
type Spool struct {
	// Path is the spool directory. Empty or "memory": control events are
	// kept in memory only and do not survive a restart or power loss
	// (development, tests). Packaged installs use /var/lib/robot-agent/spool
	// (the unit's StateDirectory).
	Path string `yaml:"path"`
	// MaxMB caps the unsettled events held (MiB); when reached, new events
	// are refused at their source, counted and logged. Default 64.
	MaxMB int `yaml:"max_mb"`
}

// Memory reports whether the spool is memory only.
func (s Spool) Memory() bool { return s.Path == "" || s.Path == "memory" }

func (s Spool) validate(errs *field.List) {
	if !s.Memory() && !filepath.IsAbs(s.Path) {
		errs.Add("spool.path", s.Path, "must be an absolute directory", `or "memory" (events do not survive a restart)`)
	}
	if s.MaxMB < 1 || s.MaxMB > 4096 {
		errs.Add("spool.max_mb", s.MaxMB, "want an integer in [1, 4096]", "")
	}
}

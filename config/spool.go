package config

import (
	"fmt"
	"path/filepath"
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

func (s Spool) validate() error {
	if !s.Memory() && !filepath.IsAbs(s.Path) {
		return fmt.Errorf("%w: spool.path = %q: must be an absolute directory, or \"memory\"", ErrInvalid, s.Path)
	}
	if s.MaxMB < 1 || s.MaxMB > 4096 {
		return fmt.Errorf("%w: spool.max_mb = %d: must be in [1, 4096]", ErrInvalid, s.MaxMB)
	}
	return nil
}

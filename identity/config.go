package identity

import (
	"net"
	"time"

	"github.com/robot-agent/robot-agent/config/field"
)

// Config configures the recogniser endpoint; the agent config embeds it
// under "identity". Zero values mean the defaults.
type Config struct {
	// Socket is the Unix socket the recogniser writes JSON lines to
	// ("" disables it). Created with mode 0660; a stale socket is replaced.
	Socket string `yaml:"socket"`
	// HTTP is a loopback host:port for POST /v1/observations ("" disables).
	HTTP string `yaml:"http"`
	// DedupWindow: repeats of a UID inside this window send no new
	// face_info (default 2s).
	DedupWindow time.Duration `yaml:"dedup_window"`
	// Absence: a known UID seen again after this long counts as a new
	// appearance and may be greeted (default 5m).
	Absence time.Duration `yaml:"absence"`
	// GreetCooldown: minimum time between two greet signals for the same
	// UID (default 10m).
	GreetCooldown time.Duration `yaml:"greet_cooldown"`
	// MinConfidence drops observations below it (default 0: keep all).
	MinConfidence float64 `yaml:"min_confidence"`
	// MaxLine is the longest accepted JSON line in bytes (default 4096).
	MaxLine int `yaml:"max_line"`
	// MaxRate is how many observations per second are accepted (default
	// 50, burst the same); more are refused with rate_limited.
	MaxRate int `yaml:"max_rate"`
}

// Defaults returns c with zero fields set to their defaults.
func (c Config) Defaults() Config {
	if c.DedupWindow == 0 {
		c.DedupWindow = 2 * time.Second
	}
	if c.Absence == 0 {
		c.Absence = 5 * time.Minute
	}
	if c.GreetCooldown == 0 {
		c.GreetCooldown = 10 * time.Minute
	}
	if c.MaxLine == 0 {
		c.MaxLine = 4096
	}
	if c.MaxRate == 0 {
		c.MaxRate = 50
	}
	return c
}

// Section is the YAML path of the identity configuration in the agent's
// config; every problem Validate reports is named below it.
const Section = "identity"

// Validate checks c (after Defaults) and returns every problem at once,
// each a *field.Error naming the YAML path under "identity" and the value.
func (c Config) Validate() error {
	c = c.Defaults()
	var errs field.List
	const s = Section + "."
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"dedup_window", c.DedupWindow}, {"absence", c.Absence}, {"greet_cooldown", c.GreetCooldown}} {
		if d.v < 0 {
			errs.Add(s+d.key, d.v, "want >= 0", "")
		}
	}
	if c.MinConfidence < 0 || c.MinConfidence > 1 {
		errs.Add(s+"min_confidence", c.MinConfidence, "want 0..1", "")
	}
	if c.MaxLine < 64 || c.MaxLine > 64<<10 {
		errs.Add(s+"max_line", c.MaxLine, "want 64..65536", "")
	}
	if c.MaxRate < 1 || c.MaxRate > 10000 {
		errs.Add(s+"max_rate", c.MaxRate, "want 1..10000", "")
	}
	if c.HTTP != "" {
		host, _, err := net.SplitHostPort(c.HTTP)
		if err != nil {
			errs.Add(s+"http", c.HTTP, "want host:port", "e.g. 127.0.0.1:8765")
		} else if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			errs.Add(s+"http", c.HTTP, "the recogniser endpoint must listen on loopback", "use 127.0.0.1, ::1 or localhost")
		}
	}
	return errs.Err()
}

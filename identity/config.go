package identity

import (
	"fmt"
	"net"
	"time"
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

// Validate checks c (after Defaults) and names the first bad field.
func (c Config) Validate() error {
	c = c.Defaults()
	switch {
	case c.DedupWindow < 0:
		return fmt.Errorf("identity: dedup_window is %v, want >= 0", c.DedupWindow)
	case c.Absence < 0:
		return fmt.Errorf("identity: absence is %v, want >= 0", c.Absence)
	case c.GreetCooldown < 0:
		return fmt.Errorf("identity: greet_cooldown is %v, want >= 0", c.GreetCooldown)
	case c.MinConfidence < 0 || c.MinConfidence > 1:
		return fmt.Errorf("identity: min_confidence is %v, want 0..1", c.MinConfidence)
	case c.MaxLine < 64 || c.MaxLine > 64<<10:
		return fmt.Errorf("identity: max_line is %d, want 64..65536", c.MaxLine)
	case c.MaxRate < 1 || c.MaxRate > 10000:
		return fmt.Errorf("identity: max_rate is %d, want 1..10000", c.MaxRate)
	}
	if c.HTTP != "" {
		host, _, err := net.SplitHostPort(c.HTTP)
		if err != nil {
			return fmt.Errorf("identity: http is %q, want host:port: %v", c.HTTP, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("identity: http is %q: the recogniser endpoint must listen on loopback (127.0.0.1, ::1 or localhost)", c.HTTP)
		}
	}
	return nil
}

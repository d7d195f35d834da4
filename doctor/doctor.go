// Package doctor checks that a board is ready to run robot-agent and says
// what is wrong and how to fix it: config valid, gateway token present,
// devices (sound, camera, GPIO, I²C) present and openable, the service user
// in the right groups, the clock synchronised, and the gateway reachable
// over TLS. It backs the `robot-agent doctor` subcommand.
//
// Every outside dependency (filesystem root, account look-ups, device open,
// network dialer, clock-sync probe, config validation) is a field of Checks,
// so tests run the real checks against a fake root and fake accounts.
//
// # Concurrency
//
// Run and Collect may be called from any goroutine; the checks of one call
// run one after another. The func fields of Checks are called from the
// calling goroutine.
package doctor

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Status is the outcome of one check.
type Status int

// Check outcomes. Any Fail makes Run report not ok.
const (
	OK Status = iota
	Warn
	Fail
)

func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case Warn:
		return "WARN"
	case Fail:
		return "FAIL"
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// Result is one line of the report.
type Result struct {
	Check  string // what was checked: "config", "sound capture", "group gpio", ...
	Status Status
	Detail string // what was found
	Fix    string // how to fix it; empty when OK
}

// Group is a Unix group.
type Group struct {
	Name string
	GID  uint32
}

// Account is the user the agent runs as, with every group it is in.
type Account struct {
	Name   string
	UID    uint32
	Groups []Group
}

// Device is one kind of device the agent uses.
type Device struct {
	Name     string // "sound capture"
	Dev      string // glob of device nodes, relative to Root: "dev/snd/pcmC*D*c"
	Sys      string // glob of the kernel's view under sysfs, relative to Root
	Group    string // group that should own the nodes and hold the user
	Required bool   // missing is a failure (else a warning)
	Fix      string // how to make the kernel see the device
	FixNode  string // how to get /dev nodes when sysfs has the device but /dev has none
}

// DefaultDevices returns the devices a robot board uses: microphone,
// speaker, camera, GPIO and I²C, all required. Callers drop or relax the
// ones their config disables.
func DefaultDevices() []Device {
	const udev = "udev did not create the node: is systemd-udevd running? `sudo udevadm trigger`, then check `ls -l /dev`"
	return []Device{
		{
			Name: "sound capture", Dev: "dev/snd/pcmC*D*c", Sys: "sys/class/sound/pcmC*D*c", Group: "audio", Required: true,
			Fix:     "connect a USB microphone or enable the board's I2S mic overlay (dtoverlay=... in /boot/firmware/config.txt), reboot, then `arecord -l` must list it",
			FixNode: udev,
		},
		{
			Name: "sound playback", Dev: "dev/snd/pcmC*D*p", Sys: "sys/class/sound/pcmC*D*p", Group: "audio", Required: true,
			Fix:     "connect a USB speaker/DAC or enable the board's audio output (dtparam=audio=on or a DAC overlay in /boot/firmware/config.txt), then `aplay -l` must list it",
			FixNode: udev,
		},
		{
			Name: "camera", Dev: "dev/video*", Sys: "sys/class/video4linux/video*", Group: "video", Required: true,
			Fix:     "connect a USB (UVC) camera, or enable the CSI camera (camera_auto_detect=1 in /boot/firmware/config.txt), then `v4l2-ctl --list-devices` must list it",
			FixNode: udev,
		},
		{
			Name: "gpio", Dev: "dev/gpiochip*", Sys: "sys/bus/gpio/devices/gpiochip*", Group: "gpio", Required: true,
			Fix:     "no GPIO controller: this is not a board with GPIO, or its pinctrl driver is not loaded (check `dmesg | grep -i gpio`)",
			FixNode: udev,
		},
		{
			Name: "i2c", Dev: "dev/i2c-*", Sys: "sys/class/i2c-adapter/i2c-*", Group: "i2c", Required: true,
			Fix:     "enable I²C: `sudo raspi-config nonint do_i2c 0` or dtparam=i2c_arm=on in /boot/firmware/config.txt, reboot",
			FixNode: "the I²C bus exists but i2c-dev is not loaded: `sudo modprobe i2c-dev` and add i2c-dev to /etc/modules-load.d/i2c.conf",
		},
	}
}

// Checks configures one doctor run. Zero fields take the real system's
// behaviour.
type Checks struct {
	// Root is the filesystem root under which dev/ and sys/ are looked up
	// ("/" when empty).
	Root string
	// User is the account the service runs as; empty means the current user.
	User string
	// Devices to check; nil means DefaultDevices().
	Devices []Device

	// ConfigPath is shown in the report and passed to ValidateConfig.
	ConfigPath string
	// ValidateConfig loads and validates the config; nil skips the check
	// with a warning.
	ValidateConfig func(path string) error
	// TokenFile is the gateway token file (gateway.token_file, or
	// $CREDENTIALS_DIRECTORY/gateway-token). Empty: no token is
	// configured, a warning.
	TokenFile string
	// TokenOptional means TokenFile was not set explicitly (it is where a
	// token would be looked for): the token is optional, so a missing file
	// is a warning, not a failure. A file that exists is checked all the
	// same (readable, not empty, private).
	TokenOptional bool

	// GatewayURL is the gateway's ws:// or wss:// URL from the config.
	GatewayURL string
	// Dial opens the TCP connection to the gateway; nil uses net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLSConfig is cloned for the handshake (RootCAs etc.); nil uses the
	// system roots. ServerName is set from the URL when empty.
	TLSConfig *tls.Config
	// Timeout bounds the gateway and clock checks each; 0 means 5 s.
	Timeout time.Duration

	// LookupAccount returns the service user and its groups; nil uses
	// os/user.
	LookupAccount func(name string) (Account, error)
	// LookupGroup finds a group by name; nil uses os/user.
	LookupGroup func(name string) (Group, error)
	// Open opens a device node read-write without blocking and closes it;
	// nil uses os.OpenFile with O_RDWR|O_NONBLOCK.
	Open func(path string) error
	// ClockSynced reports whether the system clock is synchronised and by
	// what it knows; nil uses SystemClockSynced(Root).
	ClockSynced func(ctx context.Context) (synced bool, how string, err error)
	// Now is the wall clock; nil uses time.Now.
	Now func() time.Time
}

func (c *Checks) defaults() {
	if c.Root == "" {
		c.Root = "/"
	}
	if c.Devices == nil {
		c.Devices = DefaultDevices()
	}
	if c.Dial == nil {
		var d net.Dialer
		c.Dial = d.DialContext
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Second
	}
	if c.LookupAccount == nil {
		c.LookupAccount = lookupAccount
	}
	if c.LookupGroup == nil {
		c.LookupGroup = lookupGroup
	}
	if c.Open == nil {
		c.Open = openDevice
	}
	if c.ClockSynced == nil {
		root := c.Root
		c.ClockSynced = func(ctx context.Context) (bool, string, error) { return SystemClockSynced(ctx, root) }
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Run runs every check, writes one line per result (with a "fix:" line
// under each failure or warning) and a summary to out, and reports whether
// no check failed.
func Run(ctx context.Context, cfg Checks, out io.Writer) (ok bool) {
	results := Collect(ctx, cfg)
	var nOK, nWarn, nFail int
	for _, r := range results {
		fmt.Fprintf(out, "%-4s  %-15s %s\n", r.Status, r.Check, r.Detail)
		if r.Fix != "" && r.Status != OK {
			fmt.Fprintf(out, "      %-15s fix: %s\n", "", r.Fix)
		}
		switch r.Status {
		case OK:
			nOK++
		case Warn:
			nWarn++
		default:
			nFail++
		}
	}
	fmt.Fprintf(out, "doctor: %d failed, %d warned, %d ok\n", nFail, nWarn, nOK)
	return nFail == 0
}

// Collect runs every check and returns the results in report order.
func Collect(ctx context.Context, cfg Checks) []Result {
	cfg.defaults()
	var rs []Result
	rs = append(rs, checkConfig(cfg))
	rs = append(rs, checkToken(cfg))

	acct, acctErr := account(cfg)
	for _, d := range cfg.Devices {
		rs = append(rs, checkDevice(cfg, d, acct, acctErr)...)
	}
	rs = append(rs, checkGroups(cfg, acct, acctErr)...)
	rs = append(rs, checkClock(ctx, cfg))
	rs = append(rs, checkGateway(ctx, cfg))
	return rs
}

func account(cfg Checks) (Account, error) {
	name := cfg.User
	if name == "" {
		u, err := user.Current()
		if err != nil {
			return Account{}, fmt.Errorf("doctor: current user: %w", err)
		}
		name = u.Username
	}
	return cfg.LookupAccount(name)
}

func checkConfig(cfg Checks) Result {
	r := Result{Check: "config"}
	path := cfg.ConfigPath
	if path == "" {
		path = "(default)"
	}
	switch {
	case cfg.ValidateConfig == nil:
		r.Status, r.Detail = Warn, "not checked"
	default:
		if err := cfg.ValidateConfig(cfg.ConfigPath); err != nil {
			r.Status, r.Detail = Fail, fmt.Sprintf("%s: %v", path, err)
			r.Fix = "edit " + path + " (the error names the field); the packaged default is /usr/share/robot-agent/config.yaml"
			return r
		}
		r.Detail = path + " is valid"
	}
	return r
}

func checkToken(cfg Checks) Result {
	r := Result{Check: "gateway token"}
	const fix = "put the token in /etc/robot-agent/gateway-token (owner root, mode 0600); the unit passes it to the agent with LoadCredential="
	const notConfigured = "not configured (optional: the agent connects without a token; gateway.token_file, or $CREDENTIALS_DIRECTORY/gateway-token under systemd)"
	if cfg.TokenFile == "" {
		r.Status, r.Detail, r.Fix = Warn, notConfigured, "if the gateway asks for a token: "+fix
		return r
	}
	fi, err := os.Stat(cfg.TokenFile)
	switch {
	case os.IsNotExist(err) && cfg.TokenOptional:
		r.Status, r.Detail, r.Fix = Warn, notConfigured+"; "+cfg.TokenFile+" does not exist", "if the gateway asks for a token: "+fix
		return r
	case os.IsNotExist(err):
		r.Status, r.Detail, r.Fix = Fail, cfg.TokenFile+" does not exist", fix
		return r
	case err != nil:
		r.Status, r.Detail, r.Fix = Fail, err.Error(), fix
		return r
	}
	data, err := os.ReadFile(cfg.TokenFile)
	if os.IsPermission(err) {
		r.Status, r.Detail, r.Fix = Warn, cfg.TokenFile+" exists but this user cannot read it", "run `sudo robot-agent doctor` to check its content"
		return r
	}
	if err != nil {
		r.Status, r.Detail, r.Fix = Fail, err.Error(), fix
		return r
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		if cfg.TokenOptional {
			// The package installs an empty placeholder so that the unit's
			// LoadCredential= finds a file: empty means no token.
			r.Status, r.Detail, r.Fix = Warn, notConfigured+"; "+cfg.TokenFile+" is empty", "if the gateway asks for a token: "+fix
			return r
		}
		r.Status, r.Detail, r.Fix = Fail, cfg.TokenFile+" is empty", fix
		return r
	}
	if fi.Mode().Perm()&0o077 != 0 {
		r.Status, r.Detail = Warn, fmt.Sprintf("%s is readable by group/others (mode %04o)", cfg.TokenFile, fi.Mode().Perm())
		r.Fix = "sudo chmod 0600 " + cfg.TokenFile
		return r
	}
	r.Detail = cfg.TokenFile + " present"
	return r
}

func severity(required bool) Status {
	if required {
		return Fail
	}
	return Warn
}

func (c Checks) abs(rel string) string { return filepath.Join(c.Root, rel) }

// display shows a path as it is on the target system (without Root).
func display(rel string) string { return "/" + strings.TrimPrefix(rel, "/") }

func checkDevice(cfg Checks, d Device, acct Account, acctErr error) []Result {
	nodes, _ := filepath.Glob(cfg.abs(d.Dev))
	sort.Strings(nodes)
	if len(nodes) == 0 {
		r := Result{Check: d.Name, Status: severity(d.Required)}
		var kernel []string
		if d.Sys != "" {
			kernel, _ = filepath.Glob(cfg.abs(d.Sys))
		}
		if len(kernel) > 0 {
			r.Detail = fmt.Sprintf("missing: no %s (the kernel has %d in %s)", display(d.Dev), len(kernel), filepath.Dir(display(d.Sys)))
			r.Fix = d.FixNode
		} else {
			r.Detail = fmt.Sprintf("missing: no device matches %s", display(d.Dev))
			r.Fix = d.Fix
		}
		return []Result{r}
	}
	var rs []Result
	for _, n := range nodes {
		rel, _ := filepath.Rel(cfg.Root, n)
		shown := display(rel)
		r := Result{Check: d.Name}
		access := ""
		if acctErr == nil {
			if msg := accessProblem(n, acct, d.Group); msg != "" {
				r.Status = Fail
				r.Detail = shown + ": " + msg
				r.Fix = fmt.Sprintf("make %s group %s, mode 0660: the package's udev rule /lib/udev/rules.d/60-robot-agent.rules does it (`sudo udevadm trigger`), or `sudo chgrp %s %s && sudo chmod g+rw %s`",
					shown, d.Group, d.Group, shown, shown)
				rs = append(rs, r)
				continue
			}
			access = " and accessible to " + acct.Name
		}
		if err := cfg.Open(n); err != nil {
			r.Status = Fail
			r.Detail = fmt.Sprintf("%s: cannot open: %v", shown, err)
			r.Fix = "check `dmesg` for driver errors; if it is busy, stop the other program using it"
			if isBusy(err) {
				r.Status = Warn
				r.Detail = shown + ": busy (another process, perhaps the running agent, holds it)"
				r.Fix = "stop the other user of the device (`sudo fuser -v " + shown + "`) if the agent is not running"
			}
			rs = append(rs, r)
			continue
		}
		r.Detail = shown + " present, opens" + access
		rs = append(rs, r)
	}
	return rs
}

func checkGroups(cfg Checks, acct Account, acctErr error) []Result {
	if acctErr != nil {
		name := cfg.User
		if name == "" {
			name = "(current user)"
		}
		return []Result{{
			Check: "user", Status: Fail,
			Detail: fmt.Sprintf("cannot look up %s: %v", name, acctErr),
			Fix:    "create the service user: `sudo systemd-sysusers /usr/lib/sysusers.d/robot-agent.conf` (or reinstall the package)",
		}}
	}
	// Required-ness of a group is that of its most required device.
	req := map[string]bool{}
	var order []string
	for _, d := range cfg.Devices {
		if d.Group == "" {
			continue
		}
		if _, seen := req[d.Group]; !seen {
			order = append(order, d.Group)
		}
		req[d.Group] = req[d.Group] || d.Required
	}
	member := map[uint32]bool{}
	for _, g := range acct.Groups {
		member[g.GID] = true
	}
	var rs []Result
	for _, name := range order {
		r := Result{Check: "group " + name}
		g, err := cfg.LookupGroup(name)
		switch {
		case err != nil:
			r.Status = severity(req[name])
			r.Detail = fmt.Sprintf("group %s does not exist", name)
			r.Fix = "create it and add the user: `sudo systemd-sysusers /usr/lib/sysusers.d/robot-agent.conf` (or `sudo groupadd -r " + name + " && sudo usermod -aG " + name + " " + acct.Name + "`)"
		case acct.UID == 0:
			r.Detail = fmt.Sprintf("group %s exists (root needs no membership; check the service user with its name)", name)
		case !member[g.GID]:
			r.Status = severity(req[name])
			r.Detail = fmt.Sprintf("user %s is not in group %s", acct.Name, name)
			r.Fix = fmt.Sprintf("`sudo usermod -aG %s %s`, then `sudo systemctl restart robot-agent`", name, acct.Name)
		default:
			r.Detail = fmt.Sprintf("user %s is in group %s", acct.Name, name)
		}
		rs = append(rs, r)
	}
	return rs
}

// clockFloor is a date the clock of a working board is past: a board
// without RTC or time sync boots at its image date or 1970.
var clockFloor = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func checkClock(ctx context.Context, cfg Checks) Result {
	r := Result{Check: "clock"}
	now := cfg.Now()
	if now.Before(clockFloor) {
		r.Status = Fail
		r.Detail = "system clock reads " + now.UTC().Format(time.RFC3339) + ": not set"
		r.Fix = "enable time sync (`sudo timedatectl set-ntp true`) and check the network; TLS to the gateway fails until the clock is right"
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	synced, how, err := cfg.ClockSynced(ctx)
	switch {
	case err != nil:
		r.Status, r.Detail = Warn, "cannot tell whether the clock is synchronised: "+err.Error()
		r.Fix = "check `timedatectl status`"
	case !synced:
		r.Status, r.Detail = Fail, "not synchronised ("+how+")"
		r.Fix = "enable time sync: `sudo timedatectl set-ntp true` (systemd-timesyncd) or start chrony; check `timedatectl timesync-status`"
	default:
		r.Detail = "synchronised (" + how + ")"
	}
	return r
}

func checkGateway(ctx context.Context, cfg Checks) Result {
	r := Result{Check: "gateway"}
	if cfg.GatewayURL == "" {
		r.Status, r.Detail = Fail, "no gateway URL (gateway.url missing or config invalid)"
		r.Fix = "set gateway.url: wss://HOST/v1/robot in the config"
		return r
	}
	u, err := url.Parse(cfg.GatewayURL)
	if err != nil || u.Host == "" {
		r.Status, r.Detail = Fail, fmt.Sprintf("bad gateway URL %q", cfg.GatewayURL)
		r.Fix = "set gateway.url: wss://HOST/v1/robot in the config"
		return r
	}
	secure := false
	port := "80"
	switch u.Scheme {
	case "wss", "https":
		secure, port = true, "443"
	case "ws", "http":
	default:
		r.Status, r.Detail = Fail, fmt.Sprintf("gateway URL %q: scheme %q is not ws or wss", cfg.GatewayURL, u.Scheme)
		r.Fix = "use wss://HOST/v1/robot"
		return r
	}
	if u.Port() != "" {
		port = u.Port()
	}
	addr := net.JoinHostPort(u.Hostname(), port)

	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	conn, err := cfg.Dial(ctx, "tcp", addr)
	if err != nil {
		r.Status = Fail
		r.Detail, r.Fix = describeDialError(addr, err, cfg.Timeout)
		return r
	}
	defer conn.Close()
	if !secure {
		r.Status = Warn
		r.Detail = addr + " reachable, but without TLS: the token would cross the network in clear"
		r.Fix = "use a wss:// gateway URL"
		return r
	}
	tc := &tls.Config{}
	if cfg.TLSConfig != nil {
		tc = cfg.TLSConfig.Clone()
	}
	if tc.ServerName == "" {
		tc.ServerName = u.Hostname()
	}
	tconn := tls.Client(conn, tc)
	if err := tconn.HandshakeContext(ctx); err != nil {
		r.Status = Fail
		r.Detail, r.Fix = describeTLSError(addr, err)
		return r
	}
	st := tconn.ConnectionState()
	r.Detail = fmt.Sprintf("%s reachable, %s", addr, tls.VersionName(st.Version))
	if len(st.PeerCertificates) > 0 {
		r.Detail += ", certificate valid until " + st.PeerCertificates[0].NotAfter.UTC().Format("2006-01-02")
	}
	return r
}

// Package sysfs holds state modules that read Linux sysfs: the battery
// (class/power_supply) and CPU/SoC temperatures (class/thermal).
//
// Modules read through an fs.FS rooted at the sysfs mount (os.DirFS("/sys")
// on a robot; a testdata tree or SimFS in tests and simulation) and poll on
// the injected clock. Published state:
//
//	battery            {"capacity_pct": int, "status": "discharging",
//	                    "voltage_v": float, "current_a": float, "temp_c": float}
//	                   (fields the supply does not expose are omitted;
//	                   current_a as the driver reports it, sign varies by driver)
//	thermal.<type>     {"temp_c": float}   e.g. thermal.cpu-thermal
//
// Battery is sent when capacity or status changes or the voltage moves more
// than voltage_deadband; a zone when it moves more than deadband.
//
// # Concurrency
//
// Open, Run and Close are called by the state Manager, never concurrently.
package sysfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/state"
)

// maxReadFailures consecutive failed polls make Run fail.
const maxReadFailures = 5

// maxFile bounds how much of a sysfs attribute is read.
const maxFile = 256

func readAttr(fsys fs.FS, name string) (string, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var buf [maxFile]byte
	n, err := f.Read(buf[:])
	if n == 0 && err != nil {
		return "", fmt.Errorf("sysfs: read %s: %w", name, err)
	}
	return strings.TrimSpace(string(buf[:n])), nil
}

func readInt(fsys fs.FS, name string) (int64, error) {
	s, err := readAttr(fsys, name)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("sysfs: %s is %q, not an integer", name, s)
	}
	return v, nil
}

type poller struct {
	clk   clock.Clock
	log   *slog.Logger
	every time.Duration
	errs  *metrics.Counter
	onArm func() // tests: called each time the poll timer is armed
}

// loop calls poll now and then every p.every until ctx is done; it fails
// after maxReadFailures polls in a row failed.
func (p poller) loop(ctx context.Context, poll func(now time.Duration) error) error {
	fails := 0
	var t clock.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		if err := poll(p.clk.Mono()); err != nil {
			p.errs.Inc()
			fails++
			if fails == 1 {
				p.log.Warn("sysfs: read failed", "err", err)
			}
			if fails >= maxReadFailures {
				return fmt.Errorf("sysfs: %d reads in a row failed, last: %w", fails, err)
			}
		} else {
			fails = 0
		}
		if t == nil {
			t = p.clk.NewTimer(p.every)
		} else {
			t.Reset(p.every)
		}
		if p.onArm != nil {
			p.onArm()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Battery is the battery module.
type Battery struct {
	cfg    BatteryConfig
	fsys   fs.FS
	poller poller
	dir    string // class/power_supply/<name>

	sent    bool
	last    batteryValue
	scratch []byte
}

type batteryValue struct {
	capacity         int64
	status           string
	hasCap, hasVolt  bool
	hasCurr, hasTemp bool
	volt, curr, temp float64
}

// NewBattery returns the battery module reading fsys (rooted at the sysfs
// mount, cfg.Root on a robot).
func NewBattery(cfg BatteryConfig, fsys fs.FS, deps state.Deps) (*Battery, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	deps = deps.WithDefaults()
	cfg = cfg.Defaults()
	return &Battery{cfg: cfg, fsys: fsys, poller: poller{
		clk: deps.Clock, log: deps.Log.With("module", "battery"), every: cfg.Poll,
		errs: deps.Metrics.Counter("robot_agent_sysfs_read_errors_total", "Failed sysfs polls (battery, thermal)."),
	}}, nil
}

// Name implements state.Module.
func (b *Battery) Name() string { return "battery" }

// Open finds the supply: cfg.Supply, or the first power_supply whose type
// is Battery. None makes the module unavailable.
func (b *Battery) Open() error {
	if b.fsys == nil {
		return fmt.Errorf("sysfs: battery: no sysfs: %w", state.ErrUnavailable)
	}
	const class = "class/power_supply"
	if b.cfg.Supply != "" {
		dir := path.Join(class, b.cfg.Supply)
		if _, err := readAttr(b.fsys, dir+"/type"); err != nil {
			return fmt.Errorf("sysfs: battery: power_supply %q: %v: %w", b.cfg.Supply, err, state.ErrUnavailable)
		}
		b.dir = dir
		return nil
	}
	ents, err := fs.ReadDir(b.fsys, class)
	if err != nil {
		return fmt.Errorf("sysfs: battery: %v: %w", err, state.ErrUnavailable)
	}
	for _, e := range ents {
		dir := path.Join(class, e.Name())
		if t, err := readAttr(b.fsys, dir+"/type"); err == nil && t == "Battery" {
			b.dir = dir
			return nil
		}
	}
	return fmt.Errorf("sysfs: battery: no power_supply of type Battery among %d supplies: %w", len(ents), state.ErrUnavailable)
}

// Close implements state.Module.
func (b *Battery) Close() error { return nil }

// Run polls until ctx is done.
func (b *Battery) Run(ctx context.Context, pub *state.Publisher) error {
	b.sent = false
	return b.poller.loop(ctx, func(now time.Duration) error { return b.poll(now, pub) })
}

func (b *Battery) poll(now time.Duration, pub *state.Publisher) error {
	var v batteryValue
	var err error
	if v.capacity, err = readInt(b.fsys, b.dir+"/capacity"); err == nil {
		v.hasCap = v.capacity >= 0 && v.capacity <= 100
		if !v.hasCap {
			return fmt.Errorf("sysfs: %s/capacity is %d, want 0..100", b.dir, v.capacity)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if s, err := readAttr(b.fsys, b.dir+"/status"); err == nil {
		v.status = strings.ToLower(strings.ReplaceAll(s, " ", "_"))
	}
	if uv, err := readInt(b.fsys, b.dir+"/voltage_now"); err == nil {
		v.volt, v.hasVolt = float64(uv)/1e6, true
	}
	if ua, err := readInt(b.fsys, b.dir+"/current_now"); err == nil {
		v.curr, v.hasCurr = float64(ua)/1e6, true
	}
	if dc, err := readInt(b.fsys, b.dir+"/temp"); err == nil {
		v.temp, v.hasTemp = float64(dc)/10, true
	}
	if !v.hasCap && !v.hasVolt && v.status == "" {
		return fmt.Errorf("sysfs: %s has neither capacity, voltage_now nor status", b.dir)
	}
	if b.sent && v.capacity == b.last.capacity && v.status == b.last.status &&
		v.hasVolt == b.last.hasVolt && math.Abs(v.volt-b.last.volt) <= b.cfg.VoltageDeadband {
		return nil
	}
	buf := make([]byte, 0, 128)
	buf = append(buf, '{')
	sep := func() {
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
	}
	if v.hasCap {
		buf = append(buf, `"capacity_pct":`...)
		buf = strconv.AppendInt(buf, v.capacity, 10)
	}
	if v.status != "" {
		sep()
		buf = append(buf, `"status":`...)
		buf = strconv.AppendQuote(buf, v.status)
	}
	for _, f := range []struct {
		ok   bool
		name string
		v    float64
		dec  int
	}{{v.hasVolt, "voltage_v", v.volt, 3}, {v.hasCurr, "current_a", v.curr, 3}, {v.hasTemp, "temp_c", v.temp, 1}} {
		if f.ok {
			sep()
			buf = append(buf, `"`+f.name+`":`...)
			buf = state.AppendFloat(buf, f.v, f.dec)
		}
	}
	buf = append(buf, '}')
	_ = pub.Publish("battery", buf, now)
	b.sent, b.last = true, v
	return nil
}

// Thermal is the thermal-zone module.
type Thermal struct {
	cfg    ThermalConfig
	fsys   fs.FS
	poller poller
	zones  []zone
}

type zone struct {
	dir, name string // class/thermal/thermal_zoneN, state name
	sent      bool
	last      float64
}

// NewThermal returns the thermal module reading fsys.
func NewThermal(cfg ThermalConfig, fsys fs.FS, deps state.Deps) (*Thermal, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	deps = deps.WithDefaults()
	cfg = cfg.Defaults()
	return &Thermal{cfg: cfg, fsys: fsys, poller: poller{
		clk: deps.Clock, log: deps.Log.With("module", "thermal"), every: cfg.Poll,
		errs: deps.Metrics.Counter("robot_agent_sysfs_read_errors_total", "Failed sysfs polls (battery, thermal)."),
	}}, nil
}

// Name implements state.Module.
func (t *Thermal) Name() string { return "thermal" }

// Open lists the thermal zones (filtered by cfg.Zones). None makes the
// module unavailable.
func (t *Thermal) Open() error {
	if t.fsys == nil {
		return fmt.Errorf("sysfs: thermal: no sysfs: %w", state.ErrUnavailable)
	}
	const class = "class/thermal"
	ents, err := fs.ReadDir(t.fsys, class)
	if err != nil {
		return fmt.Errorf("sysfs: thermal: %v: %w", err, state.ErrUnavailable)
	}
	want := map[string]bool{}
	for _, z := range t.cfg.Zones {
		want[z] = true
	}
	seen := map[string]int{}
	t.zones = nil
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "thermal_zone") {
			names = append(names, e.Name())
		}
	}
	sort.Slice(names, func(i, j int) bool { // thermal_zone2 before thermal_zone10
		a, _ := strconv.Atoi(strings.TrimPrefix(names[i], "thermal_zone"))
		b, _ := strconv.Atoi(strings.TrimPrefix(names[j], "thermal_zone"))
		return a < b
	})
	for _, n := range names {
		dir := path.Join(class, n)
		typ, err := readAttr(t.fsys, dir+"/type")
		if err != nil || typ == "" || (len(want) > 0 && !want[typ]) {
			continue
		}
		name := "thermal." + typ
		if seen[typ] > 0 {
			name = fmt.Sprintf("thermal.%s_%d", typ, seen[typ])
		}
		seen[typ]++
		t.zones = append(t.zones, zone{dir: dir, name: name})
	}
	if len(t.zones) == 0 {
		return fmt.Errorf("sysfs: thermal: no thermal zones (of %v) under %s: %w", t.cfg.Zones, class, state.ErrUnavailable)
	}
	return nil
}

// Close implements state.Module.
func (t *Thermal) Close() error { return nil }

// Run polls until ctx is done.
func (t *Thermal) Run(ctx context.Context, pub *state.Publisher) error {
	for i := range t.zones {
		t.zones[i].sent = false
	}
	return t.poller.loop(ctx, func(now time.Duration) error { return t.poll(now, pub) })
}

func (t *Thermal) poll(now time.Duration, pub *state.Publisher) error {
	var errs []error
	for i := range t.zones {
		z := &t.zones[i]
		mc, err := readInt(t.fsys, z.dir+"/temp")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c := float64(mc) / 1000
		if z.sent && math.Abs(c-z.last) <= t.cfg.Deadband {
			continue
		}
		v := append([]byte(`{"temp_c":`), state.AppendFloat(nil, c, 1)...)
		_ = pub.Publish(z.name, append(v, '}'), now)
		z.sent, z.last = true, c
	}
	if len(errs) == len(t.zones) {
		return errors.Join(errs...)
	}
	return nil
}

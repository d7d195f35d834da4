package sysfs

import (
	"fmt"
	"io/fs"
	"math"
	"testing/fstest"
	"time"

	"github.com/robot-agent/robot-agent/clock"
)

// SimFS is a simulated sysfs tree whose values follow the clock: a battery
// BAT0 draining from 100 % by 1 % every 20 s (and recharging to full after
// reaching 20 %), an AC supply, and a cpu-thermal zone oscillating around
// 48 °C with a period of 2 minutes. Files are regenerated on each Open, so
// the modules read it exactly like /sys.
//
// SimFS is safe for concurrent use.
type SimFS struct{ clk clock.Clock }

// NewSimFS returns a simulated sysfs tree on clk.
func NewSimFS(clk clock.Clock) *SimFS { return &SimFS{clk: clk} }

// Open implements fs.FS.
func (s *SimFS) Open(name string) (fs.File, error) { return s.tree().Open(name) }

// ReadDir implements fs.ReadDirFS.
func (s *SimFS) ReadDir(name string) ([]fs.DirEntry, error) { return s.tree().ReadDir(name) }

func (s *SimFS) tree() fstest.MapFS {
	t := s.clk.Mono().Seconds()
	const cycle = 80 * 20 // seconds to drain 100 → 20 %
	capacity := 100 - int(math.Mod(t, cycle)/20)
	volt := 3.3 + 0.9*float64(capacity)/100
	temp := 48 + 6*math.Sin(2*math.Pi*t/120)
	f := func(v string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(v + "\n"), Mode: 0o444, ModTime: time.Time{}}
	}
	return fstest.MapFS{
		"class/power_supply/AC/type":          f("Mains"),
		"class/power_supply/AC/online":        f("0"),
		"class/power_supply/BAT0/type":        f("Battery"),
		"class/power_supply/BAT0/status":      f("Discharging"),
		"class/power_supply/BAT0/capacity":    f(fmt.Sprint(capacity)),
		"class/power_supply/BAT0/voltage_now": f(fmt.Sprint(int(volt * 1e6))),
		"class/power_supply/BAT0/current_now": f("-450000"),
		"class/thermal/thermal_zone0/type":    f("cpu-thermal"),
		"class/thermal/thermal_zone0/temp":    f(fmt.Sprint(int(temp * 1000))),
		"class/thermal/thermal_zone1/type":    f("gpu-thermal"),
		"class/thermal/thermal_zone1/temp":    f(fmt.Sprint(int((temp - 3) * 1000))),
	}
}

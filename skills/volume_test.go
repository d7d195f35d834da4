package skills_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/skills"
)

// fakeVolume records the levels set.
type fakeVolume struct {
	mu  sync.Mutex
	db  float64
	set []float64
}

func (f *fakeVolume) SetDB(db float64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.db = db
	f.set = append(f.set, db)
	return nil
}

func (f *fakeVolume) DB() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.db
}

func (f *fakeVolume) sets() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.set)
}

func volumeRig(t *testing.T) (*rig, *fakeVolume) {
	t.Helper()
	cfg := skillsConfig()
	cfg.Allow = append(cfg.Allow, skills.SkillVolume)
	r := newRig(t, cfg)
	v := &fakeVolume{}
	r.a.SetVolume(v)
	return r, v
}

func TestVolumeSetsTheLevel(t *testing.T) {
	r, v := volumeRig(t)
	for _, tc := range []struct {
		args string
		want float64
	}{
		{`{"level_db":-12}`, -12},
		{`{"change_db":6}`, -6},
		{`{"change_db":10}`, 0}, // held at 0 dB: the control only attenuates
		{`{"change_db":-35.5}`, -35.5},
		{`{"change_db":-20}`, -40}, // held at min_db (default -40)
		{`{"level_db":0}`, 0},
	} {
		r.pass(time.Second) // under the rate limit
		res := r.resultFor(t, r.skill(skills.SkillVolume, tc.args))
		if !res.OK {
			t.Fatalf("%s: refused: %+v", tc.args, res.Error)
		}
		if got := v.DB(); got != tc.want {
			t.Errorf("%s: level %g dB, want %g", tc.args, got, tc.want)
		}
		if want, _ := json.Marshal(map[string]any{"level_db": tc.want}); string(res.Result) != string(want) {
			t.Errorf("%s: result %s, want %s", tc.args, res.Result, want)
		}
	}
}

func TestVolumeBadArgumentsChangeNothing(t *testing.T) {
	r, v := volumeRig(t)
	for _, tc := range []struct{ args, want string }{
		{``, `field "args" is missing`},
		{`{}`, `want exactly one of "level_db" (-40..0) and "change_db"`},
		{`{"level_db":-6,"change_db":3}`, `want exactly one of`},
		{`{"level_db":3}`, `field "level_db" is 3, want -40..0`},
		{`{"level_db":-41}`, `field "level_db" is -41, want -40..0`},
		{`{"change_db":50}`, `field "change_db" is 50, want -40..40`},
		{`{"level_db":"loud"}`, `field "level_db": JSON string is not a valid float64`},
		{`{"level":-6}`, `unknown field "level"`},
	} {
		r.pass(time.Second)
		res := r.resultFor(t, r.skill(skills.SkillVolume, tc.args))
		if res.OK || res.Error == nil || res.Error.Code != protocol.CodeBadArgument || !strings.Contains(res.Error.Msg, tc.want) {
			t.Errorf("%q: %+v, want bad_argument %q", tc.args, res.Error, tc.want)
		}
	}
	if n := v.sets(); n != 0 {
		t.Errorf("the volume was set %d times by refused calls", n)
	}
}

func TestVolumeWithoutAControlIsUnavailable(t *testing.T) {
	cfg := skillsConfig()
	cfg.Allow = append(cfg.Allow, skills.SkillVolume)
	r := newRig(t, cfg)
	res := r.resultFor(t, r.skill(skills.SkillVolume, `{"level_db":-6}`))
	if res.OK || res.Error.Code != protocol.CodeUnavailable || !strings.Contains(res.Error.Msg, "no volume control") {
		t.Errorf("%+v, want unavailable: no volume control", res.Error)
	}
}

func TestVolumeNotAllowedIsUnknown(t *testing.T) {
	r := newRig(t, skillsConfig()) // allow: gpio.set, gpio.blink
	v := &fakeVolume{}
	r.a.SetVolume(v)
	res := r.resultFor(t, r.skill(skills.SkillVolume, `{"level_db":-6}`))
	if res.OK || res.Error.Code != protocol.CodeUnknownSkill || v.sets() != 0 {
		t.Errorf("%+v (sets %d), want unknown_skill and no change", res.Error, v.sets())
	}
}

func TestVolumeMinDBValidate(t *testing.T) {
	for _, tc := range []struct {
		min  float64
		want string
	}{
		{-61, "skills.volume.min_db: -61: want -60 <= min_db < 0"},
		{3, "skills.volume.min_db: 3: want -60 <= min_db < 0"},
	} {
		c := skillsConfig()
		c.Volume.MinDB = tc.min
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("min_db %g: %v, want %q", tc.min, err, tc.want)
		}
	}
	c := skillsConfig()
	c.Volume.MinDB = -60
	if err := c.Validate(); err != nil {
		t.Errorf("min_db -60: %v", err)
	}
	if got := (skills.Config{}).Defaults().Volume.MinDB; got != skills.DefaultVolumeMinDB {
		t.Errorf("default min_db %g, want %g", got, skills.DefaultVolumeMinDB)
	}
}

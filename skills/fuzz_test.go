package skills_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/skills"
)

// Any skill and arguments from the network: never a panic, exactly one
// skill_result, and the pin is written only when the result is ok.
func FuzzHandleSkill(f *testing.F) {
	f.Add("gpio.set", []byte(`{"pin":"led_eyes","on":true}`))
	f.Add("gpio.blink", []byte(`{"pin":"led_eyes","times":3,"period_ms":200}`))
	f.Add("gpio.set", []byte(`{"pin":"GPIO17","on":1}`))
	f.Add("x", []byte(`null`))
	f.Add("audio.volume", []byte(`{"level_db":-12}`))
	f.Add("audio.volume", []byte(`{"change_db":-1e309}`))
	cfg := skillsConfig()
	cfg.Allow = append(cfg.Allow, skills.SkillVolume)
	cfg.RatePerSec, cfg.Burst = 1000, 1000
	f.Fuzz(func(t *testing.T, skill string, args []byte) {
		r := newRig(t, cfg)
		v := &fakeVolume{db: -10}
		r.a.SetVolume(v)
		base := r.led().Writes()
		r.a.HandleSkill(context.Background(), &protocol.Skill{Meta: protocol.Meta{EventID: "f1"}, Skill: skill, Args: json.RawMessage(args)})
		if skill == skills.SkillBlink {
			r.a.SetLinkUp(false) // stop a started blink; its result follows
		}
		res := r.resultFor(t, "f1")
		if !res.OK && r.led().Writes() != base && skill != skills.SkillBlink {
			t.Fatalf("refused %q %s but wrote the pin", skill, args)
		}
		if res.OK == (res.Error != nil) {
			t.Fatalf("result %+v", res)
		}
		if db := v.DB(); v.sets() > 0 && (!res.OK || db < skills.DefaultVolumeMinDB || db > 0 || math.IsNaN(db)) {
			t.Fatalf("%q %s: volume set to %g (result ok %v), want only an accepted level within %g..0", skill, args, db, res.OK, skills.DefaultVolumeMinDB)
		}
		if errs := r.em.Invalid(); len(errs) > 0 {
			t.Fatal(errs)
		}
	})
}

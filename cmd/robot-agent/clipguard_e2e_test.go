package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/robot-agent/robot-agent/aec"
	"github.com/robot-agent/robot-agent/clipguard"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/hw/sim"
)

// TestEndToEndClipGuard: through the simulated room with the echo 26 dB
// louder than `make run`'s (a speaker at the mic), the robot's answer
// clips the mic; the agent lowers its voice (duplex.clip_guard, on by
// default), says so in its log and metrics, and the speaker plays it
// quieter. With clip_guard.enabled: false nothing is lowered.
func TestEndToEndClipGuard(t *testing.T) {
	if aec.Best() == aec.KindNone {
		t.Skip("no echo canceller built in (pure-Go build): no clip guard")
	}
	if raceEnabled {
		t.Skip("real-time simulated room: run without -race (scripts/test.sh does)")
	}
	for _, on := range []bool{true, false} {
		script := &sim.SpeechScript{Utterances: []sim.Utterance{
			{Silence: 500 * time.Millisecond},
			{Speech: 4 * time.Second, Silence: 10 * time.Second},
		}}
		mod := func(c *config.Config) {
			y := "sim_room:\n  echo_gain_db: 20\n"
			if !on {
				y += "clip_guard:\n  enabled: false\n"
			}
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(y), &doc); err != nil {
				t.Fatal(err)
			}
			if c.Extra == nil {
				c.Extra = map[string]yaml.Node{}
			}
			c.Extra[duplexSection] = *doc.Content[0]
		}
		e := startE2EFull(t, script, gateway.Config{Token: "sim-token", Speed: 4, NoGreeting: true}, mod, nil, true)
		deadline := time.Now().Add(20 * time.Second)
		for {
			if d, _ := e.a.progress.counts(); d >= 1 {
				break // the answer played to its end
			}
			if time.Now().After(deadline) {
				t.Fatalf("clip guard %v: no answer played to its end after 20 s; timeline:\n%s", on, e.timeline())
			}
			time.Sleep(10 * time.Millisecond)
		}
		down, backoff := e.reg.Value(clipguard.MetricDown), e.reg.Value(clipguard.MetricBackoff)
		logged := strings.Contains(strings.Join(e.log.lines(), "\n"), "clipguard: the robot's own voice clips the mic")
		clips := e.a.aecSrc.EchoClips()
		t.Logf("clip guard %v: the echo clipped %d mic frames; %d steps down, lowered by %d dB; %d reads held for a late reference", on, clips, down, backoff, e.a.aecSrc.RefLate())
		if !on {
			if down != 0 || logged || clips < 3 {
				t.Errorf("clip guard off: %d steps down, logged %v, %d clipped echo frames; want none, false, at least 3 (the room clips the mic); timeline:\n%s", down, logged, clips, e.timeline())
			}
			e.stop(t)
			var sum strings.Builder
			e.a.writeSummary(&sum)
			if strings.Contains(sum.String(), "echo clipped the mic") {
				t.Errorf("clip guard off: the summary reports it:\n%s", sum.String())
			}
			continue
		}
		if down < 1 || backoff < 3 || !logged {
			t.Errorf("clip guard on: %d steps down to -%d dB, logged %v; want at least one step of 3 dB, logged; timeline:\n%s", down, backoff, logged, e.timeline())
		}
		c := e.reg.Value(clipguard.MetricClips)
		if c < 3 || c > clips {
			t.Errorf("%s = %d, want at least the 3 that make a step and at most the %d the canceller counted", clipguard.MetricClips, c, clips)
		}
		e.stop(t)
		var sum strings.Builder
		e.a.writeSummary(&sum)
		if want := fmt.Sprintf("the robot's echo clipped the mic in %d frames of 10 ms; its voice was lowered %d time(s), %d dB down at exit", e.reg.Value(clipguard.MetricClips), down, backoff); !strings.Contains(sum.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum.String())
		}
	}
}

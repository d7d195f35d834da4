package capture

import (
	"testing"
	"time"
)

// adaptRecorder is a detector that calls a frame speech when its first
// sample is over 1 and records whether it was allowed to learn the
// background from each frame (vad.Adapter).
type adaptRecorder struct {
	adapt bool
	log   []bool
}

func (a *adaptRecorder) Kind() string     { return "recorder" }
func (a *adaptRecorder) Close() error     { return nil }
func (a *adaptRecorder) SetAdapt(on bool) { a.adapt = on }
func (a *adaptRecorder) Speech(f []int16, _ bool) bool {
	a.log = append(a.log, a.adapt)
	return f[0] > 1
}

// switchGuard is an onset guard that never finds a frame echo-only and
// reports EchoFree as its field says.
type switchGuard struct{ free bool }

func (*switchGuard) EchoDominated() bool { return false }
func (g *switchGuard) EchoFree() bool    { return g.free }

// With a canceller that reports EchoFree, an external detector learns the
// background only from echo-free frames, inside an utterance too: while
// the robot plays, its suppressor holds the room noise down with the
// echo, and a noise estimate learnt there takes the room's level for
// speech when the reply ends (the spectral detector in full duplex, pink
// noise at 10 dB: 40 false barge-ins in 100 replies, each 0.5 s after a
// reply). Without EchoFree the rule is the previous one (learn whenever
// the guard does not find the frame echo-only).
func TestDetectorLearnsOnlyFromEchoFreeFrames(t *testing.T) {
	for _, withFree := range []bool{true, false} {
		p := newBarePump(t, Config{Mode: ModeVAD, VAD: VADConfig{Detector: "spectral"}})
		rec := &adaptRecorder{adapt: true}
		p.det, p.detAdapt, p.detBG = rec, rec, nil
		g := &switchGuard{}
		if withFree {
			p.SetOnsetGuard(g)
		} else {
			p.SetOnsetGuard(echoOnlyNever{})
		}
		loud := make([]int16, 320)
		for i := range loud {
			loud[i] = 1000
		}
		quiet := make([]int16, 320) // the room: not digital silence, which the pump does not show a detector
		for i := range quiet {
			quiet[i] = 1
		}
		steps := []struct {
			free, speech bool
			n            int
		}{
			{true, false, 10},  // the room alone
			{false, false, 10}, // the robot plays
			{false, true, 20},  // the user talks over it: an utterance starts
			{true, true, 10},   // the robot stops, the user goes on
			{true, false, 5},
		}
		i := 0
		for _, st := range steps {
			g.free = st.free
			for range st.n {
				cur := &p.ring[p.head]
				if st.speech {
					copy(cur.samples, loud)
				} else {
					copy(cur.samples, quiet)
				}
				cur.ts = time.Duration(i) * frame20
				p.lastTS = cur.ts
				p.process(cur)
				i++
			}
		}
		if p.utterances.Value() == 0 {
			t.Fatalf("EchoFree %v: no utterance started: the scene does not reach the in-utterance path", withFree)
		}
		at := 0
		for _, st := range steps {
			for k := range st.n {
				want := st.free || !withFree
				if got := rec.log[at]; got != want {
					t.Errorf("EchoFree %v: frame %d (echo-free %v, speech %v, %d into the step): learning %v, want %v", withFree, at, st.free, st.speech, k, got, want)
				}
				at++
			}
		}
	}
}

// echoOnlyNever is an onset guard without EchoFree that never finds a frame
// echo-only.
type echoOnlyNever struct{}

func (echoOnlyNever) EchoDominated() bool { return false }

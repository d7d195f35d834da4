package capture

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/vad"
)

// The user talks over the robot for a second and stops; the robot's
// voice goes on, as loud in the decision signal as the user was (a
// canceller that removes little in a reverberant hall), and the echo
// guard calls it echo. The utterance ends the hangover after the user's
// last frame, not when the robot stops: a frame the guard calls echo is no
// evidence of the user. The same run with the guard calling nothing echo
// (the robot's voice is then the user's as far as the pump can tell)
// runs on to the end, so the scene tests the guard's verdict.
func TestUtteranceEndsWhileTheRobotGoesOn(t *testing.T) {
	const userFrom, userTo, echoTo = 0.6, 1.6, 5.0
	echoAmp := pcm.DBFSToRMS(-26)
	s := talker(7, echoTo+1, 150, func(t float64) float64 {
		if t >= userFrom && t < userTo {
			return 1
		}
		return 0
	}, func(t float64, rng *rand.Rand) float64 {
		if t >= userTo && t < echoTo {
			return echoAmp * rng.NormFloat64()
		}
		return 0
	})
	from, to := int(userTo*16000), int(echoTo*16000)
	for _, det := range []string{vad.KindEnergy, DetectorAuto} {
		t.Run(det, func(t *testing.T) {
			run := func(guard bool) (n int, last time.Duration) {
				clk := clock.NewFake()
				col := &collector{}
				src := &echoHeldRoom{pcmSource: pcmSource{clk: clk, s: s}, from: from, to: to}
				if !guard {
					src.to = from
				}
				p, err := NewPump(Config{Mode: ModeVAD, VAD: VADConfig{Detector: det}}, src, col, clk, metrics.NewRegistry(), nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Run(context.Background()); !errors.Is(err, hw.ErrClosed) {
					t.Fatalf("Run: %v", err)
				}
				u := col.utterances()
				if len(u) == 0 {
					return 0, 0
				}
				return len(u), u[0][len(u[0])-1].TS
			}
			if n, last := run(false); n != 1 || last < echoTo*time.Second {
				t.Fatalf("without the guard's verdict: %d utterances, the first's last frame at %v; want 1 running past %v (the scene does not test the verdict)", n, last, time.Duration(echoTo*float64(time.Second)))
			}
			n, last := run(true)
			want := time.Duration(userTo*float64(time.Second)) + time.Duration(DefaultHangoverMS+100)*time.Millisecond
			if n != 1 || last > want {
				t.Errorf("%d utterances, the first's last frame at %v; want 1 ending by %v (the user's end + the hangover)", n, last, want)
			}
		})
	}
}

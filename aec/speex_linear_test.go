//go:build speexdsp && cgo

package aec

import (
	"fmt"
	"testing"

	"github.com/robot-agent/robot-agent/room"
)

// linearERLE runs the linear filter beside WebRTC's canceller (tailMS) on
// pink noise through room rc (roomERLE).
func linearERLE(t testing.TB, tailMS int, rc room.Config, secs int) float64 {
	lin, err := newSpeexLinear(tailMS)
	if err != nil {
		t.Fatal(err)
	}
	defer lin.Close()
	return roomERLE(t, lin.Process, rc, secs)
}

// The linear filter's default tail covers a reverberant room that 128 ms
// does not: in an RT60 0.6 s room it removes 10 dB more of the echo
// (docs/benchmarks.md, "A linear filter that covers the room": there the
// guards find the user in the linear output). In a dry room without noise
// or drift the longer filter settles higher (more taps adapting: about
// 40 dB against 78), still beyond what drift and noise leave in the bench
// (25–40 dB).
func TestLinearTailCoversTheRoom(t *testing.T) {
	rc := room.Config{DelayMS: 10, EchoGainDB: 0, RT60: 0.6, Seed: 3}
	short, def := linearERLE(t, 128, rc, 30), linearERLE(t, DefaultLinearTailMS, rc, 30)
	t.Logf("RT60 0.6 s: 128 ms %.1f dB, default (%d ms) %.1f dB", short, DefaultLinearTailMS, def)
	if def < short+5 {
		t.Errorf("RT60 0.6 s: the default tail (%d ms) removes %.1f dB, 128 ms %.1f dB: want at least 5 dB more", DefaultLinearTailMS, def, short)
	}
	rc.RT60 = 0.1
	if dry := linearERLE(t, DefaultLinearTailMS, rc, 30); dry < 30 {
		t.Errorf("RT60 0.1 s: the default tail removes %.1f dB, want at least 30", dry)
	}
}

// A room whose echo arrives sooner than WebRTC's 48 ms lead (20 ms here):
// the far end then leads its echo by 20 ms only, and the dual path's
// linear filter, behind a line of the full 40 ms, would get the far end
// 20 ms after its echo, which no filter cancels. With the lead Source
// reports (SetLead) it gets it 8 ms before and removes the echo.
func TestDualLinearFilterCancelsASoonEcho(t *testing.T) {
	rc := room.Config{DelayMS: 20, EchoGainDB: 0, RT60: 0.3, Seed: 4}
	for _, told := range []bool{false, true} {
		lin, err := newSpeexLinear(DefaultLinearTailMS)
		if err != nil {
			t.Fatal(err)
		}
		d := newDual(&leadScaler{scaler{gain: 1, lead: webrtcLeadMS}}, lin, false)
		if told {
			d.SetLead(int(rc.DelayMS) * Rate / 1000)
		}
		got := roomERLE(t, func(out, mic, far []int16) {
			d.Process(out, mic, far)
			copy(out, d.Linear())
		}, rc, 20)
		d.Close()
		t.Logf("echo 20 ms after the far end, lead told %v: the linear filter removes %.1f dB", told, got)
		if told && got < 25 {
			t.Errorf("lead told: the linear filter removes %.1f dB, want at least 25", got)
		}
		if !told && got > 6 {
			t.Errorf("lead not told: the linear filter removes %.1f dB; the far end behind its echo should leave it nothing (is the test's room sooner than the lead?)", got)
		}
	}
}

// BenchmarkLinearFilter: one 10 ms frame through the linear filter at
// tail lengths (the cost grows with the tail's partitions).
func BenchmarkLinearFilter(b *testing.B) {
	for _, tail := range []int{128, 256, 384} {
		b.Run(fmt.Sprintf("tail%dms", tail), func(b *testing.B) {
			lin, err := newSpeexLinear(tail)
			if err != nil {
				b.Fatal(err)
			}
			defer lin.Close()
			n, _ := room.NewNoise(room.NoisePink, Rate, 5)
			buf := make([]float32, FrameSamples)
			far := make([]int16, FrameSamples)
			mic := make([]int16, FrameSamples)
			out := make([]int16, FrameSamples)
			n.Fill(buf)
			for i := range far {
				far[i] = int16(buf[i] * 3000)
				mic[i] = far[i] / 2
			}
			b.ReportAllocs()
			for b.Loop() {
				lin.Process(out, mic, far)
			}
		})
	}
}

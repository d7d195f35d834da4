package aec

import (
	"errors"
	"math"
	"testing"

	"github.com/robot-agent/robot-agent/room"
)

// erle runs canceller kind on white-ish noise through a room and returns
// the echo return loss enhancement over the last half.
func erle(t *testing.T, kind string, rc room.Config, secs int) float64 {
	t.Helper()
	c, err := New(Options{Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return roomERLE(t, c.Process, rc, secs)
}

// roomERLE runs process (out, mic, far; 10 ms frames) on pink noise played
// through room rc for secs seconds and returns the echo return loss
// enhancement (mic over output energy) over the last half.
func roomERLE(t testing.TB, process func(out, mic, far []int16), rc room.Config, secs int) float64 {
	t.Helper()
	p, err := room.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := room.NewNoise(room.NoisePink, Rate, 5)
	buf := make([]float32, FrameSamples)
	far := make([]int16, FrameSamples)
	mic := make([]int16, FrameSamples)
	out := make([]int16, FrameSamples)
	var em, eo float64
	frames := secs * 100
	for f := range frames {
		n.Fill(buf)
		for i := range far {
			far[i] = int16(buf[i] * 3000)
		}
		p.Play(int64(f*FrameSamples), far, Rate)
		clear(mic)
		p.Capture(int64(f*FrameSamples), mic)
		process(out, mic, far)
		if f >= frames/2 {
			for i := range mic {
				em += float64(mic[i]) * float64(mic[i])
				eo += float64(out[i]) * float64(out[i])
			}
		}
	}
	return 10 * math.Log10(em/max(eo, 1))
}

func TestCancellersReduceEcho(t *testing.T) {
	for _, k := range Available() {
		got := erle(t, k, room.Config{DelayMS: 10, EchoGainDB: 0, RT60: 0.1}, 8)
		want := 20.0
		if k == KindNone {
			if math.Abs(got) > 0.01 {
				t.Errorf("none: ERLE %v, want 0", got)
			}
			continue
		}
		if got < want {
			t.Errorf("%s: ERLE %.1f dB, want >= %v", k, got, want)
		}
		t.Logf("%s: ERLE %.1f dB", k, got)
	}
}

func TestStubsFailLoudly(t *testing.T) {
	for _, k := range []string{KindWebRTC, KindSpeex} {
		_, err := New(Options{Kind: k})
		built := false
		for _, a := range Available() {
			built = built || a == k
		}
		if built != (err == nil) {
			t.Errorf("%s: built in %v, New error %v", k, built, err)
		}
		if !built && !errors.Is(err, ErrNotBuiltIn) {
			t.Errorf("%s: error %v does not wrap ErrNotBuiltIn", k, err)
		}
	}
	if _, err := New(Options{Kind: "magic"}); !errors.Is(err, ErrConfig) {
		t.Errorf("unknown kind: %v", err)
	}
}

// The dual-path uplink needs speex's filter: without it New says so and the
// agent's default falls back to the canceller's output; it is the default
// only with WebRTC (measured there).
func TestUplinkNeedsSpeex(t *testing.T) {
	if got := BestUplink(KindSpeex); got != UplinkCanceller {
		t.Errorf("BestUplink(speex) = %q, want %q", got, UplinkCanceller)
	}
	if got := BestUplink(KindNone); got != UplinkCanceller {
		t.Errorf("BestUplink(none) = %q, want %q", got, UplinkCanceller)
	}
	want := UplinkCanceller
	if speexBuiltIn {
		want = DefaultUplink
	}
	if got := BestUplink(KindWebRTC); got != want {
		t.Errorf("BestUplink(webrtc) = %q, want %q (speex built in: %v)", got, want, speexBuiltIn)
	}
	if !webrtcBuiltIn {
		return
	}
	c, err := New(Options{Kind: KindWebRTC, Uplink: UplinkLinearGated})
	if speexBuiltIn {
		if err != nil {
			t.Fatal(err)
		}
		if l, ok := c.(linearOuter); !ok || !l.Gated() || len(l.Linear()) != FrameSamples {
			t.Errorf("webrtc with a linear-gated uplink: %T", c)
		}
		c.Close()
	} else if !errors.Is(err, ErrNotBuiltIn) {
		t.Errorf("webrtc with a linear uplink and no speex: %v, want ErrNotBuiltIn", err)
	}
}

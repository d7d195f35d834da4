package duck_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/aec"
	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/resample"
	"github.com/robot-agent/robot-agent/duck"
	"github.com/robot-agent/robot-agent/duplex"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/room"
)

// The ducking measurement (docs/benchmarks.md, "Local ducking"): the real
// capture chain (aec.Source with the best canceller built in → capture.Pump
// with its onset guard) on a simulated room, with the robot's reply passing
// through a duck.Sink placed before the reference tap, as the agent wires
// it. An utterance start while the robot plays ducks the reply. The user
// talks over the second reply of each trial (the first lets the canceller
// converge) at a speech-to-echo ratio of 0 dB (DUCK_MEASURE_SER), 0 dB echo
// gain, pink noise 30 dB below the user (the energy VAD does not hear a
// user 10 dB above the noise: docs/benchmarks.md). False ducks: far end
// only, pink noise 10 dB below the nominal user level at SER -10 dB.
//
// Figures per configuration (ducking off, and on at several depths):
// the near-end correlation of what the uplink carried in the confirmation
// window (from the utterance start, when the duck happens, for 600 ms: what
// a cloud gateway's ASR hears before it decides to interrupt) and of the
// whole phrase; and, far end only, utterance starts per 100 replies (each
// would be a false duck).
//
// DUCK_MEASURE=1 runs 10 trials at four depths and 100 far-only replies
// and prints the table; otherwise one trial checks that ducking at the
// default depth does not hurt.

const (
	frameMS  = 20
	micFrame = 16000 * frameMS / 1000
	farFrame = 24000 * frameMS / 1000
)

// latencySink is the device below the tap: it reports one frame of device
// latency (Tap then places a block at the clock time of its Write, when
// the room plays it) and keeps the last block written.
type latencySink struct{ last []int16 }

func (s *latencySink) Format() hw.AudioFormat       { return hw.TTSFormat }
func (s *latencySink) Close() error                 { return nil }
func (s *latencySink) DeviceLatency() time.Duration { return frameMS * time.Millisecond }
func (s *latencySink) Write(p []int16) error {
	copy(s.last, p)
	return nil
}

// scene is one trial's timeline (16 kHz mic samples).
type scene struct {
	far       []int16 // 24 kHz, one reply
	farStarts []int   // mic sample index of each reply
	replyLen  int     // in mic samples
	near      []int16 // user timeline (16 kHz), zeros where silent
	phrase    [2]int  // the phrase in near
	total     int
	room      room.Config
}

// micSrc plays the far end through duckSink (→ tap → device) and the room,
// and captures near end + echo + noise, one frame per Read.
type micSrc struct {
	sc   *scene
	clk  *clock.Fake
	out  hw.AudioSink // the duck (or the tap directly)
	dev  *latencySink
	path *room.Path
	pos  int
	buf  []int16
}

func (m *micSrc) Format() hw.AudioFormat { return hw.MicFormat }
func (m *micSrc) Close() error           { return nil }
func (m *micSrc) Read(dst []int16) (int, error) {
	if m.pos+micFrame > m.sc.total || len(dst) != micFrame {
		return 0, hw.ErrClosed
	}
	clear(m.buf)
	for _, st := range m.sc.farStarts {
		if m.pos >= st && m.pos < st+m.sc.replyLen {
			off := (m.pos - st) * 24000 / 16000
			copy(m.buf, m.sc.far[min(off, len(m.sc.far)):])
		}
	}
	if err := m.out.Write(m.buf); err != nil {
		return 0, err
	}
	m.path.Play(int64(m.pos), m.dev.last, 24000)
	copy(dst, m.sc.near[m.pos:m.pos+micFrame])
	m.path.Capture(int64(m.pos), dst)
	m.pos += micFrame
	m.clk.Advance(frameMS * time.Millisecond)
	return micFrame, nil
}

// uplink records the delivered frames; an utterance start ducks.
type uplink struct {
	t0     time.Duration
	clk    *clock.Fake
	audio  []int16
	starts []int // mic sample index of the decision
	duck   *duck.Sink
}

func (u *uplink) SendMic(f *capture.Frame) bool {
	k := int((f.TS - u.t0) / (frameMS * time.Millisecond))
	if len(f.Samples) > 0 && k >= 0 && k*micFrame < len(u.audio) {
		copy(u.audio[k*micFrame:], f.Samples)
	}
	if f.Flag == protocol.FlagStart {
		u.starts = append(u.starts, int((u.clk.Mono()-u.t0)*16000/time.Second))
		if u.duck != nil {
			u.duck.Duck()
		}
	}
	return true
}

// runScene runs the chain over sc; depthDB 0 is ducking off.
func runScene(t *testing.T, sc *scene, depthDB float64) *uplink {
	t.Helper()
	clk := clock.NewFake()
	ref, err := aec.NewReference(clk, 24000)
	if err != nil {
		t.Fatal(err)
	}
	canc, err := aec.New(aec.Options{Kind: aec.Best()})
	if err != nil {
		t.Fatal(err)
	}
	defer canc.Close()
	dev := &latencySink{last: make([]int16, farFrame)}
	var out hw.AudioSink = aec.NewTap(dev, ref, clk)
	u := &uplink{t0: clk.Mono(), clk: clk, audio: make([]int16, sc.total)}
	if depthDB > 0 {
		d, err := duck.New(out, duck.Config{DepthDB: depthDB, Hold: 2 * time.Second}, clk, nil)
		if err != nil {
			t.Fatal(err)
		}
		out, u.duck = d, d
	}
	path, err := room.New(sc.room)
	if err != nil {
		t.Fatal(err)
	}
	src := &micSrc{sc: sc, clk: clk, out: out, dev: dev, path: path, buf: make([]int16, farFrame)}
	// The agent's defaults (duplex config): drift compensation and the
	// adaptive guard; the noise guard defaults in SourceConfig.
	asrc := aec.NewSource(src, ref, canc, clk, aec.SourceConfig{DriftCompensation: aec.DefaultDriftCompensation, GuardMarginDB: aec.DefaultGuardMarginDB, LinearGuardDB: aec.DefaultLinearGuardDB})
	cc := capture.Config{Mode: capture.ModeVAD, FrameMS: frameMS}
	pump, err := capture.NewPump(cc, asrc, u, clk, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pump.Close()
	pump.SetOnsetGuard(asrc)
	if err := pump.Run(context.Background()); err != nil && !errors.Is(err, hw.ErrClosed) {
		t.Fatal(err)
	}
	return u
}

// newScene builds trial seed's timeline: lead 1 s, replies of replyS
// seconds with 1 s gaps; with near, the user talks once over the second
// reply, 30..60 % into it.
func newScene(t *testing.T, seed uint64, replies int, replyS float64, near bool, snrDB, serDB float64) *scene {
	t.Helper()
	far16 := speech(t, farTexts[int(seed)%len(farTexts)], "en", replyS, seed)
	rs, err := resample.New(16000, 24000, resample.QualityHigh)
	if err != nil {
		t.Fatal(err)
	}
	far := make([]int16, rs.OutLen(len(far16)))
	far = far[:rs.Process(far, far16)]
	duplex.Scale(far, -20-duplex.ActiveLevel(far, 24000))
	const echoGainDB = 0
	nearLevel := -20.0 + echoGainDB + serDB
	rc := room.Moderate()
	rc.EchoGainDB, rc.Noise, rc.NoiseDBFS, rc.Seed = echoGainDB, room.NoisePink, nearLevel-snrDB, seed
	sc := &scene{far: far, replyLen: len(far16), room: rc}
	lead, gap := 16000, 16000
	for r := range replies {
		sc.farStarts = append(sc.farStarts, lead+r*(sc.replyLen+gap))
	}
	sc.total = (lead + replies*(sc.replyLen+gap)) / micFrame * micFrame
	sc.near = make([]int16, sc.total)
	if near {
		ph := speech(t, nearTexts[int(seed)%len(nearTexts)], "en+f3", 1.5, seed+1000)
		duplex.Scale(ph, nearLevel-duplex.ActiveLevel(ph, 16000))
		rng := rand.New(rand.NewPCG(seed, 7))
		at := sc.farStarts[1] + sc.replyLen*3/10 + rng.IntN(sc.replyLen*3/10)
		n := copy(sc.near[at:], ph)
		sc.phrase = [2]int{at, at + n}
	}
	return sc
}

// Varied speech: espeak-ng sentences (the simulator's speech-like signal
// when espeak-ng is missing), cut or padded to the wanted length.
var (
	farTexts = []string{
		"Hello, I am your robot. The quick brown fox jumps over the lazy dog, and then it runs into the forest.",
		"Today the weather will be sunny in the morning, with clouds and some rain later in the afternoon.",
		"I can read you the news, play some music, or tell you a story about a little robot who wanted to sing.",
		"Your next meeting starts at three o'clock in the small room on the second floor, next to the kitchen.",
	}
	nearTexts = []string{"Stop, stop, that is enough.", "No, the other one please.", "Wait a moment, robot.", "Hey, listen to me now."}
)

func speech(t *testing.T, text, voice string, seconds float64, seed uint64) []int16 {
	t.Helper()
	n := int(seconds * 16000)
	a, err := duplex.Espeak(text, voice)
	if err != nil {
		return duplex.Synthetic(time.Duration(seconds*float64(time.Second)), seed)
	}
	pcm := duplex.Trim(duplex.ToMono(a, 16000), 16000)
	out := make([]int16, n)
	copy(out, pcm)
	return out
}

// corr is the best normalised correlation of got[from:to] with want[from:to]
// delayed by 0..20 ms (the canceller buffers a little).
func corr(got, want []int16, from, to int) float64 {
	best := -1.0
	for lag := 0; lag <= 320; lag += 2 {
		var c, eg, ew float64
		for i := from; i < to && i+lag < len(got); i++ {
			a, b := float64(got[i+lag]), float64(want[i])
			c, eg, ew = c+a*b, eg+a*a, ew+b*b
		}
		if eg > 0 && ew > 0 {
			best = max(best, c/math.Sqrt(eg*ew))
		}
	}
	return best
}

type figures struct {
	window, phrase []float64
	detected       int
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(max(len(v), 1))
}

func TestDuckingMeasurement(t *testing.T) {
	if aec.Best() == aec.KindNone {
		t.Skip("no echo canceller built in (build tag webrtcapm or speexdsp): local ducking is wired only in full duplex")
	}
	full := os.Getenv("DUCK_MEASURE") != ""
	// By default (make test, under -race): one trial, off against the
	// default depth.
	trials, farOnly, serDB := 1, 0, 0.0
	depths := []float64{0, duck.DefaultDepthDB}
	if full {
		trials, farOnly = 10, 100
		depths = []float64{0, 6, 12, 20}
		if v, err := strconv.ParseFloat(os.Getenv("DUCK_MEASURE_SER"), 64); err == nil {
			serDB = v
		}
	}
	res := make([]figures, len(depths))
	window := 600 * 16 // 600 ms
	for seed := uint64(1); seed <= uint64(trials); seed++ {
		sc := newScene(t, seed, 2, 6, true, 30, serDB)
		var start int = -1
		for i, d := range depths {
			u := runScene(t, sc, d)
			st := -1
			for _, s := range u.starts {
				if s >= sc.phrase[0]-800 && s < sc.phrase[1] {
					st = s
					break
				}
			}
			if i == 0 {
				start = st
				if testing.Verbose() {
					t.Logf("seed %d: phrase %d..%d, starts %v", seed, sc.phrase[0], sc.phrase[1], u.starts)
				}
			}
			if st < 0 || start < 0 {
				continue // not detected: no duck to measure
			}
			res[i].detected++
			from := start
			res[i].window = append(res[i].window, corr(u.audio, sc.near, from, min(from+window, sc.phrase[1])))
			res[i].phrase = append(res[i].phrase, corr(u.audio, sc.near, sc.phrase[0], sc.phrase[1]))
		}
	}
	falseStarts := -1
	if farOnly > 0 {
		sc := newScene(t, 99, farOnly, 3, false, 10, -10)
		u := runScene(t, sc, 12)
		falseStarts = len(u.starts)
	}
	var b []byte
	b = fmt.Appendf(b, "ducking at SER %.0f dB, echo gain 0 dB, pink noise SNR 30 dB, %d trials (canceller %s):\n", serDB, trials, aec.Best())
	b = fmt.Appendf(b, "| depth | detected | near corr, 600 ms after onset | near corr, whole phrase |\n| --- | --- | --- | --- |\n")
	for i, d := range depths {
		name := "off"
		if d > 0 {
			name = strconv.FormatFloat(d, 'f', 0, 64) + " dB"
		}
		b = fmt.Appendf(b, "| %s | %d/%d | %.3f | %.3f |\n", name, res[i].detected, trials, mean(res[i].window), mean(res[i].phrase))
	}
	if falseStarts >= 0 {
		b = fmt.Appendf(b, "far end only, %d replies: %d utterance starts (false ducks)\n", farOnly, falseStarts)
	}
	t.Log("\n" + string(b))
	if res[0].detected == 0 {
		t.Fatal("no barge-in detected in any trial: nothing measured")
	}
	// Ducking lowers the echo under the user's voice: what the uplink
	// carries in the window cannot get less like the user.
	for i, d := range depths {
		if d != duck.DefaultDepthDB {
			continue
		}
		if off, on := mean(res[0].window), mean(res[i].window); on < off-0.01 {
			t.Errorf("near-end correlation after onset: %.3f with %v dB ducking < %.3f without", on, d, off)
		}
	}
}

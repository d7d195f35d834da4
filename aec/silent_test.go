package aec

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
)

// echoMic captures the room's noise and, while echo > 0, a stand-in for
// the robot's echo at that amplitude (uniform noise: the guards work on
// energies), and a user at amplitude user.
type echoMic struct {
	clk               *clock.Fake
	rng               *rand.Rand
	noise, echo, user int
}

func (m *echoMic) Format() hw.AudioFormat { return hw.MicFormat }
func (m *echoMic) Close() error           { return nil }
func (m *echoMic) Read(dst []int16) (int, error) {
	m.clk.Advance(time.Duration(len(dst)) * time.Second / Rate)
	for i := range dst {
		v := m.rng.IntN(2*m.noise+1) - m.noise
		if m.echo > 0 {
			v += m.rng.IntN(2*m.echo+1) - m.echo
		}
		if m.user > 0 {
			v += m.rng.IntN(2*m.user+1) - m.user
		}
		dst[i] = int16(max(min(v, 32767), -32768))
	}
	return len(dst), nil
}

// farScaler is a scaler that records whether the last far end it was given
// was all silence.
type farScaler struct {
	scaler
	farSilent bool
}

func (c *farScaler) Process(out, near, far []int16) {
	c.farSilent = true
	for _, v := range far {
		if v != 0 {
			c.farSilent = false
			break
		}
	}
	c.scaler.Process(out, near, far)
}

// silentRig is a Source with the silent-speaker detector (or not) over an
// echoMic, and a far end whose level moves like speech's (a period of
// 400 ms, around base); the echo follows it a read later (the 20 ms echo
// path), echoGain of it, while the speaker plays.
type silentRig struct {
	c                  *farScaler
	tap                *Tap
	mic                *echoMic
	s                  *Source
	rng                *rand.Rand
	blk, silent, frame []int16
	k                  int
	base, echoGain     float64
}

func newSilentRig(on bool, noise int, base float64, seed uint64) *silentRig {
	clk := clock.NewFake()
	ref, _ := NewReference(clk, 24000)
	r := &silentRig{c: &farScaler{scaler: scaler{gain: 1}}, base: base,
		mic: &echoMic{clk: clk, rng: rand.New(rand.NewPCG(seed, seed+1)), noise: noise},
		rng: rand.New(rand.NewPCG(seed+2, seed+3)),
		blk: make([]int16, 480), silent: make([]int16, 480), frame: make([]int16, 320)}
	r.tap = NewTap(nullSpk{}, ref, clk)
	r.s = NewSource(r.mic, ref, r.c, clk, SourceConfig{FixedDelayMS: 20, DoubleTalkDB: DefaultDoubleTalkDB, GuardMarginDB: DefaultGuardMarginDB, SilentSpeaker: on})
	return r
}

func (r *silentRig) level(k int) float64 { return r.base * (1 + 0.6*math.Sin(2*math.Pi*float64(k)/20)) }

// read plays a block (the far end, or silence), the canceller removing
// reductionDB, and reads the mic; it reports the Source's EchoDominated.
func (r *silentRig) read(far bool, reductionDB float64) bool {
	r.c.gain = math.Pow(10, -reductionDB/20)
	r.mic.echo = int(r.echoGain * r.level(r.k-1))
	if far {
		a := int(r.level(r.k))
		for i := range r.blk {
			r.blk[i] = int16(r.rng.IntN(2*a+1) - a)
		}
		r.tap.Write(r.blk)
		r.k++
	} else {
		r.tap.Write(r.silent)
	}
	r.s.Read(r.frame)
	return r.s.EchoDominated()
}

// A speaker that plays nothing while its device says it plays (an
// amplifier without power): within a few hundred milliseconds the Source
// takes it for silent from the learned echo path, gives the canceller
// silence as the far end from then on, and holds the reads without echo
// meanwhile; a user louder than the echo is heard while the speaker is
// silent; when the echo comes back the reads are held until the
// canceller is given the far end again, within a few reads. A volume
// turned down 12 dB, with the echo still over the noise, is given the
// canceller again within a second; nothing changes with SilentSpeaker
// off.
func TestSourceFindsASilentSpeaker(t *testing.T) {
	for _, on := range []bool{true, false} {
		r := newSilentRig(on, 300, 2500, 7)
		s, c, mic, read := r.s, r.c, r.mic, r.read
		for range 100 { // the room alone
			read(false, 0)
		}
		r.echoGain = 1.2 // the robot speaks: its echo 20 dB over the noise, 30 dB removed
		for range 300 {
			read(true, 30)
		}
		if n := s.SilentSpeakers(); n != 0 || c.farSilent {
			t.Fatalf("SilentSpeaker %v: a speaker that plays was taken for silent %d times (far end silent %v)", on, n, c.farSilent)
		}
		// The amplifier loses power: the canceller removes nothing.
		r.echoGain = 0
		found := -1
		for i := range 40 {
			if !read(true, 0) && (found < 0 || i < found+2) {
				t.Errorf("SilentSpeaker %v: read %d without echo not held (taken for silent at read %d)", on, i, found)
			}
			if found < 0 && s.SilentSpeakers() == 1 {
				found = i
			}
		}
		if !on {
			if found >= 0 || c.farSilent {
				t.Errorf("SilentSpeaker off: the speaker was taken for silent (at read %d; far end silent %v)", found, c.farSilent)
			}
			continue
		}
		if found < 0 || found > 20 {
			t.Fatalf("a silent speaker was taken for silent at read %d, want within 20 reads (400 ms)", found)
		}
		if !c.farSilent {
			t.Fatal("while the speaker is silent the canceller is still given the far end")
		}
		mic.user = 20000 // a user 16 dB over the echo
		for i := range 5 {
			if read(true, 0) {
				t.Errorf("read %d of a user 16 dB over the echo, while the speaker is silent: held", i)
			}
		}
		mic.user = 0
		for range 10 {
			read(true, 0)
		}
		// The amplifier is back; the canceller is given silence at first.
		r.echoGain = 1.2
		back := -1
		for i := range 20 {
			reduction := 0.0
			if back >= 0 {
				reduction = 30 // its filter, kept through the silence
			}
			if !read(true, reduction) {
				t.Errorf("read %d after the speaker came back: not held (canceller given the far end again at read %d)", i, back)
			}
			if back < 0 && !c.farSilent {
				back = i
			}
		}
		if back < 0 || back > 20 {
			t.Fatalf("the speaker back: the canceller given the far end again at read %d, want within 20 reads (two windows of 200 ms)", back)
		}
		if n := s.SilentSpeakers(); n != 1 {
			t.Errorf("SilentSpeakers %d, want 1", n)
		}
		// Past the hold after it came back (silentAfterMS), a volume
		// turned down 12 dB, the echo still 8 dB over the noise: it may be
		// taken for silent a moment, but the quieter echo still follows
		// the far end, so the canceller is given the far end again within
		// a second and keeps it (not stuck on silence while the robot
		// talks on, quieter).
		for range 150 {
			read(true, 30)
		}
		n0 := s.SilentSpeakers()
		r.echoGain = 0.3
		var fedLast int
		for range 150 {
			read(true, 30)
			if !c.farSilent {
				fedLast++
			} else {
				fedLast = 0
			}
		}
		if fedLast < 100 || s.SilentSpeakers() > n0+1 {
			t.Errorf("a speaker turned down 12 dB: the canceller given the far end for the last %d of 150 reads, want 100 or more; taken for silent %d times", fedLast, s.SilentSpeakers()-n0)
		}
	}
}

// A user who talks over the robot for seconds, 15 dB over its echo, must
// not teach the detector an echo path that loud: when they stop, the
// mic holds the echo again, far short of such a path's prediction, and
// the speaker was taken for silent (duplex-bench, a user 10-15 dB over a
// quiet robot's echo: 12-21 times in 20 replies, and with 9 s of speech
// 17-39 times, barge-ins missed while the reads were held). The speaker
// is still found silent when it is.
func TestSilentSpeakerIsNotLearntFromAUserOverTheEcho(t *testing.T) {
	r := newSilentRig(true, 100, 1000, 3)
	read := func(far bool) { r.read(far, 30) }
	for range 100 { // the room alone
		read(false)
	}
	r.echoGain = 1 // the robot speaks, its echo 20 dB over the noise
	for range 200 {
		read(true)
	}
	r.mic.user = 5600 // 15 dB over the echo, for 3 s
	for range 150 {
		read(true)
	}
	r.mic.user = 0
	for range 150 {
		read(true)
	}
	if n := r.s.SilentSpeakers(); n != 0 {
		t.Fatalf("after a user 15 dB over the echo for 3 s: the speaker taken for silent %d times", n)
	}
	r.echoGain = 0 // the amplifier loses power
	for range 20 {
		read(true)
		if r.s.SilentSpeakers() == 1 {
			return
		}
	}
	t.Fatal("a silent speaker after the user was not found within 20 reads")
}

package aec

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/hw"
)

type fakeMic struct{ clk *clock.Fake }

func (m fakeMic) Format() hw.AudioFormat { return hw.MicFormat }
func (m fakeMic) Close() error           { return nil }
func (m fakeMic) Read(dst []int16) (int, error) {
	m.clk.Advance(time.Duration(len(dst)) * time.Second / Rate)
	for i := range dst {
		dst[i] = int16(i * 7)
	}
	return len(dst), nil
}

type nullSpk struct{}

func (nullSpk) Format() hw.AudioFormat { return hw.TTSFormat }
func (nullSpk) Write([]int16) error    { return nil }
func (nullSpk) Close() error           { return nil }

// The fast lane: the speaker tap and the cancelling source allocate nothing
// per frame, with every canceller this build has.
func TestTapAndSourceDoNotAllocate(t *testing.T) {
	for _, k := range Available() {
		for _, dc := range []bool{false, true} {
			testTapAndSourceDoNotAllocate(t, Options{Kind: k}, dc)
			if k != KindNone && speexBuiltIn {
				testTapAndSourceDoNotAllocate(t, Options{Kind: k, Uplink: UplinkLinear}, dc)
				testTapAndSourceDoNotAllocate(t, Options{Kind: k, Uplink: UplinkLinearGated}, dc)
			}
		}
	}
}

func testTapAndSourceDoNotAllocate(t *testing.T, o Options, dc bool) {
	k := o.Kind + "/" + o.Uplink
	{
		clk := clock.NewFake()
		ref, err := NewReference(clk, 24000)
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		tap := NewTap(nullSpk{}, ref, clk)
		src := NewSource(fakeMic{clk}, ref, c, clk, SourceConfig{DriftCompensation: dc, GuardMarginDB: 10, LinearGuardDB: 10, SilentSpeaker: true})
		if dc {
			src.ratio = 1 - 100e-6 // the fractional reader runs
		}
		blk, frame := make([]int16, 480), make([]int16, 320)
		for i := range blk {
			blk[i] = int16(i * 13)
		}
		step := func() {
			tap.Write(blk)
			src.Read(frame)
		}
		for range 200 { // past the delay estimator's first updates
			step()
		}
		if a := testing.AllocsPerRun(300, step); a != 0 {
			t.Errorf("%s (drift compensation %v): %v allocs per 20 ms frame", k, dc, a)
		}
		c.Close()
	}
}

// The far end comes back at the time it was played, and a pause in the
// speaker's writes reads as silence.
func TestReferenceAlignsOnPlayTime(t *testing.T) {
	clk := clock.NewFake()
	ref, _ := NewReference(clk, Rate)
	blk := make([]int16, 160)
	for i := range blk {
		blk[i] = 1000
	}
	ref.Played(blk, time.Second) // index 0 = 1 s
	clk.Advance(10 * time.Millisecond)
	ref.Played(blk, time.Second+10*time.Millisecond) // contiguous
	clk.Advance(190 * time.Millisecond)
	ref.Played(blk, time.Second+200*time.Millisecond) // after a pause in the writes
	got := make([]int16, 160)
	for _, tc := range []struct {
		at   time.Duration
		want int16
	}{
		{time.Second, 1000}, {time.Second + 10*time.Millisecond, 1000}, {time.Second + 100*time.Millisecond, 0},
		{time.Second + 200*time.Millisecond, 1000}, {time.Second + 300*time.Millisecond, 0}, {500 * time.Millisecond, 0},
	} {
		ref.Read(got, tc.at)
		// Away from the resampler's edges the level is the block's.
		if v := got[80]; (tc.want == 0) != (v == 0) || tc.want != 0 && (v < 900 || v > 1100) {
			t.Errorf("at %v: sample %d, want about %d", tc.at, v, tc.want)
		}
	}
}

// scaler is a fake canceller that multiplies the mic by gain: an echo
// reduction of -20·log10(gain) dB.
type scaler struct {
	gain float64
	lead int
}

func (s *scaler) Kind() string { return "scaler" }
func (s *scaler) Process(out, near, _ []int16) {
	for i, v := range near {
		out[i] = int16(float64(v) * s.gain)
	}
}
func (s *scaler) Reset()       {}
func (s *scaler) Close() error { return nil }

type leadScaler struct{ scaler }

func (s *leadScaler) LeadMS() int { return s.lead }

func TestSourceTakesTheCancellersLead(t *testing.T) {
	for _, tc := range []struct {
		c        Canceller
		margin   int
		wantBulk int // ms
	}{
		{&scaler{gain: 1}, 0, 50 - defaultMarginMS},
		{&leadScaler{scaler{gain: 1, lead: 30}}, 0, 20},
		{&leadScaler{scaler{gain: 1, lead: 30}}, 10, 40}, // an explicit margin wins
	} {
		clk := clock.NewFake()
		ref, _ := NewReference(clk, Rate)
		s := NewSource(fakeMic{clk}, ref, tc.c, clk, SourceConfig{FixedDelayMS: 50, MarginMS: tc.margin})
		if got := s.bulk * 1000 / Rate; got != tc.wantBulk {
			t.Errorf("%T margin %d: far end shifted by %d ms, want %d", tc.c, tc.margin, got, tc.wantBulk)
		}
	}
}

// The onset guard's threshold follows the canceller's typical echo
// reduction: with 30 dB removed on echo-only reads, a read where only
// 15 dB were removed holds something else (the user) even though 15 dB is
// above the fixed double_talk_db; with a fixed threshold it counts as echo.
func TestGuardFollowsTheCancellersReduction(t *testing.T) {
	for _, tc := range []struct {
		margin   float64
		wantEcho bool
	}{{10, false}, {0, true}} {
		clk := clock.NewFake()
		ref, _ := NewReference(clk, 24000)
		c := &scaler{gain: math.Pow(10, -30.0/20)}
		tap := NewTap(nullSpk{}, ref, clk)
		s := NewSource(fakeMic{clk}, ref, c, clk, SourceConfig{FixedDelayMS: 20, GuardMarginDB: tc.margin})
		blk, frame := make([]int16, 480), make([]int16, 320)
		for i := range blk {
			blk[i] = int16(i * 13)
		}
		step := func() {
			tap.Write(blk)
			s.Read(frame)
		}
		for i := range 600 {
			// One read in five of double talk (10 dB removed) must not
			// drag the threshold down much.
			c.gain = math.Pow(10, -30.0/20)
			if i%5 == 4 {
				c.gain = math.Pow(10, -10.0/20)
			}
			step()
		}
		c.gain = math.Pow(10, -30.0/20)
		step()
		if !s.EchoDominated() {
			t.Fatalf("margin %v: a read with 30 dB removed is not echo-dominated (guard %.1f dB)", tc.margin, s.GuardDB())
		}
		c.gain = math.Pow(10, -15.0/20)
		step()
		if s.EchoDominated() != tc.wantEcho {
			t.Errorf("margin %v: read with 15 dB removed: echo-dominated %v, want %v (guard %.1f dB)", tc.margin, s.EchoDominated(), tc.wantEcho, s.GuardDB())
		}
		if g := s.GuardDB(); tc.margin > 0 && (g < 17 || g > 21) {
			t.Errorf("guard threshold %.1f dB, want about 30 - %v", g, tc.margin)
		}
	}
}

type dtScaler struct {
	scaler
	calls []bool
}

func (s *dtScaler) DoubleTalk(on bool) { s.calls = append(s.calls, on) }

// A canceller that adapts to double talk hears of it after two reads of
// the user over the far end, and of its end after half a second of echo.
func TestSourceSignalsDoubleTalk(t *testing.T) {
	clk := clock.NewFake()
	ref, _ := NewReference(clk, 24000)
	c := &dtScaler{scaler: scaler{gain: math.Pow(10, -30.0/20)}}
	tap := NewTap(nullSpk{}, ref, clk)
	s := NewSource(fakeMic{clk}, ref, c, clk, SourceConfig{FixedDelayMS: 20})
	blk, frame := make([]int16, 480), make([]int16, 320)
	for i := range blk {
		blk[i] = int16(i * 13)
	}
	reads := func(n int, reductionDB float64) {
		c.gain = math.Pow(10, -reductionDB/20)
		for range n {
			tap.Write(blk)
			s.Read(frame)
		}
	}
	reads(300, 30)
	if len(c.calls) != 0 {
		t.Fatalf("double talk signalled on echo only: %v", c.calls)
	}
	reads(1, 5)
	if len(c.calls) != 0 {
		t.Fatalf("one read of double talk switched: %v", c.calls)
	}
	reads(1, 5)
	if len(c.calls) != 1 || !c.calls[0] {
		t.Fatalf("after two reads of double talk: %v, want [true]", c.calls)
	}
	reads(dtOffReads-1, 30)
	if len(c.calls) != 1 {
		t.Fatalf("double talk ended too early: %v", c.calls)
	}
	reads(1, 30)
	if len(c.calls) != 2 || c.calls[1] {
		t.Fatalf("after %d echo reads: %v, want [true false]", dtOffReads, c.calls)
	}
}

// levelMic captures uniform noise at amplitude amp (the room noise, or
// louder: the user).
type levelMic struct {
	clk  *clock.Fake
	rng  *rand.Rand
	amp  int
	clip bool // a sample at full scale in every 10 ms frame (the converter saturates)
}

func (m *levelMic) Format() hw.AudioFormat { return hw.MicFormat }
func (m *levelMic) Close() error           { return nil }
func (m *levelMic) Read(dst []int16) (int, error) {
	m.clk.Advance(time.Duration(len(dst)) * time.Second / Rate)
	for i := range dst {
		dst[i] = int16(m.rng.IntN(2*m.amp+1) - m.amp)
		if m.clip && i%FrameSamples == 7 {
			dst[i] = 32767
		}
	}
	return len(dst), nil
}

// guardRig is a Source over a canceller that removes a set amount (dB) of
// a mic capturing uniform noise, for the guards' tests.
type guardRig struct {
	s                  *Source
	mic                *levelMic
	c                  *scaler
	tap                *Tap
	rng                *rand.Rand
	silent, blk, frame []int16
}

func newGuardRig(cfg SourceConfig) *guardRig {
	clk := clock.NewFake()
	ref, _ := NewReference(clk, 24000)
	r := &guardRig{c: &scaler{gain: 1}, mic: &levelMic{clk: clk, rng: rand.New(rand.NewPCG(3, 4)), amp: 2000},
		rng: rand.New(rand.NewPCG(5, 6)), silent: make([]int16, 480), blk: make([]int16, 480), frame: make([]int16, 320)}
	r.tap = NewTap(nullSpk{}, ref, clk)
	r.s = NewSource(r.mic, ref, r.c, clk, cfg)
	return r
}

// read plays far (r.blk: fresh noise) and reads one 20 ms frame, the
// canceller removing -gainDB.
func (r *guardRig) read(far []int16, gainDB float64) {
	r.c.gain = math.Pow(10, gainDB/20)
	for i := range r.blk {
		r.blk[i] = int16(r.rng.IntN(8000) - 4000)
	}
	r.tap.Write(far)
	r.s.Read(r.frame)
}

// The saturation guard (and EchoClips): a mic read that clipped while the robot speaks
// loud enough at the mic to clip it is an echo the canceller cannot model,
// so what it leaves of it counts as echo for saturatedHoldMS; after that
// the user passes again. A user who clips the mic over a quieter echo, and
// a user shouting at a silent robot, are never held.
func TestSaturatedMicIsEcho(t *testing.T) {
	for _, loud := range []bool{true, false} {
		r := newGuardRig(SourceConfig{FixedDelayMS: 20, GuardMarginDB: 10})
		s, mic, read, silent, blk := r.s, r.mic, r.read, r.silent, r.blk
		for range 100 {
			read(silent, 0)
		}
		echoAmp := 2000 // −25 dBFS: cannot clip the mic
		if loud {
			echoAmp = 20000 // −9 dBFS
		}
		mic.amp = echoAmp
		for range 300 { // the robot speaks; the canceller removes 30 dB
			read(blk, -30)
		}
		mic.amp, mic.clip = 20000, true // clipped: only 5 dB removed
		read(blk, -5)
		if s.EchoDominated() != loud || s.Saturated() != map[bool]int64{true: 1, false: 0}[loud] {
			t.Fatalf("loud echo %v: clipped read with the robot speaking: echo-dominated %v, saturated reads %d; want %v", loud, s.EchoDominated(), s.Saturated(), loud)
		}
		// Both 10 ms frames of the read clipped: the robot's own echo when
		// it is loud, the user over a quiet one otherwise.
		if want := map[bool]int64{true: 2, false: 0}[loud]; s.EchoClips() != want {
			t.Fatalf("loud echo %v: echo clips %d, want %d", loud, s.EchoClips(), want)
		}
		if !loud {
			continue // the user over a quiet echo, heard at once
		}
		mic.clip = false
		for i := 0; i < saturatedHoldMS/20; i++ {
			read(blk, -5) // the burst of residual after it
			if !s.EchoDominated() {
				t.Fatalf("read %d after the clipped one (within %d ms) is not echo-dominated", i+1, saturatedHoldMS)
			}
		}
		read(blk, -5) // the hold is over: 5 dB removed of a loud mic is the user
		if s.EchoDominated() {
			t.Errorf("%d ms after the last clipped read the user is still held", saturatedHoldMS+20)
		}
		mic.amp = 2000
		for range 100 { // the robot falls silent, its echo dies away
			read(silent, -5)
		}
		held, clips := s.Saturated(), s.EchoClips()
		mic.amp, mic.clip = 20000, true // the user shouting into a clipping mic
		for range 10 {
			read(silent, -5)
		}
		if s.EchoDominated() || s.Saturated() != held || s.EchoClips() != clips {
			t.Errorf("robot silent: echo-dominated %v, saturated reads %d more, echo clips %d more; want false, none, none", s.EchoDominated(), s.Saturated()-held, s.EchoClips()-clips)
		}
	}
}

// The noise guard: while the far end plays, a read whose output the room's
// noise floor explains (a suppressor releasing the noise it had pushed
// down) counts as echo even where the canceller removed little, so it can
// neither start an utterance nor drag the VAD's floor; the user, well above
// the noise, still passes. Without it (negative NoiseGuardDB) the adaptive
// guard lets the released noise through.
func TestNoiseGuardHoldsWhatTheNoiseExplains(t *testing.T) {
	for _, tc := range []struct {
		noiseGuard float64
		wantNoise  bool // the released noise is echo-dominated
	}{{0, true}, {6, true}, {-1, false}} {
		r := newGuardRig(SourceConfig{FixedDelayMS: 20, GuardMarginDB: 10, NoiseGuardDB: tc.noiseGuard})
		s, mic, read, silent, blk := r.s, r.mic, r.read, r.silent, r.blk
		for range 100 { // the robot is silent: the noise floor
			read(silent, 0)
		}
		nf, ok := s.NoiseFloorDB()
		if want := 20*math.Log10(2000/math.Sqrt(3)/32768) - 1; !ok || nf < want-2 || nf > want+1 {
			t.Fatalf("noise floor %.1f dBFS (known %v), want about %.1f", nf, ok, want)
		}
		for range 300 { // the robot speaks; its suppressor removes 30 dB
			read(blk, -30)
		}
		read(blk, -30)
		if !s.EchoDominated() {
			t.Fatalf("noise guard %v: 30 dB removed is not echo-dominated (guard %.1f dB)", tc.noiseGuard, s.GuardDB())
		}
		read(blk, -2) // the suppressor lets the noise through
		if s.EchoDominated() != tc.wantNoise {
			t.Errorf("noise guard %v: released noise: echo-dominated %v, want %v (guard %.1f dB)", tc.noiseGuard, s.EchoDominated(), tc.wantNoise, s.GuardDB())
		}
		mic.amp = 20000 // the user, 20 dB over the noise; 5 dB of it removed
		read(blk, -5)
		if s.EchoDominated() {
			t.Errorf("noise guard %v: the user 20 dB over the noise is echo-dominated", tc.noiseGuard)
		}
		mic.amp = 2000
	}
}

// passFilter is a linear filter that passes the mic through and records
// the far end it was given and its resets.
type passFilter struct {
	far    [][]int16
	resets int
}

func (p *passFilter) Process(out, near, far []int16) {
	copy(out, near)
	p.far = append(p.far, append([]int16(nil), far...))
}
func (p *passFilter) Reset()       { p.resets++ }
func (p *passFilter) Close() error { return nil }

// The dual path: Read returns the linear filter's output (the uplink),
// DecisionFrame the main canceller's (what the guard judged); the linear
// filter gets the far end 8 ms before its echo, i.e. the main canceller's
// lead minus 8 ms later than the main canceller.
func TestDualPathUplinkAndDecision(t *testing.T) {
	clk := clock.NewFake()
	ref, _ := NewReference(clk, 24000)
	lin := &passFilter{}
	d := newDual(&leadScaler{scaler{gain: 0.5, lead: 48}}, lin, false)
	s := NewSource(fakeMic{clk}, ref, d, clk, SourceConfig{FixedDelayMS: 60})
	if s.DecisionFrame() == nil && s.lin == nil {
		t.Fatal("the source does not see the dual canceller's linear output")
	}
	frame := make([]int16, 320)
	s.Read(frame)
	dec := s.DecisionFrame()
	if len(dec) != len(frame) {
		t.Fatalf("decision frame of %d samples, want %d", len(dec), len(frame))
	}
	for i, v := range frame {
		if want := int16(i * 7); v != want || dec[i] != int16(float64(want)*0.5) {
			t.Fatalf("sample %d: uplink %d (want %d, the linear filter's), decision %d (want %d)", i, v, want, dec[i], int16(float64(want)*0.5))
		}
	}
	// The delay line: 40 ms = 4 frames of 10 ms.
	far := make([]int16, FrameSamples)
	out := make([]int16, FrameSamples)
	lin.far = nil
	for k := range 8 {
		far[0] = int16(k + 1)
		d.Process(out, frame[:FrameSamples], far)
	}
	for k, f := range lin.far {
		if want := max(0, k-3); int(f[0]) != want {
			t.Errorf("frame %d: linear filter's far end is frame %d's, want %d's (40 ms later)", k, f[0], want)
		}
	}
	if d.LeadMS() != 48 {
		t.Errorf("dual lead %d ms, want the main canceller's 48", d.LeadMS())
	}
	if _, err := New(Options{Kind: KindNone, Uplink: UplinkLinear}); err == nil {
		t.Error("uplink linear without a canceller accepted")
	}
	if _, err := New(Options{Kind: KindNone, Uplink: "bogus"}); err == nil {
		t.Error("uplink bogus accepted")
	}
}

// The linear filter's delay line follows the far end's actual lead
// (SetLead): an echo sooner than the main canceller's 48 ms lead leaves the
// far end less lead, and a fixed 40 ms line would hand it to the linear
// filter after its echo. It moves only beyond the tolerances (4 ms too
// late, 40 ms too early), resetting the filter; Source tells it the lead.
func TestDualLinearFarEndFollowsTheLead(t *testing.T) {
	ms := func(v int) int { return v * Rate / 1000 }
	lin := &passFilter{}
	d := newDual(&leadScaler{scaler{gain: 1, lead: 48}}, lin, false)
	for _, tc := range []struct {
		leadMS, wantDelayMS int
		moved               bool
	}{
		{48, 40, false}, // the lead asked for: unchanged
		{90, 40, false}, // a later echo: the line is at most the lead's
		{45, 40, false}, // 3 ms short: within the tolerance
		{18, 10, true},  // a 18 ms echo: 10 ms, the far end 8 ms ahead again
		{5, 0, true},    // sooner than 8 ms: no line
		{30, 0, false},  // 22 ms early: within the tolerance
		{60, 0, false},  // 40 ms early (the line's length): still within it
		{4, 0, false},   // no line to shorten
	} {
		resets := lin.resets
		if moved := d.SetLead(ms(tc.leadMS)); moved != tc.moved || d.delay != ms(tc.wantDelayMS) {
			t.Errorf("lead %d ms: moved %v, delay %d samples; want %v, %d", tc.leadMS, moved, d.delay, tc.moved, ms(tc.wantDelayMS))
		}
		if got := lin.resets - resets; got != map[bool]int{false: 0, true: 1}[tc.moved] {
			t.Errorf("lead %d ms: the linear filter was reset %d times", tc.leadMS, got)
		}
	}
	// Through Source: a fixed 18 ms delay (bulk 0) leaves 18 ms of lead,
	// so the linear filter's far end is 10 ms (one frame) behind the main
	// canceller's.
	clk := clock.NewFake()
	ref, _ := NewReference(clk, 24000)
	lin = &passFilter{}
	d = newDual(&leadScaler{scaler{gain: 1, lead: 48}}, lin, false)
	NewSource(fakeMic{clk}, ref, d, clk, SourceConfig{FixedDelayMS: 18})
	far := make([]int16, FrameSamples)
	out := make([]int16, FrameSamples)
	for k := range 4 {
		far[0] = int16(k + 1)
		d.Process(out, far, far)
	}
	for k, f := range lin.far {
		if want := k; int(f[0]) != want {
			t.Errorf("fixed delay 18 ms, frame %d: the linear filter's far end is frame %d's, want %d's (10 ms later)", k, f[0], want)
		}
	}
}

// linear-gated: the uplink is the canceller's output while the guard finds
// only echo, the linear filter's from the second consecutive read it finds
// the user in (ramped over that read) until gateHoldMS after the last.
func TestGatedUplinkFollowsTheGuard(t *testing.T) {
	clk := clock.NewFake()
	ref, _ := NewReference(clk, 24000)
	lin := &passFilter{}
	main := &scaler{gain: math.Pow(10, -40.0/20)}
	d := newDual(main, lin, true)
	tap := NewTap(nullSpk{}, ref, clk)
	s := NewSource(fakeMic{clk}, ref, d, clk, SourceConfig{FixedDelayMS: 20})
	blk, frame := make([]int16, 480), make([]int16, 320)
	for i := range blk {
		blk[i] = int16(i * 13)
	}
	read := func(reductionDB float64) {
		main.gain = math.Pow(10, -reductionDB/20)
		lin.far = lin.far[:0]
		tap.Write(blk)
		s.Read(frame)
	}
	isMain := func() bool {
		for i, v := range frame {
			if v != int16(float64(i*7)*main.gain) {
				return false
			}
		}
		return true
	}
	isLinear := func() bool {
		for i, v := range frame {
			if v != int16(i*7) {
				return false
			}
		}
		return true
	}
	for range 200 { // the robot speaks, the canceller removes 40 dB
		read(40)
	}
	if !s.EchoDominated() || !isMain() {
		t.Fatalf("echo only: the uplink is not the canceller's output (echo-dominated %v)", s.EchoDominated())
	}
	read(3) // the user
	if s.EchoDominated() || !isMain() {
		t.Fatalf("the user's first read: echo-dominated %v, uplink is the canceller's %v (want false, true: one read does not open the gate)", s.EchoDominated(), isMain())
	}
	read(3)
	if frame[len(frame)-1] != int16((len(frame)-1)*7) || isMain() {
		t.Fatal("the user's second read: not ramped to the linear output")
	}
	read(3)
	if !isLinear() {
		t.Fatal("the user's third read: not the linear output")
	}
	for range gateHoldMS/20 - 1 {
		read(40)
		if !isLinear() {
			t.Fatal("within the hold after the user: not the linear output")
		}
	}
	read(40)
	read(40)
	if !isMain() {
		t.Error("after the hold: not back to the canceller's output")
	}
}

// gainMic is fakeMic with an adjustable level.
type gainMic struct {
	clk  *clock.Fake
	gain float64
}

func (m *gainMic) Format() hw.AudioFormat { return hw.MicFormat }
func (m *gainMic) Close() error           { return nil }
func (m *gainMic) Read(dst []int16) (int, error) {
	m.clk.Advance(time.Duration(len(dst)) * time.Second / Rate)
	for i := range dst {
		dst[i] = int16(float64(i*7) * m.gain)
	}
	return len(dst), nil
}

// After the speaker's timeline re-anchors (a device underflow: the blocks
// play later than counted) the canceller may no longer line up with the
// echo and its reduction drops; then a mic level the learned echo path
// explains counts as echo, a user well above it does not, for as long as
// the canceller has not recovered (at most disturbGuard); once it removes
// the echo again for recoveredMS the guard lapses.
func TestDisturbanceGuardAfterReanchoring(t *testing.T) {
	clk := clock.NewFake()
	ref, _ := NewReference(clk, 24000)
	c := &scaler{gain: math.Pow(10, -30.0/20)}
	tap := NewTap(nullSpk{}, ref, clk)
	mic := &gainMic{clk: clk, gain: 1}
	s := NewSource(mic, ref, c, clk, SourceConfig{FixedDelayMS: 20})
	blk, frame := make([]int16, 480), make([]int16, 320)
	for i := range blk {
		blk[i] = int16(i * 13)
	}
	read := func(reductionDB, micGain float64, write bool) bool {
		c.gain, mic.gain = math.Pow(10, -reductionDB/20), micGain
		if write {
			tap.Write(blk)
		}
		s.Read(frame)
		return s.EchoDominated()
	}
	stall := func() {
		// The speaker stalls for 200 ms, then plays on: its timeline
		// re-anchors.
		j := ref.Jumps()
		for range 10 {
			read(30, 1, false)
		}
		read(30, 1, true)
		if ref.Jumps() == j {
			t.Fatal("the stall did not re-anchor the speaker's timeline")
		}
	}
	for range 300 {
		read(30, 1, true)
	}
	// Misaligned (10 dB removed) before any disturbance: the user.
	if read(10, 1, true) {
		t.Fatal("a read with 10 dB removed counted as echo without a disturbance")
	}
	read(30, 1, true)
	stall()
	// The canceller is misaligned for 600 ms: all of it is echo.
	for i := range 30 {
		if !read(10, 1, true) {
			t.Fatalf("%d ms after the re-anchoring, residual echo the learned path explains passed as the user", i*20)
		}
	}
	if read(10, 10, true) {
		t.Error("after the re-anchoring, a user 20 dB above the echo counted as echo")
	}
	if s.Guarded() == 0 {
		t.Error("Guarded() did not count the guarded reads")
	}
	// The canceller lines up again: after recoveredMS the guard lapses.
	for range recoveredMS / 20 {
		read(30, 1, true)
	}
	if read(10, 1, true) {
		t.Errorf("the guard still held after %d ms of recovered reads", recoveredMS)
	}
	// Never recovered: the guard lapses after disturbGuard.
	read(30, 1, true)
	stall()
	held := 0
	for held < 2*disturbGuard/20 && read(10, 1, true) {
		held++
	}
	if held < disturbGuard/20-2 || held > disturbGuard/20 {
		t.Errorf("without recovery the guard held %d ms, want about %d", held*20, disturbGuard)
	}
}

// gainFilter is a linear filter that passes the mic scaled by gain, plus
// uniform noise of amplitude noise (the room noise it cannot remove).
type gainFilter struct {
	gain  float64
	noise int
	rng   *rand.Rand
}

func (g *gainFilter) Process(out, near, _ []int16) {
	for i, v := range near {
		x := float64(v) * g.gain
		if g.noise > 0 {
			x += float64(g.rng.IntN(2*g.noise+1) - g.noise)
		}
		out[i] = int16(x)
	}
}
func (g *gainFilter) Reset()       {}
func (g *gainFilter) Close() error { return nil }

// dualRig is a Source over a dual-path canceller whose main canceller
// and linear filter remove set amounts (dB) of the mic, for the linear
// guard's tests.
type dualRig struct {
	s                  *Source
	mic                *levelMic
	main               *scaler
	lin                *gainFilter
	tap                *Tap
	rng                *rand.Rand
	silent, blk, frame []int16
}

func newDualRig(lg float64) *dualRig {
	clk := clock.NewFake()
	ref, _ := NewReference(clk, 24000)
	r := &dualRig{main: &scaler{gain: 1}, lin: &gainFilter{gain: 1},
		mic: &levelMic{clk: clk, rng: rand.New(rand.NewPCG(7, 8)), amp: 300},
		rng: rand.New(rand.NewPCG(9, 10)), silent: make([]int16, 480), blk: make([]int16, 480), frame: make([]int16, 320)}
	r.tap = NewTap(nullSpk{}, ref, clk)
	r.s = NewSource(r.mic, ref, newDual(r.main, r.lin, true), clk, SourceConfig{FixedDelayMS: 20, GuardMarginDB: 10, LinearGuardDB: lg})
	return r
}

// read plays far (r.blk: fresh noise) and reads one 20 ms frame with the
// mic at amplitude amp; mainDB ≤ −100 makes the main canceller output
// digital silence.
func (r *dualRig) read(far []int16, amp int, mainDB, linDB float64) {
	r.mic.amp = amp
	r.main.gain, r.lin.gain = 0, math.Pow(10, linDB/20)
	if mainDB > -100 {
		r.main.gain = math.Pow(10, mainDB/20)
	}
	for i := range r.blk {
		r.blk[i] = int16(r.rng.IntN(8000) - 4000)
	}
	r.tap.Write(far)
	r.s.Read(r.frame)
}

// The linear guard (LinearGuardDB): the main canceller's suppressor
// outputs digital silence while the robot speaks, the user's onset too;
// the linear filter, which removes 20 dB of echo and little of the user,
// shows it. With the guard the read is the user's and the decision frame
// the linear output; without it, echo and silence. The linear output
// dropping only to the room's noise (a pause of the echo) stays echo.
func TestLinearGuardFindsWhatTheSuppressorHides(t *testing.T) {
	for _, lg := range []float64{0, 10} {
		r := newDualRig(lg)
		s, read, silent, blk := r.s, r.read, r.silent, r.blk
		for range 100 { // the robot is silent: the noise floor
			read(silent, 300, 0, 0)
		}
		for range 300 { // the robot speaks: 40 dB removed, then silence
			read(blk, 10000, -40, -20)
		}
		for range 20 {
			read(blk, 10000, -200, -20)
		}
		if !s.EchoDominated() {
			t.Fatalf("linear guard %v: the suppressed echo is not echo-dominated", lg)
		}
		read(blk, 300, -200, -1) // a pause: the linear output is the noise
		if !s.EchoDominated() {
			t.Errorf("linear guard %v: the room noise in a pause counts as the user", lg)
		}
		read(blk, 10000, -200, -2) // the user: 2 dB removed by the linear filter
		dec := s.DecisionFrame()
		heard := energy(dec) > 0
		if want := lg > 0; s.EchoDominated() == want || heard != want {
			t.Errorf("linear guard %v: the user under the suppressor: echo-dominated %v, decision frame non-silent %v; want %v, %v",
				lg, s.EchoDominated(), heard, !want, want)
		}
		if lg > 0 && s.LinearGuarded() != 1 {
			t.Errorf("linear guard %v: LinearGuarded %d, want 1", lg, s.LinearGuarded())
		}
	}
}

// In a noisy room the linear guard judges the filter's reduction of the
// echo, not of the echo and the noise (linearNoiseDB). The room noise is
// 20 dB under the echo and stays in the linear filter's output, which
// removes 40 dB of the echo itself: its measured reduction of the mic is
// the 20 dB echo-to-noise ratio. A user 12 dB under the echo, whom the
// suppressor silences and the linear filter passes, is reduced by about
// 11 dB: against the raw 20 dB median less the 10 dB margin that is no
// user (the guard before); against the echo's own reduction it is. The
// echo alone, and the noise rising by 3 dB over it, stay echo.
func TestLinearGuardHearsThroughTheNoise(t *testing.T) {
	r := newDualRig(10)
	r.lin.rng = rand.New(rand.NewPCG(11, 12))
	for range 100 { // the robot is silent: the room noise is the floor
		r.read(r.silent, 1000, 0, 0)
	}
	r.lin.noise = 1000
	for range 300 { // the robot speaks: the suppressor silences it, the linear filter leaves the noise
		r.read(r.blk, 10000, -200, -40)
	}
	if !r.s.linearReady() || r.s.linRed.Value() < 25 {
		t.Fatalf("linear median %.1f dB (ready %v), want the echo's reduction (> 25 dB), not the 20 dB echo-to-noise ratio",
			r.s.linRed.Value(), r.s.linearReady())
	}
	r.read(r.blk, 10000, -200, -40)
	if !r.s.EchoDominated() {
		t.Error("the echo and the room noise count as the user")
	}
	r.lin.noise = 1414
	r.read(r.blk, 10000, -200, -40)
	if !r.s.EchoDominated() {
		t.Error("the echo with the noise 3 dB louder counts as the user")
	}
	r.lin.noise = 1000
	r.read(r.blk, 10300, -200, -12) // the user over the echo: the linear filter passes it
	if r.s.EchoDominated() || r.s.LinearGuarded() != 1 {
		t.Errorf("the user under the suppressor in noise: echo-dominated %v, LinearGuarded %d; want false, 1 (linear median %.1f dB)",
			r.s.EchoDominated(), r.s.LinearGuarded(), r.s.linRed.Value())
	}
}

// A loudspeaker that distorts: the linear filter removes only 14 dB of its
// echo, and the canceller's suppressor swings between digital silence
// (most reads: its median reduction is the 60 dB of silence, the adaptive
// threshold 50 dB) and partial suppression. For the start of an
// utterance a read the canceller reduced by more than the linear filter's
// typical 14 dB plus linearTrustDB is echo (before: every read under 50 dB
// was the user, a false barge-in at the start of most replies in a silent
// room). A user over the echo, which the canceller reduces by 12 dB, still
// is the user; in a room the linear filter models (40 dB) the cap does not
// bind and the same 35 dB read stays the user, as before.
func TestDistortedEchoDoesNotStartAnUtterance(t *testing.T) {
	for _, tc := range []struct {
		name              string
		linDB, readDB     float64 // the linear filter's typical reduction; the read's canceller reduction
		readLinDB         float64
		wantEchoDominated bool
	}{
		{"distorting, partly suppressed echo", -14, -35, -13, true},
		{"distorting, the user", -14, -12, -8, false},
		{"linear room, partly suppressed read", -40, -35, -38, false},
	} {
		r := newDualRig(10)
		for range 100 { // a quiet room
			r.read(r.silent, 30, 0, 0)
		}
		for i := range 400 { // the robot speaks: mostly silence out of the suppressor
			mainDB := -200.0
			if i%4 == 3 {
				mainDB = -45
			}
			r.read(r.blk, 10000, mainDB, tc.linDB)
		}
		if g := r.s.GuardDB(); g < 45 {
			t.Fatalf("%s: adaptive threshold %.1f dB, want the silence's median less the margin", tc.name, g)
		}
		r.read(r.blk, 10000, tc.readDB, tc.readLinDB)
		if got := r.s.EchoDominated(); got != tc.wantEchoDominated {
			t.Errorf("%s: a read %.0f dB under the mic (linear %.0f dB): echo-dominated %v, want %v (threshold %.1f dB)",
				tc.name, -tc.readDB, -tc.readLinDB, got, tc.wantEchoDominated, r.s.GuardDB())
		}
	}
}

// The linear filter's typical reduction starts at the median of its first
// linearStartReads reads, not at the first alone: here the first three
// reads after convergence are odd (the linear output 40 dB above the mic,
// as on a drifting path before the clock offset is found), then the
// filter removes 20 dB. Started at the first read, the median sat at
// −40 dB and climbed 0.2 dB a read, so for seconds the start threshold's
// cap (the filter's typical reduction + linearTrustDB) was the fixed
// 12 dB and the linear guard never fired: a user the suppressor reduced
// by 25 dB could not start an utterance. Until it has started, the cap
// and the guard wait (linearReady).
func TestLinearMedianStartsFromItsFirstReads(t *testing.T) {
	r := newDualRig(10)
	for range 100 { // a quiet room
		r.read(r.silent, 30, 0, 0)
	}
	for range 100 { // the robot speaks; the canceller converges (its suppressor: silence)
		r.read(r.blk, 10000, -200, -20)
	}
	for range 3 { // the linear filter's first reads after that: odd
		r.read(r.blk, 10000, -200, 40)
	}
	if r.s.linearReady() {
		t.Fatalf("linear guard ready after 3 reads of its median, want %d", linearStartReads)
	}
	for range 150 {
		r.read(r.blk, 10000, -200, -20)
	}
	if !r.s.linearReady() || math.Abs(r.s.linRed.Value()-20) > 1 {
		t.Fatalf("linear median %.1f dB (ready %v), want 20 ± 1", r.s.linRed.Value(), r.s.linearReady())
	}
	r.read(r.blk, 10000, -25, -2) // the user: the suppressor takes 25 dB, the linear filter 2
	if r.s.EchoDominated() {
		t.Errorf("the user 25 dB under the mic (linear 2 dB) is echo-dominated (threshold %.1f dB, linear median %.1f dB)", r.s.GuardDB(), r.s.linRed.Value())
	}
}

// In the reply's pauses the linear filter leaves more of the echo than
// its typical reduction while the far end plays (the late reverberation):
// once it has seen 2 s of pauses, the linear guard's residual there is
// what the filter left in them (their 10th percentile), not the typical
// reduction. The filter removes 40 dB while the robot speaks but leaves
// −28 dB of the last words in the pauses; a read 24 dB under them in a
// later pause is the filter's, not the user; a user 12 dB under them is
// found. Before 2 s of pauses (warm-up) the typical reduction applies and
// the same −24 dB read counts as the user.
//
// A pause is also the far end 15 dB or more under its recent peak: a
// recorded voice's pauses hold its background hiss (here 30 dB under the
// words, above farActive), which must not hide the pause.
func TestLinearResidualInPauses(t *testing.T) {
	for _, hiss := range []bool{false, true} {
		for _, warm := range []bool{false, true} {
			for _, userDB := range []float64{-24, -12} {
				r := newDualRig(10)
				s, read, silent, blk := r.s, r.read, r.silent, r.blk
				amp := func(db float64) int { return int(10000 * math.Pow(10, db/20)) }
				pause := silent
				if hiss {
					pause = make([]int16, len(silent))
				}
				quiet := func() []int16 {
					if hiss { // ±130: RMS 75, −53 dBFS, 30 dB under blk
						for i := range pause {
							pause[i] = int16(r.rng.IntN(261) - 130)
						}
					}
					return pause
				}
				for range 100 { // a quiet room (−66 dBFS)
					read(silent, 30, 0, 0)
				}
				for range 300 { // the robot speaks: the linear filter removes 40 dB, the suppressor all
					read(blk, 10000, -200, -40)
				}
				if warm {
					for range 12 { // pauses of 100 ms in the reply: 120 reads
						for range 10 {
							read(quiet(), amp(-28), -200, 0)
						}
						for range 15 {
							read(blk, 10000, -200, -40)
						}
					}
				}
				read(quiet(), amp(userDB), -200, 0)
				user := !s.EchoDominated()
				if want := userDB > -20 || !warm; user != want {
					t.Errorf("hiss %v, warm %v: a read %.0f dB under the echo in a pause: user %v, want %v", hiss, warm, userDB, user, want)
				}
			}
		}
	}
}

// The linear guard's residual lies at most linearResidualCapDB under the
// echo peak: a filter that removes 48 dB of most of the reply (a quiet
// room) removes less of the sounds it fits least, and a read 31 dB under
// the mic is its own, not the user (before the cap, the median less the
// 10 dB margin, 38 dB, took such reads for the user at the same point of
// every reply). A user 24 or 12 dB under is found. Where the filter
// removes 30 dB (a noisier or reverberant room) the cap changes nothing:
// the read 24 dB under stays echo, as it was.
func TestLinearResidualCap(t *testing.T) {
	for _, tc := range []struct {
		typicalDB, linDB float64 // the filter's typical reduction; the read's linear output under the mic
		wantUser         bool
	}{
		{-48, -31, false},
		{-48, -24, true},
		{-48, -12, true},
		{-30, -24, false},
		{-30, -12, true},
	} {
		r := newDualRig(10)
		for range 100 { // a quiet room (−66 dBFS)
			r.read(r.silent, 30, 0, 0)
		}
		for range 400 { // the robot speaks; the suppressor removes all
			r.read(r.blk, 10000, -200, tc.typicalDB)
		}
		r.read(r.blk, 10000, -200, tc.linDB)
		if user := !r.s.EchoDominated(); user != tc.wantUser {
			t.Errorf("filter removing %.0f dB: a read %.0f dB under the mic: user %v, want %v", -tc.typicalDB, -tc.linDB, user, tc.wantUser)
		}
	}
}

// When the guards find the user over the far end but the main canceller's
// suppressor took most of the user's level away, the VAD hears the linear
// output (the user as the linear filter leaves them) instead: with the
// linear guard on, DecisionFrame is the linear output on such a read; off,
// the canceller's.
func TestLinearOutputHeardWhenTheGuardFindsTheUser(t *testing.T) {
	for _, lg := range []float64{0, 10} {
		r := newDualRig(lg)
		s, read, silent, blk := r.s, r.read, r.silent, r.blk
		for range 100 {
			read(silent, 300, 0, 0)
		}
		for range 300 { // the robot speaks: 40 dB removed, 20 by the linear filter
			read(blk, 10000, -40, -20)
		}
		read(blk, 10000, -20, -3) // the user: the suppressor removes 20 dB of them, the linear filter 3
		if s.EchoDominated() {
			t.Fatalf("linear guard %v: 20 dB removed against a typical 40 is not the user", lg)
		}
		dec := s.DecisionFrame()
		got := 10*math.Log10(energy(dec)/float64(len(dec))) - 10*math.Log10(10000*10000/3.0) // against the mic
		want := -20.0
		if lg > 0 {
			want = -3
		}
		if math.Abs(got-want) > 1.5 {
			t.Errorf("linear guard %v: decision frame %.1f dB against the mic, want %.0f (the %s output)", lg, got, want, map[bool]string{true: "linear", false: "canceller's"}[lg > 0])
		}
	}
}

// The learned echo path (mic over far-end energy on echo reads) ignores
// the reply's reverberant tail: there the far end is nearly silent while
// the mic still hears the room, and per-read ratios 30 dB or more too high
// once made the path swing by as much.
func TestEchoPathIgnoresTheTail(t *testing.T) {
	clk := clock.NewFake()
	ref, _ := NewReference(clk, 24000)
	c := &scaler{gain: math.Pow(10, -30.0/20)}
	tap := NewTap(nullSpk{}, ref, clk)
	mic := &levelMic{clk: clk, rng: rand.New(rand.NewPCG(3, 4)), amp: 2000}
	s := NewSource(mic, ref, c, clk, SourceConfig{FixedDelayMS: 20, GuardMarginDB: 10})
	rng := rand.New(rand.NewPCG(5, 6))
	blk, tail, frame := make([]int16, 480), make([]int16, 480), make([]int16, 320)
	// Uniform ±2000 at the mic over uniform ±4000 played is −6 dB; the
	// reference's resampling to 16 kHz takes some of the white far end's
	// power away, so the first sentence's figure is the yardstick.
	want := math.NaN()
	check := func(when string) {
		t.Helper()
		got := 10 * math.Log10(s.erl)
		if math.IsNaN(want) {
			if want = got; got < -6 || got > 0 {
				t.Fatalf("%s: learned echo path %.1f dB, want about -6 to 0", when, got)
			}
		}
		if math.Abs(got-want) > 1 {
			t.Errorf("%s: learned echo path %.1f dB, was %.1f after the first sentence", when, got, want)
		}
	}
	for round := 0; round < 3; round++ {
		for range 150 { // the robot speaks
			for i := range blk {
				blk[i] = int16(rng.IntN(8001) - 4000)
			}
			tap.Write(blk)
			s.Read(frame)
		}
		check("after a sentence")
		for range 15 { // the reply's tail: the far end below farActive, the room still ringing
			for i := range tail {
				tail[i] = int16(rng.IntN(41) - 20)
			}
			tap.Write(tail)
			s.Read(frame)
		}
		check("after the tail")
	}
}

// The onset guard (the first onsetGuard ms after the far end resumes from
// a pause) judges the mic against the learned echo path applied to the far
// end's recent peak: a read where the far end is 12 dB quieter than just
// before still carries the room's echo of the louder one, and with the
// canceller not yet removing it, it is echo, not the user.
func TestOnsetGuardFollowsTheRecentPeak(t *testing.T) {
	clk := clock.NewFake()
	ref, _ := NewReference(clk, 24000)
	c := &scaler{gain: math.Pow(10, -30.0/20)}
	tap := NewTap(nullSpk{}, ref, clk)
	mic := &levelMic{clk: clk, rng: rand.New(rand.NewPCG(3, 4)), amp: 300}
	s := NewSource(mic, ref, c, clk, SourceConfig{FixedDelayMS: 20, GuardMarginDB: 10})
	rng := rand.New(rand.NewPCG(5, 6))
	far, frame := make([]int16, 480), make([]int16, 320)
	read := func(farAmp, micAmp int, gainDB float64) {
		for i := range far {
			far[i] = 0
			if farAmp > 0 {
				far[i] = int16(rng.IntN(2*farAmp+1) - farAmp)
			}
		}
		mic.amp = micAmp
		c.gain = math.Pow(10, gainDB/20)
		tap.Write(far)
		s.Read(frame)
	}
	for range 100 {
		read(0, 300, 0)
	}
	for range 300 { // the robot speaks; the echo path learns mic ±2000 over far ±4000
		read(4000, 2000, -30)
	}
	for range 60 { // a pause: the far end's hang-over and the echo end
		read(0, 300, 0)
	}
	read(4000, 2000, -3) // the reply resumes; the canceller lets it through
	if !s.EchoDominated() {
		t.Fatalf("the first read after the pause is not echo")
	}
	read(1000, 2000, -3) // a quieter word; the mic still rings with the loud one
	if !s.EchoDominated() {
		t.Errorf("the room's echo of the louder word 20 ms before counts as the user")
	}
	for range 20 { // past the onset guard, at the same level: the user (the canceller removes 3 dB)
		read(1000, 2000, -30)
	}
	read(1000, 8000, -3)
	if s.EchoDominated() {
		t.Errorf("a user 12 dB above the echo, after the onset guard, counts as echo")
	}
}

// EchoFree is false from the first read the far end plays in until its
// echo's tail (farTail) has passed after it stops, then true; before the
// robot ever speaks it is true.
func TestEchoFreeAfterTheEchoTail(t *testing.T) {
	clk := clock.NewFake()
	ref, _ := NewReference(clk, 24000)
	tap := NewTap(nullSpk{}, ref, clk)
	s := NewSource(fakeMic{clk}, ref, &scaler{gain: 0.03}, clk, SourceConfig{FixedDelayMS: 20})
	loud, quiet, frame := make([]int16, 480), make([]int16, 480), make([]int16, 320)
	for i := range loud {
		loud[i] = int16(i * 13)
	}
	step := func(blk []int16) bool {
		tap.Write(blk)
		s.Read(frame)
		return s.EchoFree()
	}
	for i := range 25 {
		if !step(quiet) {
			t.Fatalf("read %d before the robot speaks: not echo-free", i)
		}
	}
	first := -1
	for i := range 50 {
		if !step(loud) && first < 0 {
			first = i
		}
	}
	if first < 0 || first > 3 {
		t.Fatalf("echo-free until read %d of the robot speaking, want within 3 (the far end's delay)", first)
	}
	free := -1
	for i := range 60 {
		if step(quiet) && free < 0 {
			free = i
		}
	}
	// farTail (400 ms) after the far end's last read, which the
	// canceller sees up to FixedDelayMS later: 19..23 reads of 20 ms (the
	// last read holding it counts as the first of the tail).
	if lo, hi := farTail/20-1, farTail/20+3; free < lo || free > hi {
		t.Errorf("echo-free again %d reads (of 20 ms) after the robot stopped, want %d..%d", free, lo, hi)
	}
}

// OnsetFrame is the linear filter's output of the last read, to be used
// (capture.OnsetSignal) while the far end plays and the canceller removed
// less than onsetRoomDB of the read: a sound it did not take for echo.
func TestOnsetFrameWhereTheCancellerLetASoundThrough(t *testing.T) {
	plain := NewSource(fakeMic{clock.NewFake()}, nil, &scaler{gain: 0.5}, clock.NewFake(), SourceConfig{FixedDelayMS: 20})
	if f, use := plain.OnsetFrame(); f != nil || use {
		t.Errorf("without a linear uplink: OnsetFrame = %d samples, use %v; want nil, false", len(f), use)
	}
	for _, tc := range []struct {
		name    string
		gain    float64 // the main canceller's: 0.5 removes 6 dB, 0.03 30 dB
		playing bool
		use     bool
	}{
		{"far end silent", 0.5, false, false},
		{"a sound through the canceller", 0.5, true, true},
		{"echo removed", 0.03, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake()
			ref, _ := NewReference(clk, 24000)
			tap := NewTap(nullSpk{}, ref, clk)
			d := newDual(&leadScaler{scaler{gain: tc.gain, lead: 48}}, &passFilter{}, false)
			s := NewSource(fakeMic{clk}, ref, d, clk, SourceConfig{FixedDelayMS: 60})
			blk, frame := make([]int16, 480), make([]int16, 320)
			if tc.playing {
				for i := range blk {
					blk[i] = int16(i * 13)
				}
			}
			for range 10 {
				tap.Write(blk)
				s.Read(frame)
			}
			f, use := s.OnsetFrame()
			if use != tc.use {
				t.Errorf("use = %v, want %v", use, tc.use)
			}
			if len(f) != len(frame) {
				t.Fatalf("onset frame of %d samples, want %d", len(f), len(frame))
			}
			for i, v := range f {
				if v != frame[i] {
					t.Fatalf("onset sample %d = %d, want the linear filter's %d", i, v, frame[i])
				}
			}
		})
	}
}

// The room noise the linear guard takes out of the linear output
// (linearNoise) is the noise's mean energy, not the 10th-percentile floor:
// with a noise whose level varies from read to read (amplitude 850–1150)
// the floor sits about 1 dB under the mean, and the mean is within 0.3 dB.
func TestLinearNoiseIsTheNoisesMean(t *testing.T) {
	r := newDualRig(10)
	rng := rand.New(rand.NewPCG(3, 4))
	var sum float64
	const reads, from = 600, 300
	for i := range reads { // the robot is silent
		amp := 850 + rng.IntN(301)
		r.read(r.silent, amp, 0, 0)
		if i >= from {
			sum += float64(amp) * float64(amp+1) / 3 // a uniform ±amp sample's mean energy
		}
	}
	want := 10 * math.Log10(sum/(reads-from))
	got := 10 * math.Log10(r.s.linearNoise(1))
	floor := 10 * math.Log10(r.s.noiseEnergy(1))
	if math.Abs(got-want) > 0.3 {
		t.Errorf("linear guard's noise %.2f dB, want the mean %.2f dB ±0.3 (floor %.2f dB)", got, want, floor)
	}
	if floor > want-0.7 {
		t.Errorf("noise floor %.2f dB, mean %.2f dB: the noise does not vary enough to test the mean", floor, want)
	}
}

// After a near-end burst the robot's echo does not explain (a knock on
// the chassis, 8 dB over the echo), the linear filter that adapted on it
// leaves more of the echo for a while: reads the echo explains again,
// which the linear filter reduces by only 3 dB where it typically removes
// 20, are not the user for linearBurstHoldMS; after it the same read is,
// as it is without a burst.
func TestLinearGuardStandsDownAfterABurst(t *testing.T) {
	r := newDualRig(10)
	for range 100 { // a quiet room
		r.read(r.silent, 300, 0, 0)
	}
	for range 300 { // the robot speaks: the suppressor silences it, the linear filter removes 20 dB
		r.read(r.blk, 10000, -200, -20)
	}
	r.read(r.blk, 10000, -200, -3)
	if r.s.EchoDominated() || r.s.LinearGuarded() != 1 {
		t.Fatalf("without a burst, a read the linear filter reduced by 3 dB: echo-dominated %v, LinearGuarded %d; want false, 1",
			r.s.EchoDominated(), r.s.LinearGuarded())
	}
	for range 10 {
		r.read(r.blk, 10000, -200, -20)
	}
	r.read(r.blk, 25000, -200, -1) // the burst
	for i := range linearBurstHoldMS/20 - 1 {
		r.read(r.blk, 10000, -200, -3)
		if !r.s.EchoDominated() {
			t.Fatalf("%d ms after the burst, the echo the disturbed linear filter left counts as the user", (i+1)*20)
		}
	}
	for range 2 {
		r.read(r.blk, 10000, -200, -20)
	}
	r.read(r.blk, 10000, -200, -3)
	if r.s.EchoDominated() {
		t.Errorf("%d ms after the burst, the read the linear filter reduced by 3 dB is still not the user", linearBurstHoldMS+40)
	}
}

// hookSpk is a sink without device times whose Write runs during its
// block: what the capture goroutine does while the speaker's writer is in
// the device's Write.
type hookSpk struct {
	during func()
	lat    time.Duration // DeviceLatency
}

func (hookSpk) Format() hw.AudioFormat         { return hw.TTSFormat }
func (hookSpk) Close() error                   { return nil }
func (s hookSpk) DeviceLatency() time.Duration { return s.lat }
func (s hookSpk) Write([]int16) error {
	if s.during != nil {
		s.during()
	}
	return nil
}

// A mic read made while the speaker's writer is handing the device a
// block of the robot's voice that the reference does not hold yet (it is
// recorded after the device's Write; on a loaded machine the writer runs
// late) may hold that block's echo with nothing to cancel it: it is held
// as echo (RefLate), not heard as the user. A read made while a quiet
// block is in the device, or with nothing in it, is not held.
func TestReadBehindTheReferenceIsEcho(t *testing.T) {
	clk := clock.NewFake()
	ref, _ := NewReference(clk, 24000)
	spk := &hookSpk{}
	tap := NewTap(spk, ref, clk)
	s := NewSource(fakeMic{clk}, ref, &scaler{gain: 1}, clk, SourceConfig{FixedDelayMS: 20})
	loud, quiet, frame := make([]int16, 480), make([]int16, 480), make([]int16, 320)
	for i := range loud {
		loud[i] = int16(2000 * (i%7 - 3))
	}
	type state struct{ free, dominated bool }
	var during state
	spk.during = func() {
		s.Read(frame)
		during = state{s.EchoFree(), s.EchoDominated()}
	}
	for i := range 25 {
		if tap.Write(quiet); !during.free || during.dominated {
			t.Fatalf("read %d during a quiet block: echo-free %v, echo-dominated %v; want true, false", i, during.free, during.dominated)
		}
	}
	if s.RefLate() != 0 {
		t.Fatalf("%d reads held for a late reference with the robot silent", s.RefLate())
	}
	// The first block of a reply: its echo may be in this read already.
	if tap.Write(loud); during.free || !during.dominated || s.RefLate() != 1 {
		t.Fatalf("read during the first loud block: echo-free %v, echo-dominated %v, held %d; want false, true, 1", during.free, during.dominated, s.RefLate())
	}
	// Outside the device's Write nothing is pending: the recorded reply
	// decides (the far end is playing, so not echo-free).
	readDuring := spk.during
	spk.during = nil
	tap.Write(loud)
	s.Read(frame)
	if s.RefLate() != 1 || s.EchoFree() {
		t.Fatalf("read after the block was recorded: held %d, echo-free %v; want 1, false", s.RefLate(), s.EchoFree())
	}
	// A device that has not taken a block for 200 ms (a stream still
	// starting) plays nothing of it meanwhile: once the far end's tail is
	// over, a read then is echo-free again.
	for range 30 {
		tap.Write(quiet)
		s.Read(frame)
	}
	spk.during = func() {
		clk.Advance(200 * time.Millisecond)
		readDuring()
	}
	if tap.Write(loud); !during.free || s.RefLate() != 1 {
		t.Fatalf("read 200 ms into a Write the device has not taken: echo-free %v, held %d; want true, 1", during.free, s.RefLate())
	}
	// With 100 ms of device latency a block handed over now plays 100 ms
	// from now: a read of what the mic captured meanwhile is not held; one
	// 100 ms later is.
	for range 30 {
		tap.Write(quiet)
		s.Read(frame)
	}
	spk.lat = 100 * time.Millisecond
	spk.during = readDuring
	if tap.Write(loud); !during.free || s.RefLate() != 1 {
		t.Fatalf("read of the 20 ms after handing a block to a device 100 ms behind: echo-free %v, held %d; want true, 1", during.free, s.RefLate())
	}
	spk.during = func() {
		clk.Advance(80 * time.Millisecond)
		readDuring()
	}
	if tap.Write(loud); during.free || s.RefLate() != 2 {
		t.Fatalf("read 100 ms after handing a block to a device 100 ms behind: echo-free %v, held %d; want false, 2", during.free, s.RefLate())
	}
}

// countScaler is a scaler that counts the frames it processed.
type countScaler struct {
	scaler
	calls int
}

func (c *countScaler) Process(out, near, far []int16) {
	c.calls++
	c.scaler.Process(out, near, far)
}

// outageMic is a gainMic whose reads are digital silence over [from, to)
// of each read (a mic outage's start, middle or end); with lost it reports
// them as a stand-in (capture.LostReporter).
type outageMic struct {
	gainMic
	from, to int
	lost     bool
}

func (m *outageMic) Lost() bool { return m.lost }

func (m *outageMic) Read(dst []int16) (int, error) {
	n, err := m.gainMic.Read(dst)
	clear(dst[min(m.from, n):min(m.to, n)])
	return n, err
}

// A mic outage (hw/portaudio's Source pads it with digital silence) while
// the robot speaks: the canceller is not run on it (it learnt that the
// echo path had gone: the speex filter diverged, WebRTC's suppressor
// crushed the room for seconds after it), the reads come out as silence,
// the first and last ones whole although only part of them was lost, and
// they are counted; the double-talk threshold learnt before is untouched;
// the read after the outage starts the disturbance guard (the canceller's
// far-end history is stale), which holds the residual echo the learned
// path explains but not a user 20 dB above it. In a room without noise
// (a simulation) digital silence is the room, and the canceller runs on
// it, unless the mic reports it as its stand-in for audio it did not
// capture.
func TestSourceHoldsThroughAMicOutage(t *testing.T) {
	clk := clock.NewFake()
	ref, _ := NewReference(clk, 24000)
	c := &countScaler{scaler: scaler{gain: math.Pow(10, -30.0/20)}}
	tap := NewTap(nullSpk{}, ref, clk)
	mic := &outageMic{gainMic: gainMic{clk: clk, gain: 1}}
	s := NewSource(mic, ref, c, clk, SourceConfig{FixedDelayMS: 20, DoubleTalkDB: DefaultDoubleTalkDB, GuardMarginDB: DefaultGuardMarginDB})
	blk, frame := make([]int16, 480), make([]int16, 320)
	for i := range blk {
		blk[i] = int16(i * 13)
	}
	far := true
	read := func(reductionDB, micGain float64, from, to int) bool {
		c.gain, mic.gain, mic.from, mic.to = math.Pow(10, -reductionDB/20), micGain, from, to
		if far {
			tap.Write(blk)
		}
		s.Read(frame)
		return s.EchoDominated()
	}
	// The room alone (its noise floor), then the robot speaks.
	far = false
	for range 100 {
		read(0, 0.01, 0, 0)
	}
	far = true
	for range 300 {
		read(30, 1, 0, 0)
	}
	guard, calls := s.GuardDB(), c.calls
	reads := []struct{ from, to int }{{200, 320}} // the outage starts 12.5 ms into a read
	for range 50 {
		reads = append(reads, struct{ from, to int }{0, 320})
	}
	reads = append(reads, struct{ from, to int }{0, 100}) // and ends 6 ms into one
	for i, r := range reads {
		if !read(30, 1, r.from, r.to) {
			t.Errorf("outage read %d: not EchoDominated", i)
		}
		if pcm.ZeroRun(frame) != len(frame) {
			t.Fatalf("outage read %d (silence over %d..%d): the output is not silence", i, r.from, r.to)
		}
	}
	if c.calls != calls {
		t.Errorf("the canceller processed %d frames of the outage, want none", c.calls-calls)
	}
	if got := s.LostReads(); got != int64(len(reads)) {
		t.Errorf("LostReads %d, want %d", got, len(reads))
	}
	if g := s.GuardDB(); g != guard {
		t.Errorf("the double-talk threshold moved over the outage: %.2f -> %.2f dB", guard, g)
	}
	// Back: the canceller's history is stale (10 dB removed): echo.
	for i := range 10 {
		if !read(10, 1, 0, 0) {
			t.Fatalf("%d ms after the outage, residual echo the learned path explains passed as the user", i*20)
		}
	}
	if read(10, 10, 0, 0) {
		t.Error("after the outage, a user 20 dB above the echo counted as echo")
	}
	if s.Guarded() == 0 {
		t.Error("Guarded() did not count the reads the disturbance guard held")
	}
	if c.calls == calls {
		t.Error("the canceller did not run after the outage")
	}

	// A room without noise: no outage.
	clk = clock.NewFake()
	ref, _ = NewReference(clk, 24000)
	tap = NewTap(nullSpk{}, ref, clk)
	mic.clk = clk
	s = NewSource(mic, ref, c, clk, SourceConfig{FixedDelayMS: 20})
	far = false
	for range 100 {
		read(0, 0, 0, 320)
	}
	calls = c.calls
	far = true
	for range 10 {
		read(30, 1, 0, 320)
	}
	if c.calls != calls+20 || s.LostReads() != 0 || s.Lost() {
		t.Errorf("digital silence in a room without noise: the canceller processed %d frames of 20, %d reads lost; want 20, 0", c.calls-calls, s.LostReads())
	}
	// Unless the mic says it is a stand-in (hw/portaudio's Source while
	// the device is gone).
	mic.lost = true
	calls = c.calls
	for range 5 {
		read(30, 1, 0, 320)
	}
	if c.calls != calls || s.LostReads() != 5 || !s.Lost() {
		t.Errorf("reads the mic reported lost: the canceller processed %d frames, %d reads lost, Lost() %v; want 0, 5, true", c.calls-calls, s.LostReads(), s.Lost())
	}
	mic.lost = false
	read(30, 1, 0, 0)
	if s.Lost() {
		t.Error("Lost() after a read of the mic's audio")
	}
}

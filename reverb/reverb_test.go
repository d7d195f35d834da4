package reverb

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// room simulates frame energies: a far end of syllables and pauses, and a
// mic holding its direct echo and an exponentially decaying reverberation
// (each frame's energy scattered by a log-normal factor, as frames of
// speech-like audio are), plus noise.
type room struct {
	rt60    float64 // s
	drrDB   float64 // direct over reverberant energy
	noise   float64 // mic noise energy per frame
	scatter float64 // std dev of the frames' log-normal factor (natural log)
	seed    uint64
	// answer > 0: every answer frames the far end pauses for 2 s and a
	// user talks in the pause from 150 ms on (words of 150-350 ms that
	// rise and fall, 50-150 ms apart, as loud as the far end's direct
	// echo), as a person who answers the robot.
	answer int
	// answerAt: the frame of the pause the user starts at (0: 15, 150 ms);
	// -1: nobody answers (the pause stays silent).
	answerAt int
}

// run returns far, mic and the true late reverberation beyond lag frames
// (without scatter), n frames.
func (r room) run(n, lag int) (far, mic, late []float64) {
	far, mic, late, _ = r.runUser(n, lag)
	return far, mic, late
}

// runUser is run, also returning the user's energy per frame (answer).
func (r room) runUser(n, lag int) (far, mic, late, user []float64) {
	rng := rand.New(rand.NewPCG(r.seed, 1))
	far = make([]float64, n)
	for i := 0; i < n; {
		syl := 8 + rng.IntN(18) // 80-250 ms
		lvl := math.Pow(10, -rng.Float64())
		for k := 0; k < syl && i < n; k++ {
			far[i] = lvl * (0.5 + rng.Float64())
			i++
		}
		gap := 3 + rng.IntN(40) // 30-420 ms
		for k := 0; k < gap && i < n; k++ {
			far[i] = 1e-7
			i++
		}
	}
	user = make([]float64, n)
	if r.answer > 0 {
		at := r.answerAt
		if at == 0 {
			at = 15
		}
		for st := r.answer; st+200 <= n; st += r.answer {
			for i := range far[st : st+200] {
				far[st+i] = 1e-7
			}
			if at < 0 {
				continue
			}
			for i := st + at; i < st+200; {
				w := 15 + rng.IntN(21)
				lvl := 0.3 + rng.Float64()
				for k := 0; k < w && i < st+200; k++ {
					user[i] = lvl * math.Sin(math.Pi*float64(k+1)/float64(w+1))
					i++
				}
				i += 5 + rng.IntN(11)
			}
		}
	}
	rho := math.Pow(10, -6/r.rt60*FrameMS/1000) // 60 dB in rt60
	// Reverberant energy A·Σρ^k (k ≥ 1) equals the direct energy (1) less drrDB.
	a := math.Pow(10, -r.drrDB/10) * (1 - rho) / rho
	irLen := int(2 * r.rt60 * 1000 / FrameMS)
	mic = make([]float64, n)
	late = make([]float64, n)
	for i := range n {
		rev, lt := 0.0, 0.0
		for k := 1; k < irLen && k <= i; k++ {
			e := a * math.Pow(rho, float64(k)) * far[i-k]
			rev += e
			if k >= lag {
				lt += e
			}
		}
		mic[i] = (far[i]+rev+user[i])*math.Exp(r.scatter*rng.NormFloat64()) + r.noise
		late[i] = lt
	}
	return far, mic, late, user
}

func TestTailLearnsTheRoom(t *testing.T) {
	const lag = 25 // 250 ms
	for _, r := range []room{
		{rt60: 0.4, drrDB: 0, noise: 1e-9, scatter: 0.5, seed: 1},
		{rt60: 0.6, drrDB: -3, noise: 1e-9, scatter: 0.5, seed: 2},
		{rt60: 0.8, drrDB: 3, noise: 1e-9, scatter: 0.7, seed: 3},
		{rt60: 0.8, drrDB: -1, noise: 1e-8, scatter: 0.3, seed: 4},
	} {
		t.Run(fmt.Sprintf("rt60=%v,drr=%v", r.rt60, r.drrDB), func(t *testing.T) {
			far, mic, late := r.run(12000, lag) // 2 minutes
			tl := New(lag * FrameMS)
			var ratios []float64
			for i := range far {
				p := tl.Push(far[i], mic[i], r.noise)
				if i > len(far)/2 && late[i] > 1e-6 {
					ratios = append(ratios, 10*math.Log10(p/late[i]))
				}
			}
			if !tl.Ready() {
				t.Fatal("not learnt in 2 minutes")
			}
			if got := tl.RT60(); math.Abs(got-r.rt60) > 0.15*r.rt60 {
				t.Errorf("RT60 %.3f s, want %.2f ±15 %%", got, r.rt60)
			}
			slices.Sort(ratios)
			med := ratios[len(ratios)/2]
			t.Logf("RT60 %.3f s; predicted/true late energy: median %+.1f dB, 10th %+.1f, 90th %+.1f", tl.RT60(), med, ratios[len(ratios)/10], ratios[len(ratios)*9/10])
			if math.Abs(med) > 3 {
				t.Errorf("predicted late reverberation %+.1f dB from the room's (median), want within 3 dB", med)
			}
		})
	}
}

// A user who answers the robot talks in the far end's pause: their words
// rise and fall, and are no free decay. Learnt from, a phrase (hundreds of
// frames) outweighed every real pause, and a 0.4 s room came out at
// several seconds; only the pause's decay before the user is learnt from.
func TestTailIgnoresTheUserInAPause(t *testing.T) {
	const lag = 25
	for _, r := range []room{
		{rt60: 0.4, drrDB: 0, noise: 1e-9, scatter: 0.5, seed: 8, answer: 1000},
		{rt60: 0.8, drrDB: -1, noise: 1e-9, scatter: 0.5, seed: 9, answer: 700},
	} {
		far, mic, _ := r.run(12000, lag)
		tl := New(lag * FrameMS)
		for i := range far {
			tl.Push(far[i], mic[i], r.noise)
		}
		t.Logf("RT60 %.2f s with a user answering every %d s: learnt %.3f s", r.rt60, r.answer/100, tl.RT60())
		if got := tl.RT60(); math.Abs(got-r.rt60) > 0.15*r.rt60 {
			t.Errorf("RT60 %.2f s with a user answering every %d s: learnt %.3f s, want ±15 %%", r.rt60, r.answer/100, got)
		}
	}
}

// A user who talks over the robot until it stops (a barge-in) fills the
// pause's first frames with their voice, whose level falls and rises with
// its syllables. In make run the replies have no pauses of their own, so
// the first pause after a barge-in was the only one learnt from: the fall
// of one of the user's words taught a 0.3 s room an RT60 of 0.9-1.4 s.
// Such a pause is not learnt from (its level rises within the decay's
// first riseWindow frames); the replies' clean ends are.
func TestTailIgnoresAUserTalkingAsTheRobotStops(t *testing.T) {
	const lag = 25
	for _, r := range []struct {
		rt60, drrDB float64
		seed        uint64
	}{{0.3, 6, 10}, {0.5, 0, 11}, {0.8, -1, 12}} {
		rng := rand.New(rand.NewPCG(r.seed, 2))
		rho := math.Pow(10, -6/r.rt60*FrameMS/1000)
		a := math.Pow(10, -r.drrDB/10) * (1 - rho) / rho
		const reply, pause = 300, 200 // 3 s replies without pauses, 2 s between
		tl := New(lag * FrameMS)
		rev := 0.0
		for k := 0; k < 8; k++ {
			ph := math.Pi * rng.Float64()
			for i := -reply; i < pause; i++ {
				f, u := 0.0, 0.0
				if i < 0 {
					// Speech-like: 12 dB swings four times a second.
					e := 0.25 + 0.75*math.Pow(math.Sin(math.Pi*4*float64(i)*FrameMS/1000+ph), 2)
					f = e * e
				}
				if k == 0 && i >= -30 && i < 70 {
					// The first reply: the user talks over its end, as
					// loud as its direct echo, and on into the pause,
					// where a word of theirs falls 10 dB over 250 ms
					// (as make run's did) before the next rises.
					db := 0.0
					switch {
					case i >= 10 && i < 35:
						db = -0.4 * float64(i-10)
					case i >= 35 && i < 45:
						db = -10 + 1.2*float64(i-35)
					case i >= 45:
						db = 2
					}
					u = math.Pow(10, db/10)
				}
				mic := (f + rev + u) * math.Exp(0.3*rng.NormFloat64())
				rev = rho * (rev + a*f)
				tl.Push(f, mic+1e-9, 1e-9)
			}
			if k == 0 {
				if got := tl.RT60(); got != 0 {
					t.Errorf("RT60 %.2f s: learnt %.3f s from the pause after a barge-in, want nothing", r.rt60, got)
				}
			}
		}
		t.Logf("RT60 %.2f s: learnt %.3f s after 8 replies", r.rt60, tl.RT60())
		if got := tl.RT60(); math.Abs(got-r.rt60) > 0.2*r.rt60 {
			t.Errorf("RT60 %.2f s: learnt %.3f s after 8 replies, want ±20 %%", r.rt60, got)
		}
	}
}

func TestTailDryRoomPredictsLittle(t *testing.T) {
	// RT60 0.15 s: 250 ms on, the reverberation is 100 dB down.
	r := room{rt60: 0.15, drrDB: 6, noise: 1e-12, scatter: 0.5, seed: 5}
	far, mic, _ := r.run(6000, 25)
	tl := New(250)
	for i := range far {
		if p := tl.Push(far[i], mic[i], r.noise); i > 3000 && far[i] > 0.01 && p > far[i]*1e-5 {
			t.Fatalf("frame %d: late %.3g for far %.3g: more than 50 dB under", i, p, far[i])
		}
	}
}

func TestTailNotLearntUnderNoise(t *testing.T) {
	// Noise 10 dB over the reverberation's level: nothing to learn from,
	// nothing predicted.
	r := room{rt60: 0.8, drrDB: 0, noise: 0.5, scatter: 0.5, seed: 6}
	far, mic, _ := r.run(6000, 25)
	tl := New(250)
	for i := range far {
		if p := tl.Push(far[i], mic[i], r.noise); p != 0 {
			t.Fatalf("frame %d: predicted %.3g under noise", i, p)
		}
	}
	if tl.Ready() || tl.RT60() != 0 {
		t.Fatalf("learnt under noise: ready %v, RT60 %.2f", tl.Ready(), tl.RT60())
	}
}

func TestTailPushAllocatesNothing(t *testing.T) {
	r := room{rt60: 0.6, drrDB: 0, noise: 1e-9, scatter: 0.5, seed: 7}
	far, mic, _ := r.run(3000, 25)
	tl := New(250)
	i := 0
	if a := testing.AllocsPerRun(len(far)-1, func() {
		tl.Push(far[i], mic[i], r.noise)
		i++
	}); a != 0 {
		t.Fatalf("%v allocations per Push", a)
	}
	if !tl.Ready() {
		t.Fatal("the run did not reach learning (the median's start)")
	}
}

func ExampleTail() {
	r := room{rt60: 0.6, drrDB: 0, noise: 1e-9, scatter: 0.3, seed: 8}
	far, mic, _ := r.run(6000, 25)
	tl := New(250) // the cancellers model the first 250 ms of the echo path
	for i := range far {
		tl.Push(far[i], mic[i], r.noise)
	}
	fmt.Printf("RT60 %.1f s\n", tl.RT60())
	// Output: RT60 0.6 s
}

func BenchmarkTailPush(b *testing.B) {
	r := room{rt60: 0.6, drrDB: 0, noise: 1e-9, scatter: 0.5, seed: 9}
	far, mic, _ := r.run(6000, 25)
	tl := New(250)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		k := i % len(far)
		tl.Push(far[k], mic[k], r.noise)
	}
}

// A Tail restored from the model another learnt of the same room predicts
// from its first frame what the learnt one predicts (a new one predicts
// nothing until its first long pauses); restored from another room's, it
// learns the room it is in from its pauses.
func TestRestoredModelPredictsAtOnceAndGivesWayToTheRoom(t *testing.T) {
	const lag = 25
	r := room{rt60: 0.8, drrDB: -1, noise: 1e-9, scatter: 0.5, seed: 5}
	learnt := learntIn(t, r, lag)
	m, _ := learnt.Model()
	if math.Abs(m.RT60-0.8) > 0.12 {
		t.Fatalf("learnt %+v, want RT60 0.8 s", m)
	}
	// The same room again (another stretch of speech), from the start.
	far2, mic2, late2 := room{rt60: 0.8, drrDB: -1, noise: 1e-9, scatter: 0.5, seed: 6}.run(500, lag)
	cold, warm := New(lag*FrameMS), New(lag*FrameMS)
	if err := warm.Restore(m); err != nil {
		t.Fatal(err)
	}
	if got, ok := warm.Model(); !ok || math.Abs(got.RT60-m.RT60) > 1e-9 || got.LevelDB != m.LevelDB {
		t.Fatalf("restored model %+v (%v), want %+v", got, ok, m)
	}
	var coldE, warmE, lateE float64
	for i := range 300 { // the first 3 s
		coldE += cold.Push(far2[i], mic2[i], r.noise)
		warmE += warm.Push(far2[i], mic2[i], r.noise)
		lateE += late2[i]
	}
	t.Logf("first 3 s: late reverberation predicted cold %.3g, restored %.3g, true %.3g", coldE, warmE, lateE)
	if coldE != 0 {
		t.Errorf("a new Tail predicted %.3g in its first 3 s, want 0 (it needs pauses to learn)", coldE)
	}
	if d := 10 * math.Log10(warmE/lateE); math.Abs(d) > 3 {
		t.Errorf("restored: predicted late energy %+.1f dB from the room's, want within 3 dB", d)
	}

	// A model from a dead room (0.3 s) restored in this one: its pauses
	// take over.
	dead := New(lag * FrameMS)
	if err := dead.Restore(Model{RT60: 0.3, LevelDB: m.LevelDB}); err != nil {
		t.Fatal(err)
	}
	far3, mic3, _ := room{rt60: 0.8, drrDB: -1, noise: 1e-9, scatter: 0.5, seed: 7}.run(3000, lag) // 30 s
	for i := range far3 {
		dead.Push(far3[i], mic3[i], r.noise)
	}
	if got := dead.RT60(); math.Abs(got-0.8) > 0.15*0.8 {
		t.Errorf("restored from a 0.3 s room, after 30 s in a 0.8 s one: RT60 %.2f s, want 0.8 ±15 %%", got)
	}
}

func TestRestoreRefusesAModelOutOfRange(t *testing.T) {
	for _, m := range []Model{{RT60: 0.05}, {RT60: 7}, {RT60: math.NaN()}, {RT60: 0.5, LevelDB: 61}, {RT60: 0.5, LevelDB: math.Inf(-1)}} {
		tl := New(250)
		if err := tl.Restore(m); !errors.Is(err, ErrModel) {
			t.Errorf("%+v: %v, want ErrModel", m, err)
		}
		if tl.Ready() {
			t.Errorf("%+v: refused, but the Tail is ready", m)
		}
	}
	if _, ok := New(250).Model(); ok {
		t.Error("a new Tail has a model")
	}
}

// An assumed model (Typical, at a first start with no room kept) is not
// reported as learnt, so nothing saves it as the room, and it predicts
// almost nothing beyond the lag itself (a 0.3 s room's reverberation is
// 50 dB down at 250 ms); what it changes is that the room's first pauses
// count at once (their decay against the assumed one, their level from
// the first pause frame), so a reverberant room's tail is predicted
// sooner than by a Tail that assumes nothing, which waits for a pause long
// enough on its own and 30 level frames. Then the room's pauses teach the
// Tail this room, which it reports.
func TestAssumedTypicalRoomLearnsTheRoomSoonerButIsNotLearnt(t *testing.T) {
	if err := Typical().Check(); err != nil {
		t.Fatalf("Typical %+v: %v", Typical(), err)
	}
	const lag = 25
	var sum, sumBlank int
	var levelOff float64 // Σ|assumed − blank| level at 4 s, dB, over nOff seeds
	var nOff int
	for seed := uint64(5); seed <= 12; seed++ {
		r := room{rt60: 0.8, drrDB: -1, noise: 1e-9, scatter: 0.5, seed: seed}
		far, mic, late := r.run(3000, lag)
		tl, blank := New(lag*FrameMS), New(lag*FrameMS)
		if err := tl.Assume(Typical()); err != nil {
			t.Fatal(err)
		}
		if !tl.Ready() {
			t.Fatal("assumed: not ready, want it to predict at once")
		}
		// The first frame predicting at least a tenth of the true late
		// energy (-10 dB), with and without the assumption (200: none in
		// the first 2 s).
		first, firstBlank := 200, 200
		for i := range 200 {
			p, pb := tl.Push(far[i], mic[i], r.noise), blank.Push(far[i], mic[i], r.noise)
			if first == 200 && late[i] > 0 && p >= 0.1*late[i] {
				first = i
			}
			if firstBlank == 200 && late[i] > 0 && pb >= 0.1*late[i] {
				firstBlank = i
			}
			if _, ok := tl.Model(); ok && tl.RT60() == 0 {
				t.Fatalf("seed %d frame %d: a model but no RT60", seed, i)
			}
			if i < 10 && tl.RT60() != 0 {
				t.Fatalf("seed %d frame %d: the assumed model reported as learnt (RT60 %.2f)", seed, i, tl.RT60())
			}
		}
		t.Logf("seed %d: the late reverberation predicted (within -10 dB) from %d ms assumed, %d ms assuming nothing", seed, first*FrameMS, firstBlank*FrameMS)
		if first > firstBlank {
			t.Errorf("seed %d: predicted from %d ms assumed, later than assuming nothing (%d ms)", seed, first*FrameMS, firstBlank*FrameMS)
		}
		sum += first
		sumBlank += firstBlank
		for i := 200; i < len(far); i++ {
			tl.Push(far[i], mic[i], r.noise)
			blank.Push(far[i], mic[i], r.noise)
			if i == 399 { // 4 s in: the level, against the one learnt assuming nothing
				la, _ := tl.levelDB()
				if lb, ok := blank.levelDB(); ok {
					levelOff += math.Abs(la - lb)
					nOff++
				}
			}
		}
		mb, _ := blank.Model()
		m, ok := tl.Model()
		if math.Abs(m.LevelDB-mb.LevelDB) > 1 {
			t.Errorf("seed %d, after 30 s: level %.1f dB assumed, %.1f dB assuming nothing: want within 1 dB (no bias from the assumed decay)", seed, m.LevelDB, mb.LevelDB)
		}
		if !ok {
			t.Fatalf("seed %d: assumed, then 30 s in a 0.8 s room: nothing learnt", seed)
		}
		if math.Abs(m.RT60-0.8) > 0.15*0.8 || math.Abs(tl.RT60()-m.RT60) > 1e-9 {
			t.Errorf("seed %d: learnt %+v (RT60() %.2f), want RT60 0.8 ±15 %%", seed, m, tl.RT60())
		}
	}
	// The level is learnt against the room's own decay only: learnt against
	// the assumed 0.3 s decay it was 14 dB too high on average at 4 s.
	t.Logf("4 s in: the level %.1f dB off the one learnt assuming nothing on average (%d seeds)", levelOff/float64(max(nOff, 1)), nOff)
	if nOff < 4 || levelOff/float64(nOff) > 6 {
		t.Errorf("4 s in: the level %.1f dB off the one learnt assuming nothing on average (%d seeds), want within 6 dB", levelOff/float64(max(nOff, 1)), nOff)
	}
	if sum*4 > sumBlank*3 {
		t.Errorf("the late reverberation predicted from %d ms on average assumed, %d ms assuming nothing: want a quarter sooner at least", sum*FrameMS/8, sumBlank*FrameMS/8)
	}
	// Restore after Assume: the restored model replaces the assumed one.
	m := Model{RT60: 0.7, LevelDB: -4}
	tr := New(lag * FrameMS)
	if err := tr.Assume(Typical()); err != nil {
		t.Fatal(err)
	}
	if err := tr.Restore(m); err != nil {
		t.Fatal(err)
	}
	if got, ok := tr.Model(); !ok || math.Abs(got.RT60-m.RT60) > 1e-9 || got.LevelDB != m.LevelDB {
		t.Errorf("assumed then restored: %+v (%v), want %+v", got, ok, m)
	}
	if err := New(250).Assume(Model{RT60: 9}); !errors.Is(err, ErrModel) {
		t.Errorf("Assume of RT60 9 s: %v, want ErrModel", err)
	}
}

// The assumed level is a 0 dB echo path's and follows the path the
// canceller learns (EchoPath): in a room whose echo is g times as loud
// (a louder speaker, a more sensitive mic), the Tail told the path
// predicts exactly g times what it predicts in the 0 dB room, from the
// assumed level through the learnt one. Not told, it underestimates a
// loud speaker's tail until the room gives its level (the first 2 replies
// in a 0.8 s room at +10 dB: 16 false barge-ins of 16 starts,
// docs/benchmarks.md "The assumed room follows the echo path").
func TestAssumedLevelFollowsTheEchoPath(t *testing.T) {
	const lag = 25
	for _, gainDB := range []float64{-10, 10, 20} {
		g := math.Pow(10, gainDB/10)
		for seed := uint64(1); seed <= 4; seed++ {
			r := room{rt60: 0.8, drrDB: -1, noise: 1e-9, scatter: 0.5, seed: seed}
			far, mic, _ := r.run(1500, lag)
			base, told, untold := New(lag*FrameMS), New(lag*FrameMS), New(lag*FrameMS)
			for _, tl := range []*Tail{base, told, untold} {
				if err := tl.Assume(Typical()); err != nil {
					t.Fatal(err)
				}
			}
			base.EchoPath(0)
			told.EchoPath(gainDB)
			var assumedFrames, untoldOff int
			for i := range far {
				pb := base.Push(far[i], mic[i], r.noise)
				pt := told.Push(far[i], g*mic[i], g*r.noise)
				pu := untold.Push(far[i], g*mic[i], g*r.noise)
				if math.Abs(pt-g*pb) > 1e-6*g*pb {
					t.Fatalf("%+.0f dB, seed %d, frame %d: predicted %.4g told the path, want %.4g (%.0f dB over the 0 dB room's)", gainDB, seed, i, pt, g*pb, gainDB)
				}
				if !base.level.Ready() && pb > 0 {
					assumedFrames++
					if math.Abs(10*math.Log10(pu/(g*pb))) > 1 {
						untoldOff++
					}
				}
			}
			if _, ok := told.Model(); !ok || assumedFrames == 0 || untoldOff == 0 {
				t.Errorf("%+.0f dB, seed %d: learnt %v, %d frames predicted from the assumed level, %d of them off by > 1 dB untold: want a learnt room, and both counts above 0", gainDB, seed, ok, assumedFrames, untoldOff)
			}
		}
	}
	// A restored level is the room's: the path does not move it.
	a, b := New(lag*FrameMS), New(lag*FrameMS)
	m := Model{RT60: 0.5, LevelDB: -3}
	if err := a.Restore(m); err != nil {
		t.Fatal(err)
	}
	if err := b.Restore(m); err != nil {
		t.Fatal(err)
	}
	b.EchoPath(10)
	far, mic, _ := room{rt60: 0.5, drrDB: 0, noise: 1e-9, scatter: 0.5, seed: 9}.run(300, lag)
	for i := range far {
		if pa, pb := a.Push(far[i], mic[i], 1e-9), b.Push(far[i], mic[i], 1e-9); pa != pb {
			t.Fatalf("restored, frame %d: %.4g with the path told, %.4g without: want the same", i, pb, pa)
		}
	}
	// Nonsense from a canceller is bounded, and NaN ignored.
	c := New(lag * FrameMS)
	_ = c.Assume(Typical())
	c.EchoPath(math.NaN())
	if lv, _ := c.levelDB(); lv != Typical().LevelDB {
		t.Errorf("EchoPath(NaN): level %v, want %v", lv, Typical().LevelDB)
	}
	c.EchoPath(500)
	if lv, _ := c.levelDB(); lv != Typical().LevelDB+MaxLevelDB {
		t.Errorf("EchoPath(500): level %v, want %v", lv, Typical().LevelDB+MaxLevelDB)
	}
}

// In a pause of the far end longer than the lag, the mic holds nothing but
// the late reverberation, and FreeDecay follows it whatever the model: in
// the first long pause in a 1.0 s room (1.5 s in), with nothing learnt, a
// typical 0.3 s room assumed or a 0.3 s room restored, the tail is held
// (the mic within 4 dB of the prediction, the guard's ratio) in almost
// every frame at a scatter of 0.3 (1.3 dB per frame), in most at 0.5
// (2.2 dB), and in more than the model alone holds (at 0.3 s 62-83 %: the
// assumed or restored decay weighs in its first seconds, a new one needs
// the pause's level); a user who answers 600 ms into the pause, after the
// free decay has begun, is never held by it.
func TestFreeDecayHoldsTheTailNotTheUser(t *testing.T) {
	const lag = 25
	const ratio = 2.5 // aec's reverbLinearRatio: 4 dB
	for _, tc := range []struct {
		name string
		prep func(*Tail) error
	}{
		{"nothing learnt", func(*Tail) error { return nil }},
		{"typical assumed", func(t *Tail) error { return t.Assume(Typical()) }},
		{"0.3 s restored", func(t *Tail) error { return t.Restore(Typical()) }},
	} {
		for _, sc := range []struct{ scatter, want float64 }{{0.3, 0.95}, {0.5, 0.75}} {
			var tail, heldLine, heldModel, userFrames, userHeld int
			for seed := uint64(1); seed <= 4; seed++ {
				for _, at := range []int{-1, 60} {
					r := room{rt60: 1.0, drrDB: -1, noise: 1e-9, scatter: sc.scatter, seed: seed, answer: 150, answerAt: at}
					far, mic, late, user := r.runUser(350, lag)
					tl := New(lag * FrameMS)
					if err := tc.prep(tl); err != nil {
						t.Fatal(err)
					}
					for i := range far {
						p := tl.Push(far[i], mic[i], r.noise)
						line := tl.FreeDecay()
						switch {
						case user[i] > 4*late[i]:
							userFrames++
							if mic[i] <= ratio*line {
								userHeld++
							}
						case at < 0 && tl.silent >= lag+minPause && late[i] > 1e3*r.noise:
							// The tail of the silent pause, 30 dB over the noise.
							tail++
							if mic[i] <= ratio*max(p, line) {
								heldLine++
							}
							if mic[i] <= ratio*p {
								heldModel++
							}
						}
					}
				}
			}
			t.Logf("%s, scatter %.1f: tail frames held %d of %d (the model alone %d); user frames held %d of %d", tc.name, sc.scatter, heldLine, tail, heldModel, userHeld, userFrames)
			if tail < 200 || float64(heldLine) < sc.want*float64(tail) || heldModel > heldLine-tail/20 {
				t.Errorf("%s, scatter %.1f: tail frames held %d of %d with FreeDecay, %d by the model alone: want %.0f %% at least, 5 %% of the tail more than the model alone", tc.name, sc.scatter, heldLine, tail, heldModel, 100*sc.want)
			}
			if userFrames < 200 || userHeld > 0 {
				t.Errorf("%s, scatter %.1f: user frames held by FreeDecay %d of %d: want none", tc.name, sc.scatter, userHeld, userFrames)
			}
		}
	}
}

// learntIn returns a Tail (lag frames) that has heard 2 minutes of r and
// learnt it.
func learntIn(t *testing.T, r room, lag int) *Tail {
	t.Helper()
	far, mic, _ := r.run(12000, lag)
	tl := New(lag * FrameMS)
	for i := range far {
		tl.Push(far[i], mic[i], r.noise)
	}
	if _, ok := tl.Model(); !ok {
		t.Fatal("not learnt in 2 minutes")
	}
	return tl
}

// Beyond a shorter lag the prediction is the reverberation beyond that
// lag (a canceller whose filter is shorter than the Tail's lag leaves it),
// and beyond the Tail's own lag it is what Push returns.
func TestBeyondPredictsTheTailBeyondAShorterFilter(t *testing.T) {
	const lag = 25
	tl := learntIn(t, room{rt60: 0.8, drrDB: -1, noise: 1e-9, scatter: 0.5, seed: 5}, lag)
	// Another stretch of speech in the same room: the true reverberation
	// beyond 50, 130 and 250 ms against the predictions.
	next := room{rt60: 0.8, drrDB: -1, noise: 1e-9, scatter: 0.5, seed: 6}
	var truth [3][]float64
	js := [3]int{5, 13, lag}
	var far2, mic2 []float64
	for k, j := range js {
		far2, mic2, truth[k] = next.run(1000, j)
	}
	var pred, want [3]float64
	for i := range far2 {
		p := tl.Push(far2[i], mic2[i], next.noise)
		if b := tl.Beyond(lag * FrameMS); b != p {
			t.Fatalf("frame %d: Beyond(the lag) %g, Push %g", i, b, p)
		}
		if b := tl.Beyond(10 * lag * FrameMS); b != p {
			t.Fatalf("frame %d: Beyond(beyond the lag) %g, want the lag's %g", i, b, p)
		}
		for k, j := range js {
			pred[k] += tl.Beyond(j * FrameMS)
			want[k] += truth[k][i]
		}
	}
	for k, j := range js {
		d := 10 * math.Log10(pred[k]/want[k])
		t.Logf("beyond %3d ms: predicted %.3g, true %.3g (%+.1f dB)", j*FrameMS, pred[k], want[k], d)
		if math.Abs(d) > 2 {
			t.Errorf("beyond %d ms: predicted %+.1f dB from the room's late reverberation, want within 2 dB", j*FrameMS, d)
		}
	}
	if !(want[0] > 2*want[1] && want[1] > 2*want[2]) {
		t.Fatalf("the room's reverberation beyond 50, 130, 250 ms: %.3g, %.3g, %.3g: the test needs each well above the next", want[0], want[1], want[2])
	}
	if New(lag*FrameMS).Beyond(50) != 0 {
		t.Error("a new Tail predicts beyond 50 ms before it knows the room")
	}
}

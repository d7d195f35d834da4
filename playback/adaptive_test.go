package playback

import (
	"math"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
)

// voiced returns n samples of a steady voiced signal (150 Hz pulses through
// a resonator) with pauses: what TTS looks like to the stretcher.
func voiced(n, offset int) []int16 {
	out := make([]int16, n)
	for i := range out {
		k := i + offset
		t := float64(k) / sampleRate
		if math.Mod(t, 1) > 0.8 {
			continue // pause
		}
		// A decaying 700 Hz burst every 1/150 s.
		ph := math.Mod(t*150, 1) / 150
		out[i] = int16(9000 * math.Exp(-ph*400) * math.Sin(2*math.Pi*700*ph))
	}
	return out
}

// stream pushes 20 ms frames of voiced audio at 1x, with arrivals from
// delay(i), and fills 10 ms periods, for d of stream time. It returns the
// output and calls probe after every Fill.
func stream(t *testing.T, p *Player, clk *clock.Fake, d time.Duration, delay func(i int) time.Duration, probe func(now time.Duration)) []int16 {
	t.Helper()
	const frame = 480
	n := int(d / (20 * time.Millisecond))
	arr := make([]time.Duration, n)
	var prev time.Duration
	for i := range arr {
		arr[i] = max(prev, time.Duration(i)*20*time.Millisecond+delay(i))
		prev = arr[i]
	}
	var out []int16
	buf := make([]int16, 240)
	next := 0
	for now := time.Duration(0); now < d+2*time.Second; now += 10 * time.Millisecond {
		for next < n && arr[next] <= now {
			if arr[next] > clk.Mono() {
				clk.Advance(arr[next] - clk.Mono())
			}
			if err := p.PushPCM(1, le(voiced(frame, next*frame))); err != nil {
				t.Fatal(err)
			}
			next++
			if next == n {
				p.EndResponse(1)
			}
		}
		if now > clk.Mono() {
			clk.Advance(now - clk.Mono())
		}
		p.Fill(buf)
		out = append(out, buf...)
		if probe != nil {
			probe(now)
		}
	}
	return out
}

func level(p *Player) int { return p.Depth() + p.ad.len() }

// TestAdaptiveUnderrunResumesWithoutPermanentDelay: a 300 ms network block
// causes one concealment episode; afterwards the player catches up by
// time-compression to the level it held before, instead of keeping the
// extra delay like the stall policy.
func TestAdaptiveUnderrunResumesWithoutPermanentDelay(t *testing.T) {
	for _, pol := range []Policy{PolicyAdaptive, PolicyStall} {
		p, clk, reg := newTestPlayer(t, Config{Policy: pol})
		blockAt, blockEnd := 8*time.Second, 8300*time.Millisecond
		var before, after, maxLvl, overTarget []int
		out := stream(t, p, clk, 20*time.Second, func(i int) time.Duration {
			sent := time.Duration(i) * 20 * time.Millisecond
			d := 5*time.Millisecond + time.Duration((i*7919)%11)*time.Millisecond // 5..15 ms jitter
			if sent+d >= blockAt && sent+d < blockEnd {
				return blockEnd - sent
			}
			return d
		}, func(now time.Duration) {
			switch {
			case now > 6*time.Second && now < blockAt:
				before = append(before, level(p))
			case now > 16*time.Second && now < 19*time.Second:
				after = append(after, level(p))
				overTarget = append(overTarget, level(p)-int(p.ad.target))
			case now >= blockEnd && now < 9*time.Second:
				maxLvl = append(maxLvl, level(p))
			}
		})
		mean := func(v []int) float64 {
			s := 0
			for _, x := range v {
				s += x
			}
			return float64(s) / float64(len(v)) / samplesPerMS
		}
		if reg.Value("robot_agent_playback_underruns_total") < 1 {
			t.Fatalf("%v: the 300 ms block caused no underrun", pol)
		}
		// Fades only: no step larger than the signal's own plus one fade step.
		maxIn := 0
		v := voiced(24000, 0)
		for i := 1; i < len(v); i++ {
			maxIn = max(maxIn, int(math.Abs(float64(v[i])-float64(v[i-1]))))
		}
		for i := 1; i < len(out); i++ {
			if d := int(math.Abs(float64(out[i]) - float64(out[i-1]))); d > maxIn+32768/int(p.fadeLen)+200 {
				t.Fatalf("%v: step %d at sample %d (signal's largest %d): a click", pol, d, i, maxIn)
			}
		}
		t.Logf("%v: level before %.1f ms, after %.1f ms, accelerated %d, decelerated %d samples", pol, mean(before), mean(after),
			reg.Value("robot_agent_playback_accelerated_samples_total"), reg.Value("robot_agent_playback_decelerated_samples_total"))
		if pol == PolicyAdaptive {
			// The block taught the delay manager a higher target (which
			// then decays as the histogram forgets); the backlog beyond
			// the target must be gone.
			peak := 0
			for _, v := range maxLvl {
				peak = max(peak, v)
			}
			if peak < 200*samplesPerMS {
				t.Errorf("adaptive: peak level %d ms after the block, expected the 300 ms backlog", peak/samplesPerMS)
			}
			if o := mean(overTarget); o > 15 {
				t.Errorf("adaptive: level %.1f ms above target after the block: delay kept", o)
			}
			if reg.Value("robot_agent_playback_accelerated_samples_total") == 0 {
				t.Error("adaptive: never accelerated")
			}
		} else if mean(after) < mean(before)+100 {
			t.Errorf("stall: level %.1f ms after, %.1f ms before: expected the old policy to keep the delay", mean(after), mean(before))
		}
	}
}

// TestAdaptiveNoAllocsWhileStretching: push, fill and both stretch
// directions allocate nothing after warm-up.
func TestAdaptiveNoAllocsWhileStretching(t *testing.T) {
	p, clk, reg := newTestPlayer(t, Config{PrebufferMS: 1})
	frame := le(voiced(480, 0))
	out := make([]int16, 240)
	i := 0
	step := func() {
		// Alternate 80 ms of arrivals at 2x (level rises: accelerate) and
		// 160 ms at 0.5x (level falls: decelerate): 1x on average.
		if ph := i % 24; ph < 8 || ph%4 == 0 {
			if err := p.PushPCM(1, frame); err != nil {
				panic(err)
			}
		}
		clk.Advance(10 * time.Millisecond)
		p.Fill(out)
		i++
	}
	for range 3000 {
		step() // warm-up: ring chunks, histogram
	}
	if a := testing.AllocsPerRun(2000, step); a != 0 {
		t.Errorf("push/fill/stretch allocs = %v", a)
	}
	if reg.Value("robot_agent_playback_accelerated_samples_total") == 0 || reg.Value("robot_agent_playback_decelerated_samples_total") == 0 {
		t.Errorf("stretching not exercised: %v", reg.Snapshot())
	}
}

// TestAdaptiveInterruptFadesFromStage: an interrupt while the stage holds
// audio fades that audio out within fadeLen-1 samples, reports exactly what
// was played, and never plays the rest.
func TestAdaptiveInterruptFadesFromStage(t *testing.T) {
	p, _, _ := newTestPlayer(t, Config{PrebufferMS: 1})
	mustPush(t, p, 1, constant(4800, 10000))
	first := fill(p, 240)
	if first[239] != 10000 {
		t.Fatalf("not playing: %v", first[230:])
	}
	if p.ad.len() == 0 {
		t.Fatal("stage empty while playing")
	}
	p.Interrupt(1)
	out := fill(p, 480)
	fl := int(p.fadeLen)
	for k := 0; k < fl-1; k++ {
		if want := int16(10000 * int32(fl-1-k) / int32(fl)); out[k] != want {
			t.Fatalf("fade sample %d = %d, want %d", k, out[k], want)
		}
	}
	if !allZero(out[fl-1:]) {
		t.Fatal("interrupted audio played after the fade")
	}
	ev := drain(p)
	if len(ev) != 1 || ev[0].Kind != EventInterrupted || ev[0].SamplesPlayed != int64(240+fl-1) {
		t.Fatalf("events = %+v, want interrupted with %d played", ev, 240+fl-1)
	}
	mustPush(t, p, 2, constant(480, 7))
	p.EndResponse(2)
	if o := fill(p, 480); o[0] != 7 || o[479] != 7 {
		t.Fatalf("next response after interrupt: %v", o[:4])
	}
}

// TestBudgetCountsOutageSlowly drives the concealment budget controller
// directly: a 3 s outage moves the tail at once only by what its first
// second is worth; the other 2 s are owed and counted afterwards at most
// at the budget's rate (debtShare), so the controller ends lower (more
// cautious) than if the excess were ignored, and the debt is repaid.
func TestBudgetCountsOutageSlowly(t *testing.T) {
	run := func(outageMS, playS int, ignoreDebt bool) (afterOutage, end, debt float64) {
		p, _, _ := newTestPlayer(t, Config{})
		period := int64(10 * samplesPerMS)
		for range outageMS / 10 {
			p.underrun, p.fillPlay, p.fillConc = true, 0, period
			p.budget()
		}
		afterOutage = p.ad.logTail
		p.underrun = false
		for range playS * 100 {
			p.fillPlay, p.fillConc = period, 0
			if ignoreDebt {
				p.ad.debt = 0
			}
			p.budget()
		}
		return afterOutage, p.ad.logTail, p.ad.debt
	}
	a1, e1, _ := run(1000, 300, false)
	a3, e3, d3 := run(3000, 300, false)
	_, e3ign, _ := run(3000, 300, true)
	if math.Abs(a1-a3) > 1e-9 {
		t.Errorf("tail right after a 1 s outage %.4f, after a 3 s one %.4f: want the same (only 1 s counts at once)", a1, a3)
	}
	if !(e3 < e1-0.01 && e3 < e3ign-0.01) {
		t.Errorf("tail 5 min after a 3 s outage %.4f; after 1 s %.4f, with the debt ignored %.4f: the owed 2 s were not counted", e3, e1, e3ign)
	}
	if d3 != 0 {
		t.Errorf("debt %.0f samples left five minutes after the outage, want repaid", d3)
	}
	// One minute after it, part of the 2 s is still owed: repaid at
	// debtShare times the budget's rate, not at once.
	if _, _, d := run(3000, 60, false); math.Abs(d-(2*sampleRate-debtShare*DefaultConcealBudget*60*sampleRate)) > 1 {
		t.Errorf("debt %.0f samples one minute after a 3 s outage, want %.0f", d, 2*sampleRate-debtShare*DefaultConcealBudget*60*sampleRate)
	}
}

package playback

import (
	"math"
	"time"

	"github.com/robot-agent/robot-agent/timestretch"
)

// Adaptive playout (PolicyAdaptive).
//
// The producer feeds every chunk's arrival to a jitter.Manager, which
// publishes the target: a quantile of the relative arrival delay. The
// consumer moves the current response's samples from the ring into a small
// private stage (a few tens of milliseconds, enough for one time-stretch
// operation to look at) and plays from the stage. Once per Fill it updates
// a smoothed buffer level (ring + stage) and compares it with
//
//	target = clamp(quantile + chunk/2, MinDelayMS, MaxDelayMS + chunk/2)
//
// (chunk is the typical pushed chunk: the level saw-tooths by one chunk).
// For chunks larger than 20 ms the control does not chase that saw: the
// smoothing's time constant is two chunks (100 ms at least), the
// hysteresis around the target an eighth of a chunk (5 ms at least), a
// resume counts the chunk that just arrived at half its length, and the
// buffer is starving 10 ms (not a whole chunk) below target - chunk/2. A
// gateway that sends 20 ms frames sees none of this.
// The quantile is not fixed: a concealment budget controller (budget) moves
// the tail the target leaves uncovered (jitter.Manager.SetTailScale) until
// the concealed share of the output settles at ConcealBudget; one underrun
// counts for at most 1 s of it (a longer outage is not jitter a deeper
// buffer could have covered; the rest is counted slowly afterwards, see
// budget). The controller's gain decays over the first minutes (see
// budgetGain) and the delay histogram remembers ~400 s, so the target
// stays steady on a link that blocks now and then.
// Above target + 5 ms it removes pitch periods (timestretch.Accelerate),
// at StretchPct of the output rising to CatchUpPct 15 ms further up; below
// target - 5 ms it inserts them (Decelerate) at StretchPct; and when the
// instantaneous level falls more than one chunk below target (arrivals are
// late: a network block or a late frame holding up the ones behind it) it
// slows down at up to ExpandPct, the emptier the faster, so the buffer
// lasts longer and less of the gap is concealed with silence. Rates count
// the samples actually removed or inserted. In pauses (quiet windows) the
// rate limit does not apply: shortening or lengthening silence is not
// heard, so most of the adjustment lands between words. It does not
// accelerate while the stream arrives faster than real time (a gateway
// streaming ahead, or the catch-up burst after a stall: the excess there
// is not delay the user hears), nor stretch at all once the response's
// audio has all arrived, nor accelerate when the buffer holds more than
// 2*MaxDelayMS (that is a reply streamed ahead, not jitter) unless the
// response's own underruns put it that far behind: the player counts the
// delay it added to the response (concealed and inserted samples, less the
// removed ones; late) and a buffer above 2*MaxDelayMS is caught up while
// that count is above the target (a network outage of seconds: its
// backlog is delay the user hears, audio streamed ahead is not). An underrun
// is concealed by a fade to silence; playback resumes as soon as
// min(target, PrebufferMS) is buffered again (10 ms after an underrun),
// and the delay the underrun added is then taken out by accelerating.
type adaptive struct {
	st            *timestretch.Stretcher
	buf           []int16 // stage storage
	rd, wr        int     // stage holds buf[rd:wr]
	need          int     // samples one stretch operation looks at
	credit        int64   // source samples to add to played once rd passes creditAt
	creditAt      int
	level         float64 // smoothed buffer level, samples
	target        int64   // samples
	sinceOp       int64   // output samples since the last stretch operation
	spacing       int64   // output samples per stretched sample (100/StretchPct)
	fastSpacing   int64   // the same for CatchUpPct
	expandSpacing int64   // the same for ExpandPct
	lastOp        int64   // samples removed or inserted by the last operation
	logTail       float64 // concealment budget controller state (log of the tail scale)
	tailShift     float64 // log(ConcealBudget/DefaultConcealBudget): shifts logTail's start and bounds
	episode       int64   // samples concealed in the current underrun episode
	debt          float64 // concealed samples of outages not yet counted by the budget controller
	seen          int64   // output samples the budget controller has seen (its gain decays with them)
	late          int64   // delay this response's underruns and insertions added, not yet removed (samples)
	low           int64   // starving below this instantaneous level (set per Fill, see maybeStretch)
	hyst          int64   // hysteresis around the target (set per Fill)
	minD          int64
	maxD          int64
	fromStage     bool // an interrupt fade takes its samples from the stage
	off           bool // StretchPct < 0: never stretch
}

const (
	resumeSamples = 10 * samplesPerMS // after an underrun, resume with this much
	stretchHyst   = 5 * samplesPerMS  // samples either side of the target
	catchUpExcess = 15 * samplesPerMS // this far above target+hysteresis, accelerate at CatchUpPct
	targetMargin  = 0
	quietOps      = 4 // operations at once in a pause
	quietRounds   = 8 // stage refills for more of them in one Fill

	// Concealment budget: every concealed output sample lowers the log of
	// the jitter tail scale by the gain, every played one raises it by
	// gain*ConcealBudget, so over time the concealed share of the output
	// settles at the budget (the target quantile moves up on a network
	// that needs it, down on one that does not). The gain decays as the
	// controller learns, like a stochastic-approximation step size:
	// budgetGain*max(1, gainBoost*gainSettle/(gainSettle+t)) after t of
	// output, so the first minute finds the right quantile quickly (1 %
	// above budget for a minute halves the tail, as before) and from about
	// three minutes on 1 % above budget takes two minutes to halve it: the
	// target then stays steady between a link's rare blocks instead of
	// following how many each minute happened to have. The controller
	// starts slightly cautious (startLogTail: tail scale 0.86, the 0.987
	// quantile with the default 0.985): the first minute is learnt from
	// few blocks. A budget other than the default shifts the start and
	// both bounds by log(budget/DefaultConcealBudget) (tailShift): the
	// uncovered tail a budget needs is roughly proportional to it, so a
	// lower budget can reach a lower concealment.
	budgetGain    = 0.693 / (0.01 * 120 * sampleRate)
	gainBoost     = 4
	gainSettle    = 60 * sampleRate // samples of output
	minLogTail    = -2.08           // tail scale 1/8
	startLogTail  = -0.15           // tail scale 0.86
	debtShare     = 1               // outage debt counted at most at the budget's rate
	budgetEpisode = 1000 * samplesPerMS
	maxLogTail    = 0.69 // tail scale 2
)

// budget runs the concealment budget controller once per Fill.
func (p *Player) budget() {
	a := &p.ad
	if a.off || p.fillPlay+p.fillConc == 0 {
		return
	}
	// One underrun episode counts at once for at most budgetEpisode: an
	// outage of seconds is not jitter a deeper buffer could have covered,
	// and taking it out of the budget at once would raise the target for
	// minutes. The rest is owed (a.debt) and counted afterwards at most at
	// debtShare times the budget's rate (while owing, the tail does not
	// widen), so the total concealed share still ends near the budget
	// without a jump in the delay.
	a.late += p.fillConc // only an underrun of the current response conceals
	conc := float64(p.fillConc)
	if p.underrun || p.fading {
		now := max(0, min(p.fillConc, budgetEpisode-a.episode))
		a.debt += float64(p.fillConc - now)
		conc = float64(now)
		a.episode += p.fillConc
	} else {
		a.episode = 0
	}
	if a.debt > 0 {
		r := min(a.debt, debtShare*p.cfg.ConcealBudget*float64(p.fillPlay))
		conc += r
		a.debt -= r
	}
	a.seen += p.fillPlay + p.fillConc
	g := budgetGain * max(1, gainBoost*gainSettle/float64(gainSettle+a.seen))
	d := g * (p.cfg.ConcealBudget*float64(p.fillPlay) - conc)
	l := min(max(a.logTail+d, minLogTail+a.tailShift), maxLogTail+a.tailShift)
	if l != a.logTail {
		a.logTail = l
		p.dm.SetTailScale(math.Exp(l))
	}
}

func (a *adaptive) init(cfg Config, st *timestretch.Stretcher) {
	a.st = st
	a.need = st.Need()
	a.buf = make([]int16, 3*a.need+st.MaxLag())
	a.spacing = int64(100 / max(cfg.StretchPct, 1))
	a.fastSpacing = int64(100 / max(cfg.CatchUpPct, cfg.StretchPct, 1))
	a.expandSpacing = int64(100 / max(cfg.ExpandPct, cfg.StretchPct, 1))
	a.lastOp = int64(st.MaxLag())
	a.off = cfg.StretchPct < 0
	a.minD = int64(cfg.MinDelayMS * samplesPerMS)
	a.maxD = int64(cfg.MaxDelayMS * samplesPerMS)
	a.target = a.minD
	a.tailShift = math.Log(cfg.ConcealBudget / DefaultConcealBudget)
	a.logTail = startLogTail + a.tailShift
}

func (a *adaptive) len() int { return a.wr - a.rd }

func (a *adaptive) clear() {
	a.rd, a.wr, a.credit, a.fromStage = 0, 0, 0, false
}

// compact moves the stage to the start of buf.
func (a *adaptive) compact() {
	if a.rd == 0 {
		return
	}
	n := copy(a.buf, a.buf[a.rd:a.wr])
	if a.credit != 0 {
		a.creditAt -= a.rd
	}
	a.rd, a.wr = 0, n
}

// refill results.
const (
	refOK    = iota // stage has what was asked, or all of cur the ring holds
	refRetry        // an interrupt must be processed first
	refOther        // the ring's front is a newer response
)

// refill moves samples of the current response from the ring into the
// stage until it holds want samples (or the ring has no more of cur).
func (p *Player) refill(want int) int {
	a := &p.ad
	a.compact()
	want = min(want, len(a.buf)-a.st.MaxLag())
	for a.len() < want {
		s, retry := p.next()
		if retry {
			return refRetry
		}
		if s == nil {
			return refOK
		}
		if s.Resp != p.cur {
			return refOther
		}
		if p.off == 0 {
			p.latency.record(p.now - s.Pushed + time.Duration(a.len())*time.Second/sampleRate)
		}
		n := min(s.N-p.off, want-a.len())
		copy(a.buf[a.wr:], s.buf[p.off:p.off+n])
		a.wr += n
		p.off += n
		p.fillTaken += int64(n)
		if p.off == s.N {
			p.off = 0
			p.ring.Release()
		}
	}
	return refOK
}

// fillAdaptive is Fill for PolicyAdaptive.
func (p *Player) fillAdaptive(dst []int16) {
	a := &p.ad
	// Control: smoothed level against the target, once per Fill.
	lvl := float64(p.depth.Load() + int64(a.len()))
	// ~100 ms time constant, or two chunks when the gateway sends larger
	// ones: the level saw-tooths by a chunk, and the smoothed level must
	// not follow the saw.
	chunk := p.chunkEMA.Load()
	alpha := min(1, float64(len(dst))/float64(max(2400, 2*chunk)))
	a.level += (lvl - a.level) * alpha
	t := p.dm.TargetSamples() + chunk/2 + targetMargin
	a.target = min(max(t, a.minD), a.maxD+chunk/2)
	// Starving below low: the buffer holds less than the jitter quantile
	// by half a chunk (at most 10 ms) just before the next chunk is due.
	// Chunks larger than 40 ms widen the hysteresis to an eighth of a
	// chunk: what is left of the saw in the smoothed level is not a level
	// error.
	a.low = a.target - chunk/2 - min(chunk/2, 10*samplesPerMS)
	a.hyst = max(stretchHyst, chunk/8)
	p.m.target.Set(a.target)

	for i := 0; i < len(dst); {
		if g := p.gen.Load(); g != p.seenGen {
			p.onInterrupt(g)
		}
		if p.fading {
			i += p.fadeOut(dst[i:])
			continue
		}
		switch p.state {
		case stIdle:
			s, retry := p.next()
			if retry {
				continue
			}
			if s == nil {
				i += p.silence(dst[i:])
				continue
			}
			p.begin(s.Resp)
			a.level, a.late = 0, 0
		case stPrebuffer:
			if !p.readyAdaptive() {
				i += p.silence(dst[i:])
				continue
			}
			p.state = stPlaying
			// The smoothed level starts at what is buffered; a chunk larger
			// than 20 ms that just arrived is counted at its mean over the
			// saw (half of it), not whole.
			a.level = float64(p.depth.Load() - p.fillTaken + int64(a.len()) - max(0, chunk/2-10*samplesPerMS))
			switch {
			case p.underrun:
				p.underrun = false
				p.rampUp = true
			case p.gain == 0:
				p.gain = p.fadeLen
			case p.gain < p.fadeLen:
				p.rampUp = true
			}
		case stPlaying:
			ended := p.ended.Load() >= p.cur
			r := p.refill(a.need + len(dst) - i)
			if r == refRetry {
				continue
			}
			if a.len() == 0 {
				switch {
				case r == refOther || ended:
					p.finish(EventDone)
				default:
					p.m.underruns.Inc()
					p.underrunTotal.Add(1)
					p.underrun = true
					p.state = stPrebuffer
				}
				continue
			}
			// In a pause, stretch operations repeat (refilling the stage
			// between them) while the level is still off target.
			retry := false
			for k := 0; p.maybeStretch(ended) && k < quietRounds; k++ {
				if r := p.refill(a.need + len(dst) - i); r == refRetry {
					retry = true
					break
				} else if r == refOther {
					break
				}
			}
			if retry || a.len() == 0 {
				continue
			}
			i += p.playStage(dst[i:])
		}
	}
}

// readyAdaptive reports whether the current response may (re)start.
func (p *Player) readyAdaptive() bool {
	if p.ended.Load() >= p.cur {
		return true
	}
	thr := min(max(p.ad.target, p.ad.minD), p.prebuffer)
	if p.underrun {
		thr = min(thr, resumeSamples) // resume as soon as audio is back
	}
	if p.depth.Load()-p.fillTaken+int64(p.ad.len()) >= max(thr, 1) {
		return true
	}
	s := p.ring.Front()
	return s != nil && s.Resp > p.cur
}

// maybeStretch runs time-stretch operations on the stage when the level
// is off target and the rate limit allows.
//
// Rates are counted in samples actually removed or inserted: after an
// operation of L samples the next one waits L*spacing output samples, so
// StretchPct and CatchUpPct are the real speed changes. In a pause (the
// stage's window is quiet, timestretch.Quiet) the rate limit does not
// apply and up to quietOps operations run at once: shortening or
// lengthening silence is not heard, so catch-up and build-up prefer the
// pauses between words.
//
// Besides the smoothed level, the instantaneous level (ring + stage) is
// watched: when it falls more than one chunk below the target the stream
// is late (a network block has begun, or a late frame holds up the ones
// behind it), and the player slows down at up to ExpandPct, the faster the
// emptier the buffer, so what is buffered lasts longer and less of the
// gap, if it goes on, has to be concealed with silence. The delay this
// adds is the delay an underrun would have added; it is taken out again by
// accelerating once audio is back.
func (p *Player) maybeStretch(ended bool) (more bool) {
	a := &p.ad
	if a.off || ended {
		return false
	}
	for k := 0; k < quietOps; k++ {
		if a.len() < a.need {
			return k > 0
		}
		lvl := int64(a.level)
		inst := p.depth.Load() - p.fillTaken + int64(a.len())
		quiet := a.st.Quiet(a.buf[a.rd:a.wr])
		if k > 0 && !quiet {
			return false
		}
		low, hyst := a.low, a.hyst
		var accel bool
		spacing := a.spacing
		switch {
		case lvl > a.target+hyst && inst >= low && (lvl < 2*a.maxD || a.late > a.target+catchUpExcess) && p.dm.Ahead() < 100*time.Millisecond:
			// The further above target, the faster the catch-up: StretchPct
			// at the hysteresis edge rising linearly to CatchUpPct at
			// catchUpExcess.
			accel = true
			f := min(1, float64(lvl-a.target-hyst)/catchUpExcess)
			spacing = int64(float64(a.spacing) + f*float64(a.fastSpacing-a.spacing))
		case low > 0 && inst < low:
			f := min(1, float64(low-inst)/float64(low))
			spacing = int64(float64(a.spacing) + f*float64(a.expandSpacing-a.spacing))
		case lvl+hyst < a.target:
		default:
			return false
		}
		if quiet {
			spacing = 1 // in a pause: up to one removed or inserted sample per output sample
		}
		if a.sinceOp < a.lastOp*spacing {
			return false
		}
		if accel {
			L, ok := a.st.Accelerate(a.buf[a.rd:a.wr])
			if !ok {
				return false
			}
			a.wr -= L
			a.addCredit(int64(L), a.rd+L)
			a.level -= float64(L)
			a.late = max(0, a.late-int64(L))
			p.stretchedTotal.Add(int64(L))
			p.m.accelerated.Add(int64(L))
			a.lastOp = int64(L)
		} else {
			if a.wr+a.st.MaxLag() > len(a.buf) {
				return false
			}
			x, L, ok := a.st.Decelerate(a.buf[a.rd:a.wr:len(a.buf)])
			if !ok {
				return false
			}
			a.wr = a.rd + len(x)
			a.addCredit(-int64(L), a.rd+3*L)
			a.level += float64(L)
			a.late += int64(L)
			p.stretchedTotal.Add(int64(L))
			p.m.decelerated.Add(int64(L))
			a.lastOp = int64(L)
		}
		a.sinceOp = 0
		if !quiet {
			return false
		}
	}
	return true
}

// addCredit records that the source position moves by c samples (removed
// > 0, inserted < 0) once the stage's read index passes at. Several quiet
// operations in a row add up; the credit is applied when the last of their
// points is passed.
func (a *adaptive) addCredit(c int64, at int) {
	if a.credit == 0 {
		a.creditAt = at
	} else {
		a.creditAt = max(a.creditAt, at)
	}
	a.credit += c
}

// playStage copies stage samples into dst (with the fade-in ramp).
func (p *Player) playStage(dst []int16) int {
	a := &p.ad
	n := min(len(dst), a.len())
	src := a.buf[a.rd : a.rd+n]
	p.copyRamp(dst, src)
	p.lastRaw = src[n-1]
	a.rd += n
	a.sinceOp += int64(n)
	p.played += int64(n)
	p.fillPlay += int64(n)
	if a.credit != 0 && a.rd >= a.creditAt {
		p.played += a.credit
		p.fillSrc += a.credit
		a.credit = 0
	}
	return n
}

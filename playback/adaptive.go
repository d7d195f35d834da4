package playback

import (
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
//	target = clamp(quantile + chunk/2 + 5 ms, MinDelayMS, MaxDelayMS)
//
// (chunk is the typical pushed chunk: the level saw-tooths by one chunk).
// Above target + 10 ms it removes one pitch period at the start of the
// stage (timestretch.Accelerate), below target - 10 ms it inserts one
// (Decelerate), no more often than StretchPct percent of the output. It
// does not accelerate while the stream arrives faster than real time (a
// gateway streaming ahead, or the catch-up burst after a stall: the
// excess there is not delay the user hears), nor once the response's audio
// has all arrived, nor when the buffer holds more than 2*MaxDelayMS (that
// is a reply streamed ahead, not jitter). An underrun is concealed by a
// fade to silence; playback resumes as soon as min(target, PrebufferMS) is
// buffered again, and the delay the underrun added is then taken out by
// accelerating.
type adaptive struct {
	st          *timestretch.Stretcher
	buf         []int16 // stage storage
	rd, wr      int     // stage holds buf[rd:wr]
	need        int     // samples one stretch operation looks at
	credit      int64   // source samples to add to played once rd passes creditAt
	creditAt    int
	level       float64 // smoothed buffer level, samples
	target      int64   // samples
	sinceOp     int64   // output samples since the last stretch operation
	spacing     int64   // output samples per stretched sample (100/StretchPct)
	fastSpacing int64   // the same for CatchUpPct
	minD        int64
	maxD        int64
	fromStage   bool // an interrupt fade takes its samples from the stage
	off         bool // StretchPct < 0: never stretch
}

const (
	resumeSamples = 10 * samplesPerMS // after an underrun, resume with this much
	stretchHyst   = 5 * samplesPerMS  // samples either side of the target
	catchUpExcess = 15 * samplesPerMS // this far above target+hysteresis, accelerate at CatchUpPct
	targetMargin  = 0
)

func (a *adaptive) init(cfg Config, st *timestretch.Stretcher) {
	a.st = st
	a.need = st.Need()
	a.buf = make([]int16, 3*a.need+st.MaxLag())
	a.spacing = int64(100 / max(cfg.StretchPct, 1))
	a.fastSpacing = int64(100 / max(cfg.CatchUpPct, cfg.StretchPct, 1))
	a.off = cfg.StretchPct < 0
	a.minD = int64(cfg.MinDelayMS * samplesPerMS)
	a.maxD = int64(cfg.MaxDelayMS * samplesPerMS)
	a.target = a.minD
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
	alpha := min(1, float64(len(dst))/2400) // ~100 ms time constant
	a.level += (lvl - a.level) * alpha
	t := p.dm.TargetSamples() + p.chunkEMA.Load()/2 + targetMargin
	a.target = min(max(t, a.minD), a.maxD)
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
			a.level = 0
		case stPrebuffer:
			if !p.readyAdaptive() {
				i += p.silence(dst[i:])
				continue
			}
			p.state = stPlaying
			a.level = float64(p.depth.Load() - p.fillTaken + int64(a.len()))
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
			p.maybeStretch(ended)
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

// maybeStretch runs one time-stretch operation on the stage when the level
// is off target and the rate limit allows.
func (p *Player) maybeStretch(ended bool) {
	a := &p.ad
	if a.off || a.len() < a.need || a.credit != 0 {
		return
	}
	lvl := int64(a.level)
	// The further above target, the faster the catch-up: StretchPct at the
	// hysteresis edge rising linearly to CatchUpPct at catchUpExcess.
	spacing := a.spacing
	if ex := lvl - a.target - stretchHyst; ex > 0 {
		f := min(1, float64(ex)/catchUpExcess)
		spacing = int64(float64(a.spacing) + f*float64(a.fastSpacing-a.spacing))
	}
	if a.sinceOp < int64(a.st.MaxLag())*spacing {
		return
	}
	switch {
	case lvl > a.target+stretchHyst && !ended && lvl < 2*a.maxD && p.dm.Ahead() < 100*time.Millisecond:
		L, ok := a.st.Accelerate(a.buf[a.rd:a.wr])
		if !ok {
			return
		}
		a.wr -= L
		a.credit, a.creditAt = int64(L), a.rd+L
		a.sinceOp = 0
		a.level -= float64(L)
		p.stretchedTotal.Add(int64(L))
		p.m.accelerated.Add(int64(L))
	case lvl+stretchHyst < a.target && !ended:
		x, L, ok := a.st.Decelerate(a.buf[a.rd:a.wr:len(a.buf)])
		if !ok {
			return
		}
		a.wr = a.rd + len(x)
		a.credit, a.creditAt = -int64(L), a.rd+3*L
		a.sinceOp = 0
		a.level += float64(L)
		p.stretchedTotal.Add(int64(L))
		p.m.decelerated.Add(int64(L))
	}
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

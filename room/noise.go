package room

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Noise kinds accepted by NewNoise and Config.Noise.
const (
	NoiseNone   = "none"
	NoiseWhite  = "white"
	NoisePink   = "pink"
	NoiseMotor  = "motor"
	NoiseBabble = "babble"
	// NoiseKnocks is impulsive: knocks, thuds and servo clunks on a quiet
	// pink floor (see Noise).
	NoiseKnocks = "knocks"
	// NoiseRecorded is a recording looped (NewRecordedNoise), not a kind
	// NewNoise or Config.Noise accept.
	NoiseRecorded = "recorded"
)

// NoiseKinds lists the accepted noise kinds.
var NoiseKinds = []string{NoiseNone, NoiseWhite, NoisePink, NoiseMotor, NoiseBabble, NoiseKnocks}

// Noise generates a stationary (white, pink), quasi-periodic (motor),
// speech-shaped fluctuating (babble) or impulsive (knocks) noise at unit
// RMS, deterministically from a seed. Fill is called from one goroutine.
//
// knocks is what a robot's own body and a lived-in room add between the
// steady noises: every 0.7..3 s an event 0..12 dB under the loudest, one of
// a knock on the chassis or a table (broadband noise decaying with a time
// constant of 8..50 ms), a thud (an 80..250 Hz damped sine, 20..60 ms) or
// a servo's clunk (two clicks 30..80 ms apart and a 1..3 kHz ring, 10..30
// ms), on a pink floor 40 dB under the events' peaks. Unit RMS is over a
// long stretch (a minute): the loudest peaks are about 30 dB above it, so
// an SNR against speech means little for this kind; duplex-bench uses it
// at 20 and 30 dB.
type Noise struct {
	kind string
	rate float64
	rng  *rand.Rand
	// pink: Paul Kellet's economy filter state.
	b0, b1, b2 float64
	// motor: fundamental and phase per harmonic, slow speed wobble.
	f0, phase, wob float64
	// babble: talkers, each a resonant filter on noise with a syllabic
	// envelope.
	talkers []talker
	// knocks: samples to the next event and the events sounding now.
	nextEvent int64
	events    [4]knockEvent
	n         int64
	// recorded: the recording at unit RMS and the read position.
	rec []float32
	pos int
}

// knockEvent is one sounding impulse of the knocks noise (amp 0: idle).
type knockEvent struct {
	kind         int     // 0 knock, 1 thud, 2 clunk
	t            int64   // samples since its start
	amp, decay   float64 // peak and per-sample amplitude factor
	env          float64 // the envelope now
	w            float64 // thud or ring angular frequency per sample
	click2       int64   // clunk: the second click's offset
	clickDecay   float64 // clunk: the clicks' per-sample factor
	lp1, lp2, hp float64 // knock: filter state (a table or a panel colours it)
}

type talker struct {
	env, envHz, envPh float64
	// two-pole resonator (formant) state and coefficients
	a1, a2, y1, y2 float64
}

// NewNoise returns a generator of the given kind at rate Hz.
func NewNoise(kind string, rate int, seed uint64) (*Noise, error) {
	if rate <= 0 {
		return nil, fmt.Errorf("room: noise rate %d Hz must be positive", rate)
	}
	n := &Noise{kind: kind, rate: float64(rate), rng: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))}
	switch kind {
	case NoiseNone, NoiseWhite, NoisePink:
	case NoiseKnocks:
		n.nextEvent = int64((0.2 + 0.8*n.rng.Float64()) * n.rate)
	case NoiseMotor:
		n.f0 = 90 + 20*n.rng.Float64() // a small DC motor or fan, 90..110 Hz
	case NoiseBabble:
		for range 6 {
			fc := 300 + 2200*n.rng.Float64()
			r := 0.97
			w := 2 * math.Pi * fc / n.rate
			n.talkers = append(n.talkers, talker{
				envHz: 3 + 3*n.rng.Float64(), envPh: 2 * math.Pi * n.rng.Float64(),
				a1: 2 * r * math.Cos(w), a2: -r * r,
			})
		}
	default:
		return nil, fmt.Errorf("room: noise kind %q is not one of %v", kind, NoiseKinds)
	}
	return n, nil
}

// ErrSilentRecording: NewRecordedNoise got a recording without signal.
var ErrSilentRecording = errors.New("room: noise recording is silent")

// NewRecordedNoise returns a generator that plays rec (one channel at the
// caller's rate; at least 100 ms) scaled to unit RMS, looped, from a
// position chosen by seed, so that seeds give different stretches of a
// long recording (a recorded fan, street or multi-talker babble).
func NewRecordedNoise(rec []int16, seed uint64) (*Noise, error) {
	if len(rec) < 1600 {
		return nil, fmt.Errorf("room: noise recording of %d samples is too short", len(rec))
	}
	var mean, ss float64
	for _, v := range rec {
		mean += float64(v)
	}
	mean /= float64(len(rec))
	for _, v := range rec {
		ss += (float64(v) - mean) * (float64(v) - mean)
	}
	rms := math.Sqrt(ss / float64(len(rec)))
	if rms < 1 {
		return nil, ErrSilentRecording
	}
	n := &Noise{kind: NoiseRecorded, rec: make([]float32, len(rec))}
	for i, v := range rec {
		n.rec[i] = float32((float64(v) - mean) / rms)
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	n.pos = rng.IntN(len(rec))
	return n, nil
}

// Kind returns the noise kind.
func (n *Noise) Kind() string { return n.kind }

// Fill writes len(dst) samples of unit-RMS noise (zeros for NoiseNone).
// It does not allocate.
func (n *Noise) Fill(dst []float32) {
	switch n.kind {
	case NoiseNone:
		clear(dst)
	case NoiseRecorded:
		for len(dst) > 0 {
			k := copy(dst, n.rec[n.pos:])
			dst = dst[k:]
			n.pos = (n.pos + k) % len(n.rec)
		}
	case NoiseWhite:
		for i := range dst {
			dst[i] = float32(n.rng.NormFloat64())
		}
	case NoisePink:
		for i := range dst {
			dst[i] = float32(n.pink())
		}
	case NoiseMotor:
		// Hum with 8 harmonics (1/k), ±2 % speed wobble at 0.5 Hz and a
		// broadband brush/bearing component 12 dB below.
		for i := range dst {
			t := float64(n.n) / n.rate
			f := n.f0 * (1 + 0.02*math.Sin(2*math.Pi*0.5*t))
			n.phase += 2 * math.Pi * f / n.rate
			if n.phase > 2*math.Pi {
				n.phase -= 2 * math.Pi
			}
			var s float64
			for k := 1; k <= 8; k++ {
				s += math.Sin(float64(k)*n.phase) / float64(k)
			}
			dst[i] = float32(1.074*s + 0.344*n.rng.NormFloat64())
			n.n++
		}
	case NoiseKnocks:
		n.fillKnocks(dst)
	case NoiseBabble:
		for i := range dst {
			t := float64(n.n) / n.rate
			var s float64
			for k := range n.talkers {
				tk := &n.talkers[k]
				y := n.rng.NormFloat64() + tk.a1*tk.y1 + tk.a2*tk.y2
				tk.y2, tk.y1 = tk.y1, y
				e := math.Sin(2*math.Pi*tk.envHz*t + tk.envPh)
				s += y * e * e
			}
			dst[i] = float32(s * 0.0705)
			n.n++
		}
	}
}

// pink returns the next sample of unit-RMS pink noise: Kellet's 3-pole
// approximation of a -3 dB/octave slope on white noise of unit RMS, the
// constant scaling it back to unit RMS.
func (n *Noise) pink() float64 {
	w := n.rng.NormFloat64()
	n.b0 = 0.99765*n.b0 + w*0.0990460
	n.b1 = 0.96300*n.b1 + w*0.2965164
	n.b2 = 0.57000*n.b2 + w*1.0526913
	return (n.b0 + n.b1 + n.b2 + w*0.1848) / 3.1
}

// knocksGain scales the knocks noise to about unit RMS over a minute
// (measured over seeds 1..20: TestNoiseKnocks).
const knocksGain = 22.0

// knocksFloor is the pink floor's RMS relative to an event at amplitude 1.
const knocksFloor = 0.01

func (n *Noise) fillKnocks(dst []float32) {
	for i := range dst {
		if n.nextEvent <= 0 {
			n.startKnock()
			n.nextEvent = int64((0.7 + 2.3*n.rng.Float64()) * n.rate)
		}
		n.nextEvent--
		v := knocksFloor * n.pink()
		for k := range n.events {
			e := &n.events[k]
			if e.amp == 0 {
				continue
			}
			env := e.env
			e.env *= e.decay
			switch e.kind {
			case 0:
				// Noise through a gentle band-pass (a panel or a table).
				x := n.rng.NormFloat64()
				e.lp1 += 0.5 * (x - e.lp1)
				e.lp2 += 0.5 * (e.lp1 - e.lp2)
				y := e.lp2 - e.hp
				e.hp += 0.02 * y
				v += 2.2 * env * y
			case 1:
				v += env * math.Sqrt2 * math.Sin(e.w*float64(e.t))
			case 2:
				if e.t == 0 || e.t == e.click2 {
					v += 2 * e.amp
				}
				v += env * math.Sqrt2 * math.Sin(e.w*float64(e.t))
			}
			e.t++
			if env < e.amp*1e-3 && (e.kind != 2 || e.t > e.click2) {
				e.amp = 0
			}
		}
		dst[i] = float32(knocksGain * v)
		n.n++
	}
}

// startKnock starts an event in a free slot (or the oldest).
func (n *Noise) startKnock() {
	slot := 0
	for k := range n.events {
		if n.events[k].amp == 0 {
			slot = k
			break
		}
		if n.events[k].t > n.events[slot].t {
			slot = k
		}
	}
	e := knockEvent{kind: n.rng.IntN(3), amp: math.Pow(10, -12*n.rng.Float64()/20)}
	perSample := func(tauS float64) float64 { return math.Exp(-1 / (tauS * n.rate)) }
	switch e.kind {
	case 0:
		e.decay = perSample(0.008 + 0.042*n.rng.Float64())
	case 1:
		e.decay = perSample(0.02 + 0.04*n.rng.Float64())
		e.w = 2 * math.Pi * (80 + 170*n.rng.Float64()) / n.rate
	case 2:
		e.decay = perSample(0.01 + 0.02*n.rng.Float64())
		e.w = 2 * math.Pi * (1000 + 2000*n.rng.Float64()) / n.rate
		e.click2 = int64((0.03 + 0.05*n.rng.Float64()) * n.rate)
		e.amp *= 0.5
	}
	e.env = e.amp
	n.events[slot] = e
}

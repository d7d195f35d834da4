// Package room simulates the acoustic echo path of a robot: what the robot's
// own loudspeaker plays reaches its microphone after a bulk delay, through an
// impulse response (a synthetic exponentially decaying reverberation of a
// given RT60, or one read from a WAV file), with an echo gain (the inverse
// of the echo return loss), an optional loudspeaker non-linearity (soft
// clipping), a clock offset between the speaker and the mic (the mic
// samples a little faster or slower; fractional resampling) and additive
// noise (white, pink, motor hum, babble, knocks, or a recording looped).
//
// The core is independent of devices and time: Play hands the path the
// samples the speaker plays, positioned at the speaker's sample index;
// Capture adds the echo and noise for a stretch of mic samples at the mic's
// sample index. hw/sim wires it between the simulated speaker and mic on a
// clock; duplex-bench drives it sample-exactly from WAV files.
//
// # Concurrency
//
// Play and Capture may be called from different goroutines (the speaker's
// and the mic's); they take a mutex. It is a simulation, not a hot path.
package room

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/robot-agent/robot-agent/codec/resample"
	"github.com/robot-agent/robot-agent/codec/wav"
)

// Rate is the path's internal and mic-side sample rate (hw.MicFormat).
const Rate = 16000

// Ranges accepted by Validate.
const (
	MaxDelayMS    = 1000.0
	MinEchoGainDB = -40.0
	MaxEchoGainDB = 20.0
	MaxRT60       = 2.0
	MaxDriftPPM   = 1000.0
	maxIRSeconds  = 2.0
	velvetPerSec  = 2000.0 // velvet-noise pulse density of the synthetic tail
	interpHalf    = 8      // half-width of the fractional-delay sinc
	interpPhases  = 256
	farRingLen    = 1 << 19 // 32 s at 16 kHz
	micRingLen    = 1 << 16 // > maxIRSeconds at 16 kHz
)

// ErrConfig wraps every configuration problem.
var ErrConfig = errors.New("room: invalid config")

// Config describes a room. The zero value is a direct path with no delay at
// 0 dB echo gain and no noise; Moderate is a typical robot.
type Config struct {
	// DelayMS is the bulk delay from the speaker playing a sample to the
	// direct sound reaching the mic, beyond the device latencies
	// (0..1000; a robot: 20..250 including DSP on the way).
	DelayMS float64 `yaml:"delay_ms"`
	// EchoGainDB is the level of the echo at the mic relative to what was
	// played (energy gain of the impulse response): -ERL. A robot with the
	// speaker centimetres from the mic: -10..+10.
	EchoGainDB float64 `yaml:"echo_gain_db"`
	// RT60 is the reverberation time in seconds of the synthetic impulse
	// response (0: direct path only).
	RT60 float64 `yaml:"rt60_s"`
	// DRRDB is the direct-to-reverberant energy ratio of the synthetic
	// impulse response (default 6 dB when RT60 > 0).
	DRRDB float64 `yaml:"drr_db"`
	// IRWAV, if set, is an impulse response (any WAV codec/wav reads: any
	// rate, 8–32-bit integer or float samples; the first channel) used instead of the synthetic one; it is scaled to
	// EchoGainDB. Its leading silence counts as delay.
	IRWAV string `yaml:"ir_wav"`
	// SoftClip > 0 models the loudspeaker's non-linearity: the played
	// signal x (full scale 1) becomes tanh(k·x)/k with k = SoftClip, so
	// small signals keep their gain and peaks are compressed. 0 is linear.
	SoftClip float64 `yaml:"soft_clip"`
	// DriftPPM is how much faster (positive) the mic's clock runs than the
	// speaker's, in parts per million (±1000).
	DriftPPM float64 `yaml:"drift_ppm"`
	// Noise is the additive noise kind (NoiseKinds; "" = none) and NoiseDBFS
	// its RMS level at the mic.
	Noise     string  `yaml:"noise"`
	NoiseDBFS float64 `yaml:"noise_dbfs"`
	// NoiseWAV, if set, is a noise recording (any WAV codec/wav reads;
	// channels mixed, resampled to 16 kHz; at least 100 ms) that replaces
	// the Noise kind: the robot's own motors, a fan, a street, a room of
	// talkers. It is looped from a position chosen by Seed and played at
	// NoiseDBFS (its RMS over the whole file).
	NoiseWAV string `yaml:"noise_wav"`
	// Seed makes the impulse response and the noise reproducible.
	Seed uint64 `yaml:"seed"`
}

// HasNoise reports whether c adds noise: a Noise kind other than none, or
// a NoiseWAV.
func (c Config) HasNoise() bool {
	return c.NoiseWAV != "" || c.Noise != "" && c.Noise != NoiseNone
}

// Moderate is the default echo path of `make run`: a small robot with the
// speaker near the mic in an ordinary room.
func Moderate() Config {
	return Config{DelayMS: 40, EchoGainDB: -6, RT60: 0.3, DRRDB: 6, DriftPPM: 50, Noise: NoisePink, NoiseDBFS: -60, Seed: 7}
}

// Validate reports every problem with c, each naming the field and value.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, a...)...))
	}
	if !(c.DelayMS >= 0 && c.DelayMS <= MaxDelayMS) {
		bad("delay_ms %v out of range 0..%v", c.DelayMS, MaxDelayMS)
	}
	if !(c.EchoGainDB >= MinEchoGainDB && c.EchoGainDB <= MaxEchoGainDB) {
		bad("echo_gain_db %v out of range %v..%v", c.EchoGainDB, MinEchoGainDB, MaxEchoGainDB)
	}
	if !(c.RT60 >= 0 && c.RT60 <= MaxRT60) {
		bad("rt60_s %v out of range 0..%v", c.RT60, MaxRT60)
	}
	if !(c.DRRDB >= -20 && c.DRRDB <= 40) {
		bad("drr_db %v out of range -20..40", c.DRRDB)
	}
	if !(c.SoftClip >= 0 && c.SoftClip <= 20) {
		bad("soft_clip %v out of range 0..20", c.SoftClip)
	}
	if !(c.DriftPPM >= -MaxDriftPPM && c.DriftPPM <= MaxDriftPPM) {
		bad("drift_ppm %v out of range -%v..%v", c.DriftPPM, MaxDriftPPM, MaxDriftPPM)
	}
	if c.Noise != "" && !slices.Contains(NoiseKinds, c.Noise) {
		bad("noise %q is not one of %v", c.Noise, NoiseKinds)
	}
	if c.HasNoise() && !(c.NoiseDBFS <= 0 && c.NoiseDBFS >= -120) {
		bad("noise_dbfs %v out of range -120..0", c.NoiseDBFS)
	}
	return errors.Join(errs...)
}

type tap struct {
	k int
	g float32
}

// Path is one echo path. See the package documentation.
type Path struct {
	cfg       Config
	taps      []tap // impulse response, sparse
	irLen     int
	delay     float64 // bulk delay in samples
	ratio     float64 // speaker samples per mic sample: 1/(1+ppm)
	clip      float32
	noise     *Noise
	noiseGain float32
	sinc      [interpPhases + 1][2 * interpHalf]float32

	mu      sync.Mutex
	rs      *resample.Resampler
	rsIn    int // rate the resampler was made for
	rsBuf   []int16
	far     []float32 // ring, speaker samples at 16 kHz by absolute index
	farEnd  int64     // next speaker index to be written
	farNext float64   // speaker index (16 kHz) the next block continues at
	farAny  bool
	mic     []float32 // ring, far signal on the mic clock before the IR
	micNext int64     // next mic index of mic[] to compute
	micAny  bool
	nbuf    []float32
}

// New builds a Path for c.
func New(c Config) (*Path, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.RT60 > 0 && c.DRRDB == 0 {
		c.DRRDB = 6
	}
	p := &Path{cfg: c, delay: c.DelayMS * Rate / 1000, ratio: 1 / (1 + c.DriftPPM*1e-6),
		far: make([]float32, farRingLen), mic: make([]float32, micRingLen), nbuf: make([]float32, 1024)}
	if c.SoftClip > 0 {
		p.clip = float32(c.SoftClip)
	}
	var ir []float64
	if c.IRWAV != "" {
		a, err := wav.ReadFileFloat(c.IRWAV)
		if err != nil {
			return nil, fmt.Errorf("%w: ir_wav %q: %v", ErrConfig, c.IRWAV, err)
		}
		ir = irFromWAV(a)
		if len(ir) == 0 {
			return nil, fmt.Errorf("%w: ir_wav %q is empty", ErrConfig, c.IRWAV)
		}
	} else {
		ir = synthIR(c)
	}
	var e float64
	for _, v := range ir {
		e += v * v
	}
	if e == 0 {
		return nil, fmt.Errorf("%w: impulse response is all zeros", ErrConfig)
	}
	g := math.Sqrt(math.Pow(10, c.EchoGainDB/10) / e)
	for k, v := range ir {
		if v != 0 {
			p.taps = append(p.taps, tap{k, float32(v * g)})
		}
	}
	p.irLen = len(ir)
	var err error
	if c.NoiseWAV != "" {
		rec, rerr := ReadNoiseWAV(c.NoiseWAV)
		if rerr == nil {
			p.noise, rerr = NewRecordedNoise(rec, c.Seed+1)
		}
		if rerr != nil {
			return nil, fmt.Errorf("%w: noise_wav %q: %v", ErrConfig, c.NoiseWAV, rerr)
		}
	} else {
		kind := c.Noise
		if kind == "" {
			kind = NoiseNone
		}
		if p.noise, err = NewNoise(kind, Rate, c.Seed+1); err != nil {
			return nil, err
		}
	}
	if c.HasNoise() {
		p.noiseGain = float32(32768 * math.Pow(10, c.NoiseDBFS/20))
	}
	for ph := 0; ph <= interpPhases; ph++ {
		frac := float64(ph) / interpPhases
		var sum float64
		row := &p.sinc[ph]
		for j := range 2 * interpHalf {
			x := float64(j-interpHalf+1) - frac // tap j is sample floor(pos)-interpHalf+1+j
			w := 0.5 + 0.5*math.Cos(math.Pi*x/float64(interpHalf+1))
			v := sincf(x) * w
			row[j] = float32(v)
			sum += v
		}
		for j := range row {
			row[j] = float32(float64(row[j]) / sum)
		}
	}
	return p, nil
}

func sincf(x float64) float64 {
	if x == 0 {
		return 1
	}
	return math.Sin(math.Pi*x) / (math.Pi * x)
}

// synthIR is a unit direct path followed by a velvet-noise tail decaying by
// 60 dB in RT60 seconds, scaled to the direct-to-reverberant ratio.
func synthIR(c Config) []float64 {
	if c.RT60 == 0 {
		return []float64{1}
	}
	n := int(math.Min(c.RT60, maxIRSeconds) * Rate)
	ir := make([]float64, n)
	ir[0] = 1
	rng := rand.New(rand.NewPCG(c.Seed, 0xda3e39cb94b95bdb))
	grid := Rate / velvetPerSec
	var tail float64
	start := int(0.002 * Rate) // first reflections after 2 ms
	for m := start; m+int(grid) < n; m += int(grid) {
		k := m + rng.IntN(int(grid))
		s := 1.0
		if rng.IntN(2) == 0 {
			s = -1
		}
		v := s * math.Exp(-6.9078*float64(k)/Rate/c.RT60)
		ir[k] = v
		tail += v * v
	}
	if tail > 0 {
		scale := math.Sqrt(math.Pow(10, -c.DRRDB/10) / tail)
		for k := 1; k < n; k++ {
			ir[k] *= scale
		}
	}
	return ir
}

// irFromWAV is the impulse response in a: its first channel, at the file's
// own precision (a float file's level does not matter: New scales the
// response to EchoGainDB), resampled to Rate with its timing kept, at most
// maxIRSeconds long.
func irFromWAV(a wav.FloatAudio) []float64 {
	ch := max(a.Channels, 1)
	mono := make([]float32, len(a.Samples)/ch)
	for i := range mono {
		mono[i] = a.Samples[i*ch]
	}
	if a.SampleRate != Rate {
		if r, err := resample.New(a.SampleRate, Rate, resample.QualityHigh); err == nil {
			// Flushed with the filter's delay in zeros, and that delay
			// dropped from the start: the response keeps its timing.
			d := int(math.Round(r.Delay()))
			in := append(mono, make([]float32, (d+1)*a.SampleRate/Rate+1)...)
			out := make([]float32, r.OutLen(len(in)))
			out = out[:r.ProcessFloat(out, in)]
			mono = out[min(d, len(out)):min(len(out), d+r.OutLen(len(mono)))]
		}
	}
	n := min(len(mono), int(maxIRSeconds*Rate))
	ir := make([]float64, n)
	for i := range ir {
		ir[i] = float64(mono[i])
	}
	return ir
}

// ReadNoiseWAV reads a noise recording as Config.NoiseWAV plays it: its
// channels mixed, at Rate.
func ReadNoiseWAV(path string) ([]int16, error) {
	a, err := wav.ReadFile(path)
	if err != nil {
		return nil, err
	}
	mono := a.Mono()
	if a.SampleRate == Rate {
		return mono, nil
	}
	r, err := resample.New(a.SampleRate, Rate, resample.QualityDefault)
	if err != nil {
		return nil, err
	}
	out := make([]int16, r.OutLen(len(mono)))
	return out[:r.Process(out, mono)], nil
}

// Config returns the configuration the path was built with.
func (p *Path) Config() Config { return p.cfg }

// IRLength returns the length of the impulse response in samples (16 kHz).
func (p *Path) IRLength() int { return p.irLen }

// Play hands the path what the speaker plays: samples p (mono, rate Hz)
// whose first sample plays at speaker sample index at (16 kHz units,
// counted on the speaker's clock from a common origin, e.g. the clock's
// zero). Blocks normally follow each other (at == the end of the previous
// block); a later at is a pause in which the speaker played silence, an
// earlier one is treated as contiguous. It does not allocate after the
// first call at a given rate.
func (p *Path) Play(at int64, samples []int16, rate int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rs == nil || p.rsIn != rate {
		r, err := resample.New(rate, Rate, resample.QualityHigh)
		if err != nil {
			return fmt.Errorf("room: speaker rate: %w", err)
		}
		p.rs, p.rsIn = r, rate
	}
	if need := p.rs.OutLen(len(samples)); cap(p.rsBuf) < need {
		p.rsBuf = make([]int16, need*2)
	}
	// farNext is where the speaker's next sample plays if this block
	// follows the last; farEnd is the ring position of the next resampler
	// output, Delay earlier (output k of the resampler is input k - Delay).
	if next := int64(math.Round(p.farNext)); !p.farAny || at > next+1 {
		d := int64(math.Round(p.rs.Delay()))
		if !p.farAny || at-next > Rate/50 {
			// A pause: the speaker played silence; start afresh.
			if p.farAny && at-next < farRingLen {
				for i := p.farEnd; i < at-d; i++ {
					p.far[i&(farRingLen-1)] = 0
				}
			} else {
				clear(p.far)
			}
			p.rs.Reset()
			p.farEnd = at - d
		} else {
			// A short gap: zeros, keeping the resampler's history.
			for i := range at - next {
				p.far[(p.farEnd+i)&(farRingLen-1)] = 0
			}
			p.farEnd += at - next
		}
		p.farNext, p.farAny = float64(at), true
	}
	p.farNext += float64(len(samples)) * Rate / float64(rate)
	out := p.rsBuf[:p.rs.Process(p.rsBuf, samples)]
	for _, s := range out {
		x := float32(s) / 32768
		if p.clip > 0 {
			x = float32(math.Tanh(float64(p.clip*x))) / p.clip
		}
		p.far[p.farEnd&(farRingLen-1)] = x
		p.farEnd++
	}
	return nil
}

// farAt returns the played signal at fractional speaker index pos (0 where
// nothing was played). Called with mu held.
func (p *Path) farAt(pos float64) float32 {
	base := math.Floor(pos)
	frac := pos - base
	i0 := int64(base) - interpHalf + 1
	if !p.farAny || i0+2*interpHalf <= p.farEnd-farRingLen || i0 >= p.farEnd {
		return 0
	}
	row := &p.sinc[int(frac*interpPhases+0.5)]
	var s float32
	for j := range 2 * interpHalf {
		i := i0 + int64(j)
		if i < 0 || i >= p.farEnd || i < p.farEnd-farRingLen {
			continue
		}
		s += row[j] * p.far[i&(farRingLen-1)]
	}
	return s
}

// Capture adds the echo and the noise to dst, the mic samples with mic
// sample index at (16 kHz on the mic's clock, same origin as Play). It does
// not allocate.
func (p *Path) Capture(at int64, dst []int16) {
	p.mu.Lock()
	defer p.mu.Unlock()
	end := at + int64(len(dst))
	if !p.micAny || at < p.micNext-int64(micRingLen-p.irLen) || at > p.micNext+micRingLen {
		p.micNext = at - int64(p.irLen)
		p.micAny = true
	}
	for m := p.micNext; m < end; m++ {
		pos := float64(m)*p.ratio - p.delay
		p.mic[m&(micRingLen-1)] = p.farAt(pos)
	}
	if end > p.micNext {
		p.micNext = end
	}
	for i := range dst {
		m := at + int64(i)
		var y float32
		for _, t := range p.taps {
			y += t.g * p.mic[(m-int64(t.k))&(micRingLen-1)]
		}
		dst[i] = sat16(float32(dst[i]) + y*32768)
	}
	if p.noiseGain != 0 {
		for off := 0; off < len(dst); off += len(p.nbuf) {
			n := p.nbuf[:min(len(p.nbuf), len(dst)-off)]
			p.noise.Fill(n)
			for i, v := range n {
				dst[off+i] = sat16(float32(dst[off+i]) + v*p.noiseGain)
			}
		}
	}
}

func sat16(v float32) int16 {
	v = float32(math.Round(float64(v)))
	if v > 32767 {
		return 32767
	}
	if v < -32768 {
		return -32768
	}
	return int16(v)
}

package duplex

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/robot-agent/robot-agent/aec"
	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/room"
	"github.com/robot-agent/robot-agent/vad"
)

// VADScene is one VAD measurement (duplex-bench --vad-compare): a near-end
// phrase placed Trials times in noise, no echo. Timeline: LeadMS (1 s) of
// noise, then per trial a slot three times the phrase long with the phrase
// starting a third into it, then GapMS (1 s). The phrase is scaled to an
// active level (ActiveLevel) of -20 dBFS and the noise (room.NewNoise with
// seed Seed+1, as room.Path makes it) to -20 − SNRDB dBFS RMS. The mix
// optionally goes through WebRTC's noise suppressor (NS), then to the
// detector alone (per-frame decisions) and to the capture pump with that
// detector (utterance starts, pre-roll).
type VADScene struct {
	Near   []int16 // 16 kHz mono
	Trials int     // default 10
	GapMS  int     // default 1000
	LeadMS int     // default 1000
	// IdleMS of noise alone follow the last trial; utterances the pump
	// starts there are IdleStarts (its frames are not in the frame counts).
	IdleMS int
	// WarmupMS of noise alone precede the lead: the detector and the pump
	// run through them (a mic that has been on for a while, so that
	// detectors that learn their background have learnt it), and nothing
	// there is counted: no frames, no starts (an utterance started there
	// that runs into a phrase still clips it).
	WarmupMS int
	Noise    string
	// NoiseRec, when set, is the noise instead of Noise: a 16 kHz
	// recording looped from a position chosen by the seed
	// (room.NewRecordedNoise with Seed+1).
	NoiseRec []int16
	SNRDB    float64
	Seed     uint64
	// VAD is the pump's VAD configuration (Detector, DetectorMode, ...;
	// zero fields take capture's defaults).
	VAD capture.VADConfig
	// NS runs WebRTC's noise suppressor (aec kind webrtc with
	// NoiseSuppression, far end silent) before the detector.
	NS bool
	// LookaheadMS lists lookaheads (multiples of 20 ms, 0..1000) for
	// which the frame counts are also taken with the decision made that
	// much later (VADResult.Lookahead).
	LookaheadMS []int
}

// Lookahead is the frame counts of a decision made LookaheadMS after the
// frame: a frame is speech when the detector called it or any frame that
// starts within LookaheadMS after it. It is what a pre-roll of that length
// does for an utterance: once the detector fires, the frames just before
// are taken in too. A speech onset is still reported when the detector
// fires (VADResult.RawOnsets does not change); a frame is only known to
// be non-speech LookaheadMS later.
type Lookahead struct {
	MS int
	FrameCounts
}

// FrameCounts are per-frame decisions counted against the three labels.
type FrameCounts struct {
	// Frames: against Labels (the clean phrase's frames above
	// max(-60 dBFS, loudest − 40 dB)).
	Frames VADCounts
	// FramesActive: against LabelsActive (frames within 15.9 dB of the
	// phrase's active level, ITU-T P.56's margin).
	FramesActive VADCounts
	// FramesP56: against LabelsP56 (ITU-T P.56 method B activity, with its
	// 200 ms hangover).
	FramesP56 VADCounts
}

// Add returns the sums of c and o.
func (c FrameCounts) Add(o FrameCounts) FrameCounts {
	return FrameCounts{c.Frames.Add(o.Frames), c.FramesActive.Add(o.FramesActive), c.FramesP56.Add(o.FramesP56)}
}

// MaxLookaheadMS bounds VADScene.LookaheadMS.
const MaxLookaheadMS = 1000

// VADCounts are per-frame decisions against labels.
type VADCounts struct{ TP, FP, FN, TN int }

// Add returns c + o.
func (c VADCounts) Add(o VADCounts) VADCounts {
	return VADCounts{c.TP + o.TP, c.FP + o.FP, c.FN + o.FN, c.TN + o.TN}
}

// Precision: frames called speech that are labelled speech.
func (c VADCounts) Precision() float64 { return frac(c.TP, c.TP+c.FP) }

// Recall: speech frames called speech.
func (c VADCounts) Recall() float64 { return frac(c.TP, c.TP+c.FN) }

// FPR: non-speech frames called speech.
func (c VADCounts) FPR() float64 { return frac(c.FP, c.FP+c.TN) }

func (c *VADCounts) count(called, label bool) {
	switch {
	case called && label:
		c.TP++
	case called:
		c.FP++
	case label:
		c.FN++
	default:
		c.TN++
	}
}

// VADResult of RunVAD.
type VADResult struct {
	Detector string
	// The detector's raw decision per 20 ms frame against each label.
	FrameCounts
	// RawOnsets: per detected phrase, end of the first frame the detector
	// called speech (from 40 ms before the first labelled frame) minus the
	// start of the first labelled frame: 20 ms when it fires on that
	// frame. Phrases not called speech before their end are left out.
	RawOnsets []time.Duration
	// RawOnsetsP56: the same against the first frame LabelsP56 marks
	// (ITU-T P.56 method B activity): 20 ms when the detector fires on that
	// frame, less when it fired on a fainter frame before it.
	RawOnsetsP56 []time.Duration
	// RawOnsetsActive: the same against the first frame LabelsActive
	// marks (within 15.9 dB of the active level, no hangover).
	RawOnsetsActive []time.Duration
	// Onsets: the pump's utterance starts (decision time) minus the start of
	// the phrase's first labelled frame; with min_speech_ms 60 the least
	// possible is 60 ms.
	Onsets []time.Duration
	// OnsetsActive: the same starts against the phrase's first frame
	// labelled by LabelsActive.
	OnsetsActive []time.Duration
	// Lookahead: per VADScene.LookaheadMS, the same counts with that
	// lookahead.
	Lookahead []Lookahead
	// Clipped: phrases whose first labelled frame was not delivered (the
	// pre-roll did not reach back to it) or that were never delivered.
	Clipped, Phrases int
	// FalseStarts: utterances started with no phrase around (before the
	// idle stretch).
	FalseStarts int
	// IdleStarts: utterances started in the IdleMS of noise alone.
	IdleStarts int
}

// Percentile returns the p-th percentile (0..100) of ds, or -1 when empty.
func Percentile(ds []time.Duration, p float64) time.Duration {
	return Result{Onsets: ds}.OnsetPercentile(p)
}

// LabelsActive marks each 20 ms frame of clean speech s (16 kHz) whose
// level is within 15.9 dB of s's active level (ActiveLevel): the margin
// ITU-T P.56 uses for "active" speech, without its 200 ms hangover. It is
// stricter than Labels: onsets and tails more than 16 dB below the active
// level, inaudible at low SNR, are not counted.
func LabelsActive(s []int16) []bool {
	db := frameDB(s, micFrame)
	th := ActiveLevel(s, NearRate) - 15.9
	out := make([]bool, len(db))
	for i, v := range db {
		out[i] = v >= th
	}
	return out
}

// RunVAD measures sc.
func RunVAD(sc VADScene) (VADResult, error) {
	if len(sc.Near) < micFrame {
		return VADResult{}, fmt.Errorf("%w: no near-end audio", ErrScenario)
	}
	if sc.Trials <= 0 {
		sc.Trials = 10
	}
	if sc.GapMS <= 0 {
		sc.GapMS = 1000
	}
	if sc.LeadMS <= 0 {
		sc.LeadMS = 1000
	}
	for _, ms := range sc.LookaheadMS {
		if ms < 0 || ms > MaxLookaheadMS || ms%frameMS != 0 {
			return VADResult{}, fmt.Errorf("%w: lookahead %d ms is not a multiple of %d ms in 0..%d", ErrScenario, ms, frameMS, MaxLookaheadMS)
		}
	}
	const level = -20.0
	near := slices.Clone(sc.Near)
	Scale(near, level-ActiveLevel(near, NearRate))

	slot := (3*len(near) + micFrame - 1) / micFrame * micFrame
	warm := max(sc.WarmupMS, 0) * NearRate / 1000 / micFrame * micFrame
	lead := warm + sc.LeadMS*NearRate/1000/micFrame*micFrame
	gap := sc.GapMS * NearRate / 1000 / micFrame * micFrame
	trials := lead + sc.Trials*(slot+gap)
	total := trials + max(sc.IdleMS, 0)*NearRate/1000/micFrame*micFrame
	clean := make([]int16, total)
	var phrases []phrase
	for r := range sc.Trials {
		at := lead + r*(slot+gap) + slot/3/micFrame*micFrame
		n := copy(clean[at:], near)
		phrases = append(phrases, phrase{start: at, end: at + n})
	}
	labels, active, p56 := Labels(clean), LabelsActive(clean), LabelsP56(clean)
	onsetActive, onsetP56 := make([]int, len(phrases)), make([]int, len(phrases))
	for i := range phrases {
		p := &phrases[i]
		p.onset, onsetActive[i], onsetP56[i] = p.end, p.end, p.end
		for k := p.end/micFrame - 1; k >= p.start/micFrame; k-- {
			if labels[k] {
				p.onset = k * micFrame
			}
			if active[k] {
				onsetActive[i] = k * micFrame
			}
			if p56[k] {
				onsetP56[i] = k * micFrame
			}
		}
	}

	mic := slices.Clone(clean)
	if (sc.NoiseRec != nil || sc.Noise != "" && sc.Noise != room.NoiseNone) && !math.IsInf(sc.SNRDB, 1) {
		var gen *room.Noise
		var err error
		if sc.NoiseRec != nil {
			gen, err = room.NewRecordedNoise(sc.NoiseRec, sc.Seed+1)
		} else {
			gen, err = room.NewNoise(sc.Noise, NearRate, sc.Seed+1)
		}
		if err != nil {
			return VADResult{}, err
		}
		buf := make([]float32, total)
		gen.Fill(buf)
		g := 32768 * math.Pow(10, (level-sc.SNRDB)/20)
		for i, v := range buf {
			mic[i] = sat(float64(mic[i]) + float64(v)*g)
		}
	}
	if sc.NS {
		c, err := aec.New(aec.Options{Kind: aec.KindWebRTC, NoiseSuppression: true})
		if err != nil {
			return VADResult{}, err
		}
		far := make([]int16, aec.FrameSamples)
		for k := 0; k+aec.FrameSamples <= total; k += aec.FrameSamples {
			c.Process(mic[k:k+aec.FrameSamples], mic[k:k+aec.FrameSamples], far)
		}
		c.Close()
	}

	cfg := capture.Config{Mode: capture.ModeVAD, FrameMS: frameMS, VAD: sc.VAD}.WithDefaults()
	v := cfg.VAD
	res := VADResult{Detector: v.Detector, Phrases: len(phrases)}

	// The detector alone.
	det, err := vad.New(vad.Options{Kind: v.Detector, FrameMS: frameMS, Mode: v.DetectorMode, BackgroundDB: v.BackgroundDB, FastOnset: v.FastOnset,
		Energy: vad.EnergyConfig{StartDB: v.StartDB, StopDB: v.StopDB, MinFloorDBFS: v.MinFloorDBFS, FloorRiseDBPerS: v.FloorRiseDBPerS}})
	if err != nil {
		return VADResult{}, err
	}
	called := make([]bool, len(labels))
	for i := range called {
		called[i] = det.Speech(mic[i*micFrame:(i+1)*micFrame], false)
	}
	det.Close()
	counts := func(called []bool) (c FrameCounts) {
		for i, v := range called {
			if i*micFrame >= trials || i*micFrame < warm {
				continue // the idle stretch (starts only) or the warm-up
			}
			c.Frames.count(v, labels[i])
			c.FramesActive.count(v, active[i])
			c.FramesP56.count(v, p56[i])
		}
		return c
	}
	res.FrameCounts = counts(called)
	for _, ms := range sc.LookaheadMS {
		res.Lookahead = append(res.Lookahead, Lookahead{MS: ms, FrameCounts: counts(lookahead(called, ms/frameMS))})
	}
	res.RawOnsets = rawOnsets(called, phrases, func(i int) int { return phrases[i].onset })
	res.RawOnsetsP56 = rawOnsets(called, phrases, func(i int) int { return onsetP56[i] })
	res.RawOnsetsActive = rawOnsets(called, phrases, func(i int) int { return onsetActive[i] })

	// The pump with the detector.
	clk := clock.NewFake()
	src := &sliceSource{clk: clk, s: mic}
	sink := &benchSink{clk: clk, t0: clk.Mono(), uplink: make([]int16, total)}
	pump, err := capture.NewPump(cfg, src, sink, clk, nil, nil)
	if err != nil {
		return VADResult{}, err
	}
	defer pump.Close()
	if err := pump.Run(contextBackground()); err != nil && !errors.Is(err, hw.ErrClosed) {
		return VADResult{}, err
	}
	hang := time.Duration(v.HangoverMS) * time.Millisecond
	used := make([]bool, len(phrases))
	for _, st := range sink.starts {
		if st.at < dur(warm) {
			continue
		}
		if st.at >= dur(trials) {
			res.IdleStarts++
			continue
		}
		matched := false
		for i, p := range phrases {
			on := dur(p.onset)
			if st.at >= on-50*time.Millisecond && st.at <= dur(p.end)+hang {
				matched = true
				if !used[i] {
					used[i] = true
					res.Onsets = append(res.Onsets, st.at-on)
					res.OnsetsActive = append(res.OnsetsActive, st.at-dur(onsetActive[i]))
					if st.first > on {
						res.Clipped++
					}
				}
				break
			}
		}
		if !matched {
			res.FalseStarts++
		}
	}
	for _, u := range used {
		if !u {
			res.Clipped++
		}
	}
	return res, nil
}

// lookahead returns called with each frame also called speech when one of
// the next n frames is.
func lookahead(called []bool, n int) []bool {
	out := make([]bool, len(called))
	next := -1 // the first called frame at or after i
	for i := len(called) - 1; i >= 0; i-- {
		if called[i] {
			next = i
		}
		out[i] = next >= 0 && next-i <= n
	}
	return out
}

// rawOnsets returns, per phrase with a labelled onset (sample index
// onset(i) before the phrase's end), the end of the first frame called speech
// from 40 ms before that onset minus the onset. Phrases not called speech
// before their end are left out.
func rawOnsets(called []bool, phrases []phrase, onset func(i int) int) []time.Duration {
	var out []time.Duration
	for i, p := range phrases {
		on := onset(i)
		if on >= p.end {
			continue
		}
		for k := max(on/micFrame-2, 0); k*micFrame < p.end; k++ {
			if called[k] {
				out = append(out, dur((k+1)*micFrame-on))
				break
			}
		}
	}
	return out
}

// sliceSource plays s as a mic, one 20 ms frame per Read, advancing clk.
type sliceSource struct {
	clk *clock.Fake
	s   []int16
	pos int
}

func (s *sliceSource) Format() hw.AudioFormat { return hw.MicFormat }
func (s *sliceSource) Close() error           { return nil }
func (s *sliceSource) Read(dst []int16) (int, error) {
	if s.pos+len(dst) > len(s.s) {
		return 0, hw.ErrClosed
	}
	copy(dst, s.s[s.pos:])
	s.pos += len(dst)
	s.clk.Advance(time.Duration(len(dst)) * time.Second / NearRate)
	return len(dst), nil
}

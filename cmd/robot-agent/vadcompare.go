package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/robot-agent/robot-agent/aec"
	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/codec/wav"
	"github.com/robot-agent/robot-agent/duplex"
	"github.com/robot-agent/robot-agent/room"
	"github.com/robot-agent/robot-agent/vad"
)

// vadPhrases are --vad-compare's default near ends: different first
// sounds (fricative, aspirate, plosive, vowel) and voices.
var vadPhrases = []struct{ text, voice string }{
	{defaultPhrase, "en+f3"},
	{"Hey robot, what time is it?", "en+m3"},
	{"Turn left and go to the kitchen.", "en-us+f2"},
	{"Fine, thanks. Can you bring me some water?", "en+m1"},
	{"Okay, show me the map.", "en-us+f4"},
}

// vadCandidate is one --vad-detectors entry.
type vadCandidate struct {
	name string
	cfg  capture.VADConfig
	ns   bool
}

func parseVADCandidate(s string) (vadCandidate, error) {
	c := vadCandidate{name: s}
	rest, ns := strings.CutPrefix(s, "ns+")
	c.ns = ns
	rest, c.cfg.FastOnset = strings.CutSuffix(rest, "+fast")
	if c.cfg.FastOnset && !strings.HasPrefix(rest, vad.KindSpectral) && !strings.HasPrefix(rest, vad.KindVoiced) {
		return c, fmt.Errorf("--vad-detectors %q: +fast (the onset step) is for %s and %s only", s, vad.KindSpectral, vad.KindVoiced)
	}
	rest, bg, hasBG := strings.Cut(rest, "/")
	if hasBG {
		v, err := strconv.ParseFloat(bg, 64)
		if err != nil || v == 0 {
			return c, fmt.Errorf("--vad-detectors %q: background guard %q is not a non-zero number of dB (negative: off)", s, bg)
		}
		if v > vad.MaxBackgroundDB {
			return c, fmt.Errorf("--vad-detectors %q: background guard %g dB out of range: at most %g (negative: off)", s, v, vad.MaxBackgroundDB)
		}
		c.cfg.BackgroundDB = v
	}
	kind, mode, hasMode := strings.Cut(rest, ":")
	if !slices.Contains(vad.Kinds, kind) {
		return c, fmt.Errorf("--vad-detectors %q: kind %q is not one of %v", s, kind, vad.Kinds)
	}
	c.cfg.Detector = kind
	if hasMode {
		m, err := strconv.Atoi(mode)
		if err != nil {
			return c, fmt.Errorf("--vad-detectors %q: mode %q is not a number", s, mode)
		}
		c.cfg.DetectorMode = m
	}
	return c, nil
}

// defaultVADCandidates: every built-in detector (WebRTC in its four modes,
// spectral without and with a 50 ms decision hangover),
// and WebRTC's noise suppressor before energy, spectral and WebRTC mode 3
// when the WebRTC library is built in.
func defaultVADCandidates() []string {
	var out []string
	for _, k := range vad.Available() {
		if k == vad.KindWebRTC {
			for m := range 4 {
				out = append(out, fmt.Sprintf("%s:%d", k, m))
			}
			continue
		}
		out = append(out, k)
		if k == vad.KindSpectral {
			// With its optional decision hangover (50 ms after 50 ms
			// bursts), and without its speech-like background guard.
			out = append(out, k+":50", k+"/-1")
		}
	}
	if slices.Contains(aec.Available(), aec.KindWebRTC) {
		out = append(out, "ns+"+vad.KindEnergy, "ns+"+vad.KindSpectral)
		if slices.Contains(vad.Available(), vad.KindWebRTC) {
			out = append(out, "ns+"+vad.KindWebRTC+":3")
		}
	}
	return out
}

type vadPhrase struct {
	name    string
	samples []int16
}

func loadVADPhrases(list string) ([]vadPhrase, string, error) {
	var out []vadPhrase
	if list != "" {
		for _, p := range strings.Split(list, ",") {
			a, err := wav.ReadFile(p)
			if err != nil {
				return nil, "", fmt.Errorf("--near %q: %w", p, err)
			}
			s := duplex.Trim(duplex.ToMono(a, duplex.NearRate), duplex.NearRate)
			if len(s) < duplex.NearRate/10 {
				return nil, "", fmt.Errorf("--near %q: less than 100 ms of audio", p)
			}
			if err := notSilent(s, duplex.NearRate); err != nil {
				return nil, "", fmt.Errorf("--near %q: %w", p, err)
			}
			out = append(out, vadPhrase{p, s})
		}
		return out, "files", nil
	}
	for _, ph := range vadPhrases {
		a, err := duplex.Espeak(ph.text, ph.voice)
		if err != nil {
			// No espeak-ng: the simulator's speech-like signal, two seeds.
			return []vadPhrase{
				{"synthetic 1", duplex.Synthetic(1500*time.Millisecond, 2)},
				{"synthetic 2", duplex.Synthetic(2*time.Second, 3)},
			}, "synthetic (espeak-ng missing)", nil
		}
		out = append(out, vadPhrase{fmt.Sprintf("%q (%s)", ph.text, ph.voice), duplex.Trim(duplex.ToMono(a, duplex.NearRate), duplex.NearRate)})
	}
	return out, "espeak-ng", nil
}

// vadCompare runs every candidate on every phrase, noise, SNR and seed and
// prints one row per candidate, noise and SNR (frames pooled).
func vadCompare(f duplexFlags, stdout, stderr io.Writer) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "robot-agent: duplex-bench: "+format+"\n", a...)
		return code
	}
	var noises []string
	if f.vadNoises != "" {
		noises = strings.Split(f.vadNoises, ",")
	}
	for _, n := range noises {
		if !slices.Contains(room.NoiseKinds, n) {
			return fail(2, "--vad-noises: %q is not one of %v", n, room.NoiseKinds)
		}
	}
	recorded := map[string][]int16{}
	if f.vadNoiseWAVs != "" {
		for _, p := range strings.Split(f.vadNoiseWAVs, ",") {
			s, err := room.ReadNoiseWAV(p)
			if err != nil {
				return fail(2, "--vad-noise-wav %q: %v", p, err)
			}
			if _, err := room.NewRecordedNoise(s, 0); err != nil {
				return fail(2, "--vad-noise-wav %q: %v", p, err)
			}
			name := "wav:" + filepath.Base(p)
			recorded[name] = s
			noises = append(noises, name)
		}
	}
	if len(noises) == 0 {
		return fail(2, "--vad-noises and --vad-noise-wav are both empty")
	}
	var snrs []float64
	for _, v := range strings.Split(f.vadSNRs, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || x < -20 || x > 60 {
			return fail(2, "--vad-snrs: %q is not a number in -20..60", v)
		}
		snrs = append(snrs, x)
	}
	if f.vadSeeds < 1 || f.vadSeeds > 100 {
		return fail(2, "--vad-seeds %d out of range 1..100", f.vadSeeds)
	}
	var aheads []int
	for _, v := range strings.Split(f.vadLookahead, ",") {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		x, err := strconv.Atoi(v)
		if err != nil || x < 0 || x > duplex.MaxLookaheadMS || x%20 != 0 {
			return fail(2, "--vad-lookahead-ms: %q is not a multiple of 20 in 0..%d", v, duplex.MaxLookaheadMS)
		}
		if x > 0 && !slices.Contains(aheads, x) {
			aheads = append(aheads, x)
		}
	}
	names := defaultVADCandidates()
	if f.vadDetectors != "" {
		names = strings.Split(f.vadDetectors, ",")
	}
	var cands []vadCandidate
	if f.vadIdle < 0 || f.vadIdle > 3600 {
		return fail(2, "--vad-idle-s %d out of range 0..3600", f.vadIdle)
	}
	if f.vadWarmup < 0 || f.vadWarmup > 600 {
		return fail(2, "--vad-warmup-s %d out of range 0..600", f.vadWarmup)
	}
	if f.vadMinSpeech < 0 || f.vadMinSpeech > 1000 {
		return fail(2, "--vad-min-speech-ms %d out of range 0..1000", f.vadMinSpeech)
	}
	for _, n := range names {
		c, err := parseVADCandidate(n)
		if err != nil {
			return fail(2, "%v", err)
		}
		c.cfg.MinSpeechMS = f.vadMinSpeech
		c.cfg.TransientDecayDB = f.vadTransient
		c.cfg.GradualStartMS = f.vadGradual
		cands = append(cands, c)
	}
	phrases, src, err := loadVADPhrases(f.near)
	if err != nil {
		return fail(2, "%v", err)
	}
	minSpeech := capture.Config{VAD: capture.VADConfig{MinSpeechMS: f.vadMinSpeech}}.WithDefaults().VAD.MinSpeechMS
	transient, gradual := "off", "off"
	if d := vad.TransientDecay(f.vadTransient); d > 0 {
		transient = fmt.Sprintf("%g dB per 20 ms", d)
		if g := (capture.Config{VAD: capture.VADConfig{GradualStartMS: f.vadGradual}}).WithDefaults().VAD.GradualStartMS; g > 0 {
			gradual = fmt.Sprintf("%d ms", min(g, minSpeech))
		}
	}
	fmt.Fprintf(stdout, "duplex-bench --vad-compare: %d near-end phrases (%s) x %d trials x %d seeds per cell; pump defaults (pre-roll, hangover), min speech %d ms, transient guard %s, gradual start %s\n",
		len(phrases), src, f.replies, f.vadSeeds, minSpeech, transient, gradual)
	for _, p := range phrases {
		fmt.Fprintf(stdout, "  %s: %.2f s\n", p.name, float64(len(p.samples))/duplex.NearRate)
	}
	fmt.Fprintln(stdout, "frames: P/R/FP against labels L40 (clean frame above max(-60 dBFS, loudest - 40 dB)), P56 (within 15.9 dB of the active level)")
	fmt.Fprintln(stdout, "  and P.56B (ITU-T P.56 method B activity: envelope 15.9 dB below the P.56 active level, 200 ms hangover);")
	if f.vadWarmup > 0 {
		fmt.Fprintf(stdout, "warm-up: %d s of noise alone before each stream's lead, not counted\n", f.vadWarmup)
	}
	if len(aheads) > 0 {
		fmt.Fprintln(stdout, "lookahead: rows detector+laN count a frame as speech when the detector calls it or a frame starting within N ms after it")
		fmt.Fprintln(stdout, "  (the decision N ms later, as a pre-roll takes in the frames before an onset); their onsets and pump columns are the detector's")
	}
	if slices.ContainsFunc(cands, func(c vadCandidate) bool { return c.cfg.Detector == vad.KindSpeex }) {
		fmt.Fprintln(stdout, "speex: libspeexdsp prints \"warning: The VAD has been replaced by a hack pending a complete rewrite\" on stderr for every detector made; that is the library's own notice about its VAD")
	}
	fmt.Fprintln(stdout, "onset: raw = end of the detector's first speech frame - phrase onset (L40, P.56B and P56; 20 ms = on the onset frame); pump = utterance start decision - onset (L40, and P56; min speech best)")
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "detector\tnoise\tSNR\tL40 P/R/FP\tP56 P/R/FP\tP.56B P/R/FP\traw onset p50/p95\traw onset (P.56B)\traw onset (P56)\tpump onset p50/p95\tpump onset (P56)\tclipped\tfalse starts\tidle starts/min")
cand:
	for _, c := range cands {
		for _, noise := range noises {
			for _, snr := range snrs {
				var fc duplex.FrameCounts
				la := make([]duplex.FrameCounts, len(aheads))
				var raw, rawP56, rawA, pump, pumpA []time.Duration
				var clipped, phr, falseStarts, idle int
				for _, p := range phrases {
					for s := range f.vadSeeds {
						r, err := duplex.RunVAD(duplex.VADScene{Near: p.samples, Trials: f.replies, GapMS: f.gapMS, Noise: noise, NoiseRec: recorded[noise], SNRDB: snr,
							Seed: uint64(f.seed + s), VAD: c.cfg, NS: c.ns, IdleMS: 1000 * f.vadIdle, WarmupMS: 1000 * f.vadWarmup, LookaheadMS: aheads})
						if errors.Is(err, vad.ErrNotBuiltIn) || errors.Is(err, aec.ErrNotBuiltIn) {
							fmt.Fprintf(stdout, "%s: not built in (%v)\n", c.name, err)
							continue cand
						}
						if err != nil {
							return fail(1, "%s: %v", c.name, err)
						}
						fc = fc.Add(r.FrameCounts)
						for i, l := range r.Lookahead {
							la[i] = la[i].Add(l.FrameCounts)
						}
						raw, rawP56, rawA = append(raw, r.RawOnsets...), append(rawP56, r.RawOnsetsP56...), append(rawA, r.RawOnsetsActive...)
						pump, pumpA = append(pump, r.Onsets...), append(pumpA, r.OnsetsActive...)
						clipped, phr, falseStarts, idle = clipped+r.Clipped, phr+r.Phrases, falseStarts+r.FalseStarts, idle+r.IdleStarts
					}
				}
				rest := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%d/%d\t%d\t%s", pctl(raw, len(raw), phr), pctl(rawP56, len(rawP56), phr), pctl(rawA, len(rawA), phr), pctl(pump, len(pump), phr), pctl(pumpA, len(pumpA), phr),
					clipped, phr, falseStarts, idleRate(idle, len(phrases)*f.vadSeeds*f.vadIdle))
				fmt.Fprintf(tw, "%s\t%s\t%v dB\t%s\t%s\n", c.name, noise, snr, prfs(fc), rest)
				for i, l := range la {
					fmt.Fprintf(tw, "%s+la%d\t%s\t%v dB\t%s\t%s\n", c.name, aheads[i], noise, snr, prfs(l), rest)
				}
			}
		}
	}
	tw.Flush()
	return 0
}

// idleRate prints n utterance starts in secs of noise alone per minute.
func idleRate(n, secs int) string {
	if secs == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f (%d in %d s)", float64(n)*60/float64(secs), n, secs)
}

// prfs prints the three label sets' columns.
func prfs(c duplex.FrameCounts) string {
	return prf(c.Frames) + "\t" + prf(c.FramesActive) + "\t" + prf(c.FramesP56)
}

func prf(c duplex.VADCounts) string {
	return fmt.Sprintf("%s/%s/%s", num(c.Precision()), num(c.Recall()), pct(c.FPR()))
}

// pctl prints p50/p95 of ds and, when some phrases gave none, how many did.
func pctl(ds []time.Duration, n, of int) string {
	if n == 0 {
		return "-"
	}
	s := fmt.Sprintf("%v/%v", duplex.Percentile(ds, 50), duplex.Percentile(ds, 95))
	if n < of {
		s += fmt.Sprintf(" (%d/%d)", n, of)
	}
	return s
}

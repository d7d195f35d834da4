package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/robot-agent/robot-agent/aec"
	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/clipguard"
	"github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/codec/wav"
	"github.com/robot-agent/robot-agent/duplex"
	"github.com/robot-agent/robot-agent/reverb"
	"github.com/robot-agent/robot-agent/room"
	"github.com/robot-agent/robot-agent/roomfile"
	"github.com/robot-agent/robot-agent/vad"
	"github.com/robot-agent/robot-agent/volume"
)

const duplexUsage = `Usage: robot-agent duplex-bench [flags]

Measures the full-duplex capture chain (echo canceller -> noise suppressor ->
VAD -> uplink framing, the code the agent runs) on a simulated echo path.
The far end (the robot's reply, --far, any WAV) is played --replies times
through the speaker tap and a simulated room (delay, echo gain, impulse
response, loudspeaker non-linearity, clock drift, noise: a kind, --noise,
or any recording, --noise-wav); with --barge-in the
near end (--near, any WAV: the user's phrase) starts in the middle of every
reply, with --answer 200-800 ms after every reply's end (a user answering
the robot in its reverberant tail; the barge-in columns count the
answers). Without --far/--near, espeak-ng speech is generated (or the
simulator's speech-like signal when espeak-ng is missing).

Prints one row per canceller (--aec, side by side in the same run): ERLE in
far-end-only stretches (first 2 s of echo and after) of the uplink, and,
with a linear uplink (:lin), of the canceller's output that the onset guard
and the VAD judge ("guard ERLE"), correlation with the
clean near end in double-talk, VAD frame precision/recall, onset delays,
clipped first syllables, false barge-ins (utterances started without
near-end speech), barge-ins detected within 300 ms, the delay estimate, and
the chain's CPU per second of audio.

--vad-compare instead compares the VAD detectors (every one built in, and
WebRTC's noise suppressor before some) on near-end phrases mixed with noise
at several SNRs, no echo: --near takes a comma-separated list of WAVs
(default: five espeak-ng phrases in five voices), --replies phrases per
WAV and seed, --vad-seeds seeds, --vad-noises and --vad-snrs the grid
(--vad-noise-wav adds recorded noises, e.g. a multi-talker babble),
--vad-detectors the candidates (kind[:mode][/dB][+fast], ns+ prefix for the
noise suppressor first; spectral's mode is its decision hangover in ms, /dB
its speech-like background guard's margin, /-1 off, +fast its onset step),
--vad-min-speech-ms the pump's min speech, --vad-transient-db its
transient guard (knocks, claps; negative: off), --vad-idle-s seconds of noise
alone after each phrase's trials (false starts per minute), --vad-warmup-s
seconds of noise alone before them, run through but not counted. Frame
precision/recall/false positives are the detector's raw decisions per
20 ms frame against three labellings of the clean phrase (see
duplex.Labels, duplex.LabelsActive, duplex.LabelsP56); onsets and clipped
first syllables come from the capture pump with that detector.

Flags:
`

type duplexFlags struct {
	far, near, out, aecKinds, noise, noiseWAV, irWAV, vadKind, mode, suppression, echoPlayed, echoRecorded, irOut, webrtcDelay, uplink        string
	replies, gapMS, vadMode, seed, tailMS, marginMS                                                                                           int
	spkDropAtten                                                                                                                              float64
	volumeDown                                                                                                                                float64
	roomFile                                                                                                                                  string
	startup                                                                                                                                   string // --startup-sound
	reverbTypical, answer                                                                                                                     bool
	bargeIn, vadCompare, ns, driftComp, speakerClock, clipGuard, reverbGuard, silentSpeaker, vadFastOnset, spkDropUnreported, micDropReported bool
	vadNoises, vadSNRs, vadDetectors, vadNoiseWAVs, vadLookahead                                                                              string
	vadSeeds, vadMinSpeech, vadGradual, vadIdle, vadWarmup, micDropMS, spkDropMS                                                              int
	ser, snr, farDB, dtDB, guardDB, linGuardDB, vadTransient, micDropEvery, spkDropEvery                                                      float64
	rc                                                                                                                                        room.Config
}

// aecVariant is one --aec entry: a kind with optional ":"-separated
// overrides (webrtc:low, webrtc:agnostic:m8, webrtc:short, speex:m24).
type aecVariant struct {
	name  string
	opts  aec.Options
	mgn   int
	guard float64
	dc    bool
	nf    float64
	lg    float64
	rg    bool
	typ   bool
	ss    bool
}

func parseVariant(spec string, f duplexFlags) (aecVariant, error) {
	parts := strings.Split(spec, ":")
	up := f.uplink
	if up == "auto" {
		up = aec.BestUplink(parts[0])
	}
	v := aecVariant{name: spec, opts: aec.Options{Kind: parts[0], NoiseSuppression: f.ns, TailMS: f.tailMS, Suppression: f.suppression, Delay: f.webrtcDelay, Uplink: up}, mgn: f.marginMS, guard: f.guardDB, lg: f.linGuardDB, dc: f.driftComp, rg: f.reverbGuard, typ: f.reverbTypical, ss: f.silentSpeaker}
	if !slices.Contains(aec.Kinds, parts[0]) {
		return v, fmt.Errorf("--aec %q is not one of %v", parts[0], aec.Kinds)
	}
	for _, p := range parts[1:] {
		var ms int
		var g float64
		switch {
		case p == "dc" || p == "nodc":
			v.dc = p == "dc"
		case p == "rg" || p == "norg":
			v.rg = p == "rg"
		case p == "typ" || p == "notyp":
			v.typ = p == "typ"
		case p == "ss" || p == "noss":
			v.ss = p == "ss"
		case strings.HasPrefix(p, "g") && func() bool { _, err := fmt.Sscanf(p, "g%g", &g); return err == nil }():
			v.guard = g
		case p == "low" || p == "moderate" || p == "high":
			v.opts.Suppression = p
		case p == aec.DelayModeAgnostic || p == aec.DelayModeEstimator:
			v.opts.Delay = p
		case strings.HasPrefix(p, "dt-"):
			v.opts.DoubleTalkSuppression = strings.TrimPrefix(p, "dt-")
		case p == "short":
			v.opts.ShortFilter = true
		case p == "ns":
			v.opts.NoiseSuppression = true
		case p == "canc":
			v.opts.Uplink = aec.UplinkCanceller
		case p == "lin":
			v.opts.Uplink = aec.UplinkLinear
		case p == "lingate":
			v.opts.Uplink = aec.UplinkLinearGated
		case strings.HasPrefix(p, "nf") && func() bool { _, err := fmt.Sscanf(p, "nf%g", &g); return err == nil }():
			v.nf = g
		case strings.HasPrefix(p, "lg") && func() bool { _, err := fmt.Sscanf(p, "lg%g", &g); return err == nil }():
			v.lg = g
		case strings.HasPrefix(p, "m") && func() bool { _, err := fmt.Sscanf(p, "m%d", &ms); return err == nil }():
			v.mgn = ms
		default:
			return v, fmt.Errorf("--aec %q: unknown option %q (low, moderate, high, agnostic, estimator, short, ns, dt-<level>, m<lead ms>, g<guard margin dB>, nf<noise guard dB>, lg<linear guard dB, 0 off>, canc, lin, lingate, dc, nodc, rg, norg, typ, notyp, ss, noss)", spec, p)
		}
	}
	return v, v.opts.Validate()
}

func cmdDuplexBench(args []string, stdout, stderr io.Writer) int {
	f := duplexFlags{}
	fs := flag.NewFlagSet("duplex-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, duplexUsage); fs.PrintDefaults() }
	fs.StringVar(&f.far, "far", "", "far-end WAV (the robot's reply; any rate, channels mixed, integer or float samples)")
	fs.StringVar(&f.near, "near", "", "near-end WAV (the user's phrase)")
	fs.StringVar(&f.startup, "startup-sound", "", "a start-up sound played once, 1 s before the first reply (the mic held until that reply): 'noise' (4 s of pink noise at -26 dBFS RMS) or a WAV file played at its own level; empty: none")
	fs.StringVar(&f.out, "out", "", "write the uplink (what the pump delivered, 16 kHz) to this WAV; with several --aec, NAME-<kind>.wav")
	fs.StringVar(&f.aecKinds, "aec", strings.Join(aec.Available(), ","), "cancellers to compare, comma-separated (none, webrtc, speex); a kind may carry :-separated overrides, e.g. webrtc:low:agnostic:m8 (suppression, delay mode, short filter, ns, dt-low = suppression in double talk, m48 = far-end lead in ms, g10 = --guard-margin-db, dc/nodc = drift compensation on/off, rg/norg = the reverberation guard on/off (--reverb-guard), typ/notyp = it assumes a typical room until it learns its own, or none (--reverb-typical), ss/noss = the silent-speaker detector on/off (--silent-speaker), nf6 = noise guard margin in dB, nf-1 = off, lg10 = the linear guard's margin in dB (--linear-guard-db; lg0 = off), canc/lin/lingate = the uplink (default: the agent's, --uplink): the canceller's output, a linear filter's, the guard and VAD judge the canceller's, lingate = that output only while the guard finds the user, the canceller's otherwise)")
	fs.StringVar(&f.webrtcDelay, "webrtc-delay", aec.DefaultDelay, "webrtc delay handling: estimator (the agent's delay estimator only) or agnostic (plus the APM's delay-agnostic mode)")
	fs.IntVar(&f.marginMS, "margin-ms", 0, "far-end lead over the estimated delay (0: the canceller's own, webrtc 48, speex 8)")
	fs.Float64Var(&f.linGuardDB, "linear-guard-db", aec.DefaultLinearGuardDB, "linear guard (dual-path uplinks): a read whose linear-filter reduction falls this far below its running median counts as the user; 0: off (the agent's duplex.linear_guard_db)")
	fs.Float64Var(&f.guardDB, "guard-margin-db", aec.DefaultGuardMarginDB, "onset guard: > 0: threshold = the canceller's measured echo reduction minus this (never below --double-talk-db); 0: fixed --double-talk-db")
	fs.BoolVar(&f.driftComp, "drift-comp", aec.DefaultDriftCompensation, "estimate the speaker/mic clock offset from the echo and resample the far end to the mic's clock")
	fs.StringVar(&f.uplink, "uplink", "auto", "what goes up: canceller, linear, linear-gated (a speex linear filter beside the canceller), auto = the agent's default for each canceller")
	fs.BoolVar(&f.speakerClock, "speaker-clock", false, "the agent's clock is the speaker's (the far end is written at the speaker's pace, 80 ms ahead) rather than the mic's; on unless set for a negative --drift-ppm (a slower mic: on its clock the echo overtakes the far end written within a minute or two)")
	fs.BoolVar(&f.silentSpeaker, "silent-speaker", aec.DefaultSilentSpeaker, "silent-speaker detector: while the mic hears nothing of the robot's voice where the learned echo path predicts it loud (an amplifier without power, a mute switch), the canceller is given silence as the far end (the agent's duplex.silent_speaker; per variant :ss / :noss)")
	fs.BoolVar(&f.reverbGuard, "reverb-guard", aec.DefaultReverbGuard, "reverberation guard: a read holding no more than the room's predicted late reverberation starts no utterance while the robot speaks (the agent's duplex.reverb_guard; per variant :rg / :norg)")
	fs.BoolVar(&f.reverbTypical, "reverb-typical", true, "the reverberation guard assumes a typical small room (RT60 0.3 s) until it has learnt the room, as the agent does; false: it holds nothing until the room's first long pauses (per variant :typ / :notyp)")
	fs.BoolVar(&f.clipGuard, "clip-guard", defaultClipGuardEnabled, "lower the robot's voice while its echo clips the mic, in 3 dB steps (the agent's duplex.clip_guard; its defaults)")
	fs.BoolVar(&f.ns, "ns", false, "turn on the canceller library's noise suppressor")
	fs.StringVar(&f.suppression, "suppression", aec.DefaultSuppression, "webrtc residual echo suppression: low, moderate, high")
	fs.IntVar(&f.tailMS, "tail-ms", 0, "speex filter length in ms, the speex canceller's or the linear filter's beside webrtc (0: their defaults, 128 and 256; the agent's duplex.tail_ms)")
	fs.Float64Var(&f.dtDB, "double-talk-db", aec.DefaultDoubleTalkDB, "onset guard: reads with more echo removed than this hold no user speech")
	fs.IntVar(&f.replies, "replies", 10, "how many replies (trials)")
	fs.IntVar(&f.gapMS, "gap-ms", 1000, "silence between replies")
	fs.BoolVar(&f.bargeIn, "barge-in", false, "the near end talks over every reply")
	fs.BoolVar(&f.answer, "answer", false, "the near end answers every reply, 200-800 ms after its end (in the room's tail); not with --barge-in")
	fs.Float64Var(&f.ser, "ser-db", 0, "speech-to-echo ratio at the mic (near-end level minus echo level)")
	fs.Float64Var(&f.snr, "snr-db", 10, "near-end level over noise level")
	fs.StringVar(&f.noise, "noise", room.NoiseNone, "noise kind: none, white, pink, motor, babble, knocks")
	fs.StringVar(&f.noiseWAV, "noise-wav", "", "a noise recording instead of --noise (any WAV: channels mixed, resampled; e.g. the robot's own motors), looped from a --seed-chosen position, at --snr-db (its RMS over the file)")
	fs.IntVar(&f.micDropMS, "mic-dropout-ms", 0, "the mic loses its audio for this long (digital silence, as while a USB mic is gone and reopened) every --mic-dropout-every-s, the first at a --seed-chosen point; speech in a gap is lost (0: never)")
	fs.Float64Var(&f.micDropEvery, "mic-dropout-every-s", duplex.DefaultMicDropoutEveryS, "with --mic-dropout-ms: seconds from one dropout to the next")
	fs.BoolVar(&f.micDropReported, "mic-dropout-reported", false, "with --mic-dropout-ms: the mic says which reads are a dropout's silence, as hw/portaudio's Source does (else the chain finds them by their digital silence alone)")
	fs.IntVar(&f.spkDropMS, "speaker-dropout-ms", 0, "the speaker plays nothing for this long (as while a USB speaker is gone and reopened; it reports itself down) every --speaker-dropout-every-s, the first at a --seed-chosen point (0: never)")
	fs.Float64Var(&f.spkDropEvery, "speaker-dropout-every-s", duplex.DefaultMicDropoutEveryS, "with --speaker-dropout-ms: seconds from one dropout to the next")
	fs.BoolVar(&f.spkDropUnreported, "speaker-dropout-unreported", false, "with --speaker-dropout-ms: the speaker does not report its dropouts (an amplifier that loses power, a mute switch)")
	fs.StringVar(&f.roomFile, "room-file", "", "the room the reverberation guard learnt, kept across runs as the agent keeps it across restarts (duplex.room_file): read at the start if it exists, written at the end; needs one --aec kind with the guard on")
	fs.Float64Var(&f.volumeDown, "volume-down-db", 0, "with --speaker-dropout-ms: the windows are not dropouts but the robot's own volume (playback.volume_db, skill audio.volume: above the echo canceller's reference) turned this many dB down, 0..60; the speaker plays on (compare --speaker-dropout-atten-db, the same step below the reference)")
	fs.Float64Var(&f.spkDropAtten, "speaker-dropout-atten-db", 0, "with --speaker-dropout-ms: in the dropouts the speaker plays this many dB quieter instead of nothing, reporting itself up (a volume turned down and back up; 0: nothing plays)")
	fs.Float64Var(&f.farDB, "far-dbfs", -20, "active level of the far end as played")
	fs.Float64Var(&f.rc.DelayMS, "delay-ms", 60, "echo delay beyond the device latencies")
	fs.Float64Var(&f.rc.EchoGainDB, "echo-gain-db", 0, "echo level relative to the played level (-ERL)")
	fs.Float64Var(&f.rc.RT60, "rt60", 0.3, "reverberation time of the synthetic impulse response, s (0: direct path only)")
	fs.Float64Var(&f.rc.DRRDB, "drr-db", 6, "direct-to-reverberant ratio of the synthetic impulse response")
	fs.StringVar(&f.irWAV, "ir-wav", "", "impulse response WAV instead of the synthetic one")
	fs.Float64Var(&f.rc.SoftClip, "soft-clip", 0, "loudspeaker non-linearity tanh(k x)/k, k (0: linear)")
	fs.Float64Var(&f.rc.DriftPPM, "drift-ppm", 100, "mic clock faster than the speaker's by this many ppm")
	fs.StringVar(&f.vadKind, "vad", capture.DefaultDetector, fmt.Sprintf("VAD detector: auto (spectral, energy with a canceller) or one of %v (built in: %v)", vad.Kinds, vad.Available()))
	fs.IntVar(&f.vadMode, "vad-mode", 0, "webrtc aggressiveness 0..3 / speex start probability %")
	fs.StringVar(&f.mode, "mode", capture.ModeVAD, "capture mode: vad or continuous")
	fs.IntVar(&f.seed, "seed", 1, "seed for the room, noise and barge-in positions")
	fs.BoolVar(&f.vadCompare, "vad-compare", false, "compare the VAD detectors on near end + noise instead")
	fs.StringVar(&f.vadNoises, "vad-noises", "pink,motor,white,babble", "--vad-compare: noise kinds, comma-separated")
	fs.StringVar(&f.vadNoiseWAVs, "vad-noise-wav", "", "--vad-compare: recorded noises (WAVs, comma-separated; e.g. multi-talker babble), each looped from a seed-chosen position, after --vad-noises (\"\" for none)")
	fs.StringVar(&f.vadSNRs, "vad-snrs", "20,10,5,0", "--vad-compare: SNRs in dB, comma-separated")
	fs.IntVar(&f.vadSeeds, "vad-seeds", 2, "--vad-compare: noise seeds per phrase (--seed, --seed+1, ...)")
	fs.IntVar(&f.vadWarmup, "vad-warmup-s", 0, "--vad-compare: seconds of noise alone before each stream, run through but not counted (detectors that learn their background have learnt it)")
	fs.IntVar(&f.vadIdle, "vad-idle-s", 0, "--vad-compare: seconds of noise alone after each phrase's trials (utterances started there: idle starts/min)")
	fs.StringVar(&f.vadLookahead, "vad-lookahead-ms", "0,40", "--vad-compare: frame decisions also with these lookaheads (ms, multiples of 20, comma-separated; a row each, detector+la40): a frame is speech when the detector calls it or a frame within that long after it, as a pre-roll takes in the frames before an onset; onsets stay those of the detection")
	fs.IntVar(&f.vadMinSpeech, "vad-min-speech-ms", 0, "--vad-compare: the pump's min speech in ms (0: capture's default, 60)")
	fs.BoolVar(&f.vadFastOnset, "vad-fast-onset", false, "the spectral (and voiced) detector's onset step in the pump (audio.vad.fast_onset); --vad-compare takes it per candidate: spectral+fast")
	fs.IntVar(&f.vadGradual, "vad-gradual-ms", 0, "the pump's min speech after a gradual onset (a voice rising, not a knock) in ms (0: capture's default, 40; negative: off; needs the transient guard)")
	fs.Float64Var(&f.vadTransient, "vad-transient-db", 0, "the pump's transient guard (knocks, claps), dB of decay per 20 ms (0: capture's default, negative: off)")
	fs.StringVar(&f.vadDetectors, "vad-detectors", "", "--vad-compare: candidates, comma-separated kind[:mode][/background dB, -1 off][+fast: spectral's onset step] with optional ns+ prefix (default: every one built in)")
	fs.StringVar(&f.echoPlayed, "echo-played", "", "with --echo-recorded: measure a real echo path (make hil): the WAV played through the speaker")
	fs.StringVar(&f.echoRecorded, "echo-recorded", "", "the WAV the mic recorded meanwhile; prints the delay and echo gain (ERL)")
	fs.StringVar(&f.irOut, "ir-out", "", "with --echo-played/--echo-recorded: also write the echo path's impulse response (1 s from 5 ms before the direct path, 16 kHz) to this WAV, for --ir-wav: the bench in the robot's own room")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "robot-agent: duplex-bench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	f.rc.IRWAV, f.rc.Seed = f.irWAV, uint64(f.seed)
	clockSet := false
	fs.Visit(func(fl *flag.Flag) { clockSet = clockSet || fl.Name == "speaker-clock" })
	if f.rc.DriftPPM < 0 && !clockSet {
		// On the mic's clock a slower mic's echo overtakes the far end
		// written at its pace: the figures are meaningless after a
		// minute or two (measured: 41 false barge-ins in 50 replies at
		// -200 ppm, ERLE 1 dB).
		f.speakerClock = true
	}
	if f.irOut != "" && (f.echoPlayed == "" || f.echoRecorded == "") {
		fmt.Fprintln(stderr, "robot-agent: duplex-bench: --ir-out goes with --echo-played and --echo-recorded (it writes the measured echo path's impulse response)")
		return 2
	}
	if f.echoPlayed != "" || f.echoRecorded != "" {
		return measureEcho(f.echoPlayed, f.echoRecorded, f.irOut, stdout, stderr)
	}
	var kinds []aecVariant
	for _, k := range strings.Split(f.aecKinds, ",") {
		v, err := parseVariant(k, f)
		if err != nil {
			fmt.Fprintln(stderr, "robot-agent: duplex-bench:", strings.ReplaceAll(err.Error(), "\n", "; "))
			return 2
		}
		kinds = append(kinds, v)
	}
	if f.roomFile != "" && (len(kinds) != 1 || !kinds[0].rg || kinds[0].opts.Kind == aec.KindNone) {
		fmt.Fprintf(stderr, "robot-agent: duplex-bench: --room-file %s: needs exactly one --aec canceller (not none) with the reverberation guard on, have --aec %s\n", f.roomFile, f.aecKinds)
		return 2
	}
	var roomModel *reverb.Model
	if f.roomFile != "" {
		m, err := roomfile.Load(f.roomFile, benchDevices)
		switch {
		case err == nil:
			roomModel = &m
		case !errors.Is(err, os.ErrNotExist):
			fmt.Fprintln(stderr, "robot-agent: duplex-bench: --room-file:", err)
			return 2
		}
	}
	if !slices.Contains(room.NoiseKinds, f.noise) {
		fmt.Fprintf(stderr, "robot-agent: duplex-bench: --noise %q is not one of %v\n", f.noise, room.NoiseKinds)
		return 2
	}
	if f.noiseWAV != "" && f.noise != room.NoiseNone {
		fmt.Fprintf(stderr, "robot-agent: duplex-bench: --noise %q and --noise-wav %q: choose one\n", f.noise, f.noiseWAV)
		return 2
	}
	if err := f.rc.Validate(); err != nil {
		fmt.Fprintln(stderr, "robot-agent: duplex-bench:", strings.ReplaceAll(err.Error(), "\n", "; "))
		return 2
	}
	if f.replies < 1 || f.replies > 10000 {
		fmt.Fprintf(stderr, "robot-agent: duplex-bench: --replies %d out of range 1..10000\n", f.replies)
		return 2
	}
	if f.micDropMS < 0 || f.micDropMS > 0 && !(f.micDropEvery > 0 && float64(f.micDropMS) < f.micDropEvery*1000) {
		fmt.Fprintf(stderr, "robot-agent: duplex-bench: --mic-dropout-ms %d every --mic-dropout-every-s %g: want a length from 0 up to less than the period\n", f.micDropMS, f.micDropEvery)
		return 2
	}
	if f.spkDropMS < 0 || f.spkDropMS > 0 && !(f.spkDropEvery > 0 && float64(f.spkDropMS) < f.spkDropEvery*1000) {
		fmt.Fprintf(stderr, "robot-agent: duplex-bench: --speaker-dropout-ms %d every --speaker-dropout-every-s %g: want a length from 0 up to less than the period\n", f.spkDropMS, f.spkDropEvery)
		return 2
	}
	if f.spkDropAtten < 0 || math.IsNaN(f.spkDropAtten) {
		fmt.Fprintf(stderr, "robot-agent: duplex-bench: --speaker-dropout-atten-db %g: want 0 (nothing plays) or more\n", f.spkDropAtten)
		return 2
	}
	if f.volumeDown != 0 && (!(f.volumeDown > 0 && f.volumeDown <= -volume.MinDB) || f.spkDropMS == 0 || f.spkDropAtten > 0 || f.spkDropUnreported) {
		fmt.Fprintf(stderr, "robot-agent: duplex-bench: --volume-down-db %g: want 0..%g with --speaker-dropout-ms (its windows), without --speaker-dropout-atten-db or --speaker-dropout-unreported\n", f.volumeDown, -volume.MinDB)
		return 2
	}
	if f.vadGradual > 1000 {
		fmt.Fprintf(stderr, "robot-agent: duplex-bench: --vad-gradual-ms %d out of range: at most 1000 (negative: off)\n", f.vadGradual)
		return 2
	}
	if f.vadTransient > vad.MaxTransientDecayDB || math.IsNaN(f.vadTransient) {
		fmt.Fprintf(stderr, "robot-agent: duplex-bench: --vad-transient-db %g out of range: at most %g (negative: off)\n", f.vadTransient, vad.MaxTransientDecayDB)
		return 2
	}
	if f.answer && (f.bargeIn || f.vadCompare) {
		fmt.Fprintln(stderr, "robot-agent: duplex-bench: --answer places the near end after every reply: not with --barge-in or --vad-compare")
		return 2
	}
	if f.startup != "" && f.vadCompare {
		fmt.Fprintln(stderr, "robot-agent: duplex-bench: --startup-sound plays before the first reply: not with --vad-compare (no replies)")
		return 2
	}
	if f.vadCompare {
		return vadCompare(f, stdout, stderr)
	}
	far, near, src, err := loadSpeech(f.far, f.near)
	if err != nil {
		fmt.Fprintln(stderr, "robot-agent: duplex-bench:", err)
		return 2
	}
	prelude, err := startupSound(f.startup)
	if err != nil {
		fmt.Fprintln(stderr, "robot-agent: duplex-bench:", err)
		return 2
	}
	// The room once before the table: a bad --ir-wav is a usage error.
	rc := f.rc
	if f.noiseWAV != "" {
		rc.NoiseWAV, rc.NoiseDBFS = f.noiseWAV, -30 // the recording is read here too
	}
	if _, err := room.New(rc); err != nil {
		fmt.Fprintln(stderr, "robot-agent: duplex-bench:", err)
		return 2
	}
	noise := f.noise
	if f.noiseWAV != "" {
		noise = "recording " + filepath.Base(f.noiseWAV)
	}
	fmt.Fprintf(stdout, "duplex-bench: speech %s; far %.1f s x %d replies, near %.1f s%s; room delay %v ms, echo gain %v dB, %s, soft clip %v, drift %v ppm%s; noise %s at SNR %v dB; SER %v dB; VAD %s (%s mode)\n",
		src, float64(len(far))/duplex.FarRate, f.replies, float64(len(near))/duplex.NearRate, nearUse(f.bargeIn, f.answer),
		f.rc.DelayMS, f.rc.EchoGainDB, irDescription(f.rc), f.rc.SoftClip, f.rc.DriftPPM, map[bool]string{true: " (speaker's clock)"}[f.speakerClock], noise, f.snr, f.ser, f.vadKind, f.mode)
	if f.noiseWAV != "" {
		if note, err := noiseNote(f.noiseWAV, f.snr); err == nil {
			fmt.Fprintln(stdout, "duplex-bench: "+note)
		}
	}
	if g := duplex.BargeInGapMS(len(far), len(near), f.gapMS); f.bargeIn && g != f.gapMS {
		fmt.Fprintf(stdout, "duplex-bench: the near end is longer than the last 40 %% of a reply: %.1f s between replies (--gap-ms %d), so each phrase ends before the next reply\n", float64(g)/1000, f.gapMS)
	}
	if g := duplex.AnswerGapMS(len(near), f.gapMS); f.answer && g != f.gapMS {
		fmt.Fprintf(stdout, "duplex-bench: %.1f s between replies (--gap-ms %d), so each answer ends before the next reply\n", float64(g)/1000, f.gapMS)
	}
	if prelude != nil {
		fmt.Fprintf(stdout, "duplex-bench: start-up sound %s: %.1f s at %.1f dBFS RMS, once before the first reply (the mic held until then)\n",
			f.startup, float64(len(prelude))/duplex.FarRate, pcm.DBFS(prelude))
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "aec\tERLE 0-2s\tERLE >2s\tguard ERLE\tnear corr (DT)\tVAD P/R\tonset p50/p95\tclipped\tfalse barge-ins\tbarge-in <=300ms\tdelay est (shifts)\tdrift comp\tguard\tchain delay\tCPU/core")
	code := 0
	var notes []string
	for _, k := range kinds {
		sc := duplex.Scenario{Prelude: prelude, Far: far, Near: near, Replies: f.replies, GapMS: f.gapMS, LeadMS: 1000, BargeIn: f.bargeIn, Answer: f.answer,
			FarDBFS: f.farDB, SERDB: f.ser, SNRDB: f.snr, Room: f.rc, NoiseKind: f.noise, NoiseWAV: f.noiseWAV,
			MicDropoutMS: f.micDropMS, MicDropoutEveryS: f.micDropEvery, MicDropoutReported: f.micDropReported,
			SpeakerDropoutMS: f.spkDropMS, SpeakerDropoutEveryS: f.spkDropEvery, SpeakerDropoutUnreported: f.spkDropUnreported, SpeakerDropoutAttenDB: f.spkDropAtten, VolumeDownDB: f.volumeDown,
			AEC:       k.opts,
			Align:     aec.SourceConfig{DoubleTalkDB: f.dtDB, GuardMarginDB: k.guard, MarginMS: k.mgn, DriftCompensation: k.dc, NoiseGuardDB: k.nf, LinearGuardDB: k.lg, ReverbGuardMS: reverbGuardMS(k.rg, k.opts), ReverbUnassumed: !k.typ, SilentSpeaker: k.ss},
			RoomModel: roomModel,
			Capture:   capture.Config{Mode: f.mode, VAD: capture.VADConfig{Detector: f.vadKind, DetectorMode: f.vadMode, TransientDecayDB: f.vadTransient, GradualStartMS: f.vadGradual, FastOnset: f.vadFastOnset}}, Seed: uint64(f.seed), SpeakerClock: f.speakerClock}
		if f.clipGuard {
			sc.ClipGuard = &clipguard.Config{}
		}
		if f.out != "" {
			path := f.out
			if len(kinds) > 1 {
				ext := filepath.Ext(path)
				path = strings.TrimSuffix(path, ext) + "-" + strings.ReplaceAll(k.name, ":", "-") + ext
			}
			sc.Uplink = func(s []int16) {
				if err := writeWAV(path, s, duplex.NearRate); err != nil {
					fmt.Fprintln(stderr, "robot-agent: duplex-bench:", err)
					code = 1
				}
			}
		}
		r, err := duplex.Run(sc)
		if err != nil {
			fmt.Fprintln(stderr, "robot-agent: duplex-bench:", err)
			return 1
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s/%s\t%s\t%d/%d\t%s\t%s\t%v (%d)\t%s\t%.0f dB\t%v\t%.2f %%\n", k.name, db(r.ERLEFirst2s), db(r.ERLE), db(r.GuardERLE), num(r.NearCorr),
			num(r.Precision), num(r.Recall), onsets(r), r.Clipped, r.Phrases, falseCol(r),
			fmt.Sprintf("%d/%d", r.BargeInsIn300ms, r.Phrases), r.DelayEstimate.Round(time.Millisecond), r.DelayShifts, driftCol(k.dc, r.DriftPPM), r.GuardDB, r.ChainDelay,
			100*r.CPUPerSecond.Seconds())
		if f.roomFile != "" {
			n := k.name + ": room file " + f.roomFile + ": "
			if roomModel != nil {
				n += fmt.Sprintf("started from RT60 %.2f s; ", roomModel.RT60)
			} else {
				n += "none yet, the room learnt afresh; "
			}
			if r.RoomModel == nil {
				n += "nothing learnt to save"
			} else if err := roomfile.Save(f.roomFile, benchDevices, *r.RoomModel, time.Now()); err != nil {
				fmt.Fprintln(stderr, "robot-agent: duplex-bench:", err)
				code = 1
			} else {
				n += fmt.Sprintf("saved RT60 %.2f s", r.RoomModel.RT60)
			}
			notes = append(notes, n)
		}
		if k.rg && r.ReverbHeld > 0 {
			room := fmt.Sprintf("room RT60 learnt from the mic: %.2f s", r.RoomRT60)
			if r.RoomRT60 == 0 {
				room = "room not learnt: a typical room assumed"
			}
			notes = append(notes, fmt.Sprintf("%s: the reverberation guard held %d reads (%s)", k.name, r.ReverbHeld, room))
		}
		if r.Dropouts > 0 {
			n := fmt.Sprintf("%s: %d mic dropouts of %d ms (digital silence%s, every %g s)", k.name, r.Dropouts, f.micDropMS, map[bool]string{true: ", reported", false: ""}[f.micDropReported], f.micDropEvery)
			if f.bargeIn {
				n += fmt.Sprintf("; %d phrases would have fallen into one and were left out (the table counts the other %d)", r.DropoutPhrases, r.Phrases)
			}
			notes = append(notes, n)
		}
		if r.SpeakerDropouts > 0 && f.volumeDown > 0 {
			notes = append(notes, fmt.Sprintf("%s: the robot's volume %g dB down for %d ms %d times (every %g s; above the reference, the speaker playing on); %d of the false barge-ins started within 5 s after one", k.name, f.volumeDown, f.spkDropMS, r.SpeakerDropouts,
				f.spkDropEvery, r.FalseAfterSpeakerDropout))
		} else if r.SpeakerDropouts > 0 {
			how := map[bool]string{false: "reported", true: "not reported"}[f.spkDropUnreported]
			if f.spkDropAtten > 0 {
				how = fmt.Sprintf("%g dB quieter, not reported", f.spkDropAtten)
			}
			notes = append(notes, fmt.Sprintf("%s: %d speaker dropouts of %d ms (%s, every %g s); %d of the false barge-ins started within 5 s after one", k.name, r.SpeakerDropouts, f.spkDropMS,
				how, f.spkDropEvery, r.FalseAfterSpeakerDropout))
		}
		if r.SilentSpeakers > 0 {
			notes = append(notes, fmt.Sprintf("%s: the canceller took the speaker for silent %d time(s) (%d reads held)", k.name, r.SilentSpeakers, r.SilentHeld))
		}
		if r.FalseAfterReply > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d of the false barge-ins started after a reply had ended (its echo's tail)", k.name, r.FalseAfterReply))
		}
		if r.EchoClips > 0 {
			notes = append(notes, fmt.Sprintf("%s: the robot's echo clipped the mic in %d frames of 10 ms; %s", k.name, r.EchoClips,
				map[bool]string{true: fmt.Sprintf("the clip guard lowered its voice by %.0f dB", r.ClipBackoffDB), false: "no clip guard (--clip-guard=false)"}[f.clipGuard]))
		}
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(stdout, n)
	}
	return code
}

// falseCol is the false barge-ins, with how many of them the echo cannot
// have caused (the room noise alone started them).
func falseCol(r duplex.Result) string {
	if r.FalseNoEcho == 0 {
		return fmt.Sprint(r.FalseBargeIns)
	}
	return fmt.Sprintf("%d (%d noise only)", r.FalseBargeIns, r.FalseNoEcho)
}

func driftCol(on bool, ppm float64) string {
	if !on {
		return "off"
	}
	return fmt.Sprintf("%.1f ppm", ppm)
}

func db(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.1f dB", v)
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

func onsets(r duplex.Result) string {
	if len(r.Onsets) == 0 {
		return "-"
	}
	return fmt.Sprintf("%v/%v", r.OnsetPercentile(50).Round(time.Millisecond), r.OnsetPercentile(95).Round(time.Millisecond))
}

// noiseNote describes a noise recording for the header: how long it plays
// before it loops, and the levels of its 20 ms frames over its RMS (the
// level --snr-db sets), the loudest also against the user's level. A loud
// sound in a short recording recurs at every loop, and one near the user's
// level may start an utterance each time (a real room's recording cut at a
// dropped cup: measured in docs/benchmarks.md, "Recorded noises").
func noiseNote(path string, snr float64) (string, error) {
	s, err := room.ReadNoiseWAV(path) // what the room plays
	if err != nil {
		return "", err
	}
	const frame = duplex.NearRate / 50
	if len(s) < frame {
		return "", fmt.Errorf("%q: shorter than 20 ms", path)
	}
	var mean, total float64
	for _, v := range s {
		mean += float64(v)
	}
	mean /= float64(len(s))
	dbs := make([]float64, 0, len(s)/frame)
	// Frames of digital silence (under -100 dBFS: a few LSBs at most) are
	// a mic dropout at every loop; the energy detector ignores those up to
	// 300 ms (vad.Floor), not longer ones.
	silent, first := 0, -1
	for k := 0; k+frame <= len(s); k += frame {
		var e float64
		for _, v := range s[k : k+frame] {
			e += (float64(v) - mean) * (float64(v) - mean)
		}
		total += e
		dbs = append(dbs, 10*math.Log10(e/frame+1e-9))
		if pcm.DBFS(s[k:k+frame]) < -100 {
			silent++
			if first < 0 {
				first = k
			}
		}
	}
	ref := 10 * math.Log10(total/float64(len(dbs)*frame)+1e-9)
	loudest := 0
	for i, v := range dbs {
		if v > dbs[loudest] {
			loudest = i
		}
	}
	top := dbs[loudest] - ref
	at := float64(loudest*frame) / duplex.NearRate
	sorted := slices.Sorted(slices.Values(dbs))
	q := func(p float64) float64 { return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))] - ref }
	rel := "under"
	if top-snr > 0 {
		rel = "over"
	}
	note := fmt.Sprintf("noise recording %s: %.1f s, looped; its 20 ms levels over its RMS: p50 %+.1f dB, p95 %+.1f dB, loudest %+.1f dB at %.2f s, %.1f dB %s the user's level at SNR %g dB (recurring every %.1f s)",
		filepath.Base(path), float64(len(s))/duplex.NearRate, q(0.5), q(0.95), top, at, math.Abs(top-snr), rel, snr, float64(len(s))/duplex.NearRate)
	if silent > 0 {
		note += fmt.Sprintf("; %d ms of it digital silence, from %.2f s: a mic dropout at every loop", silent*20, float64(first)/duplex.NearRate)
	}
	return note, nil
}

func writeWAV(path string, s []int16, rate int) error { return wav.WriteFile(path, rate, 1, s) }

// Default texts: a reply of about 8 s, a short user phrase.
const (
	defaultReply  = "Sure. The weather today is sunny with a light breeze from the west, and the temperature will reach twenty two degrees in the afternoon. Tomorrow it will be cloudy."
	defaultPhrase = "Stop, no, the other one please."
)

// notSilent rejects a recording with no usable sound in it (digital
// silence, dither alone): every level the bench sets is relative to it.
func notSilent(s []int16, rate int) error {
	if p := duplex.PeakLevel(s, rate); p < duplex.SilentDBFS {
		return fmt.Errorf("silent: its loudest 10 ms is at %.0f dBFS, under %.0f", max(p, -200), duplex.SilentDBFS)
	}
	return nil
}

// loadSpeech reads the far (24 kHz) and near (16 kHz) speech, trimmed of
// silence, or generates it.
func loadSpeech(farPath, nearPath string) (far, near []int16, src string, err error) {
	load := func(path, role, text, voice string, rate int) ([]int16, string, error) {
		if path != "" {
			a, err := wav.ReadFile(path)
			if err != nil {
				return nil, "", fmt.Errorf("--%s %q: %w", role, path, err)
			}
			s := duplex.Trim(duplex.ToMono(a, rate), rate)
			if len(s) < rate/10 {
				return nil, "", fmt.Errorf("--%s %q: less than 100 ms of audio", role, path)
			}
			if err := notSilent(s, rate); err != nil {
				return nil, "", fmt.Errorf("--%s %q: %w", role, path, err)
			}
			return s, "files", nil
		}
		if a, err := duplex.Espeak(text, voice); err == nil {
			return duplex.Trim(duplex.ToMono(a, rate), rate), "espeak-ng", nil
		}
		d := 6 * time.Second
		if role == "near" {
			d = 1500 * time.Millisecond
		}
		syn := duplex.Synthetic(d, map[string]uint64{"far": 1, "near": 2}[role])
		if rate != 16000 {
			syn = duplex.ToMono(wav.Audio{SampleRate: 16000, Channels: 1, Samples: syn}, rate)
		}
		return syn, "synthetic (espeak-ng missing)", nil
	}
	far, s1, err := load(farPath, "far", defaultReply, "en", duplex.FarRate)
	if err != nil {
		return nil, nil, "", err
	}
	near, s2, err := load(nearPath, "near", defaultPhrase, "en+f3", duplex.NearRate)
	if err != nil {
		return nil, nil, "", err
	}
	if s1 != s2 {
		s1 += " (far), " + s2 + " (near)"
	}
	return far, near, s1, nil
}

func pct(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.1f %%", 100*v)
}

// benchDevices is the devices a room file of duplex-bench is saved with
// (roomfile): the simulated speaker and mic.
const benchDevices = "duplex-bench simulated devices"

// measuredRT60Max is the most reverberant room aec.DefaultLinearTailMS was
// measured in (docs/benchmarks.md, "A linear filter that covers the room").
const measuredRT60Max = 800 * time.Millisecond

// measureEcho prints the echo path between two recordings (scripts/hil.sh).
func measureEcho(played, recorded, irOut string, stdout, stderr io.Writer) int {
	if played == "" || recorded == "" {
		fmt.Fprintln(stderr, "robot-agent: duplex-bench: --echo-played and --echo-recorded go together")
		return 2
	}
	var sig [2][]int16
	for i, p := range []string{played, recorded} {
		a, err := wav.ReadFile(p)
		if err != nil {
			fmt.Fprintf(stderr, "robot-agent: duplex-bench: %q: %v\n", p, err)
			return 2
		}
		sig[i] = duplex.ToMono(a, duplex.NearRate)
	}
	e, err := duplex.MeasureEcho(sig[0], sig[1], duplex.NearRate, time.Second)
	if err != nil {
		fmt.Fprintln(stderr, "robot-agent: duplex-bench:", err)
		return 1
	}
	fmt.Fprintln(stdout, "echo path:", e)
	switch {
	case e.RT60 == 0:
		fmt.Fprintln(stdout, "echo path: RT60 not measured (play a signal that ends in 0.3 s of silence, in a quiet room)")
	case e.RT60 > measuredRT60Max:
		fmt.Fprintf(stdout, "echo path: RT60 above the rooms duplex.tail_ms's default (%d ms) was measured in (up to %.1f s): compare --tail-ms values with duplex-bench --rt60 %.1f and your recordings\n",
			aec.DefaultLinearTailMS, measuredRT60Max.Seconds(), e.RT60.Seconds())
	}
	if e.Corr < 0.3 {
		fmt.Fprintln(stdout, "echo path: WARNING: low correlation: the speaker is barely heard at the mic, or the path is very non-linear (clipping?)")
	}
	if irOut != "" {
		return writeIR(sig[0], sig[1], e, irOut, stdout, stderr)
	}
	return 0
}

// irPreMS, irLengthMS: the impulse response --ir-out writes starts this
// long before the direct path and is this long.
const (
	irPreMS    = 5
	irLengthMS = 1000
)

// writeIR estimates the echo path's impulse response (duplex.EstimateIR)
// and writes it to path as a 16 kHz PCM16 WAV, normalised to half full
// scale (the bench scales it to --echo-gain-db), with the figures to run
// the bench in that room.
func writeIR(played, recorded []int16, e duplex.EchoPath, path string, stdout, stderr io.Writer) int {
	lag := int(e.Delay.Seconds()*duplex.NearRate + 0.5)
	pre := min(lag, irPreMS*duplex.NearRate/1000)
	ir, err := duplex.EstimateIR(played, recorded, duplex.NearRate, lag, pre, irLengthMS*duplex.NearRate/1000)
	if err != nil {
		fmt.Fprintln(stderr, "robot-agent: duplex-bench:", err)
		return 1
	}
	var peak, energy float64
	for _, v := range ir {
		peak = max(peak, math.Abs(v))
		energy += v * v
	}
	if peak == 0 {
		fmt.Fprintln(stderr, "robot-agent: duplex-bench: --ir-out: the estimated impulse response is zero")
		return 1
	}
	pcm := make([]int16, len(ir))
	for i, v := range ir {
		pcm[i] = int16(math.Round(v / peak * 16384))
	}
	if err := writeWAV(path, pcm, duplex.NearRate); err != nil {
		fmt.Fprintln(stderr, "robot-agent: duplex-bench: --ir-out:", err)
		return 1
	}
	fmt.Fprintf(stdout, "echo path: impulse response written to %s (%d ms from %d ms before the direct path; echo gain over the whole response %.1f dB); the capture chain in this room: robot-agent duplex-bench --ir-wav %s --echo-gain-db %.1f --far <the robot's reply.wav> --replies 20 --aec webrtc,webrtc:high\n",
		path, irLengthMS, pre*1000/duplex.NearRate, 10*math.Log10(energy), path, 10*math.Log10(energy))
	return 0
}

// irDescription names the room's impulse response for the bench's header:
// the WAV file's, or the synthetic one's RT60 and direct-to-reverberant
// ratio.
func irDescription(c room.Config) string {
	switch {
	case c.IRWAV != "":
		return "impulse response " + c.IRWAV
	case c.RT60 == 0:
		return "RT60 0 s (direct path only)"
	}
	drr := c.DRRDB
	if drr == 0 {
		drr = 6 // room.New's default
	}
	return fmt.Sprintf("RT60 %v s, DRR %v dB", c.RT60, drr)
}

// nearUse says in the header where the near end talks.
func nearUse(bargeIn, answer bool) string {
	switch {
	case bargeIn:
		return " (barge-in every reply)"
	case answer:
		return " (answering every reply, 200-800 ms after its end)"
	}
	return " (not used: far end only)"
}

// startupSound is --startup-sound: loadStartupSound, the errors named by
// the flag.
func startupSound(v string) ([]int16, error) {
	s, err := loadStartupSound(v)
	if err != nil {
		return nil, fmt.Errorf("--startup-sound %q: %w", v, err)
	}
	return s, nil
}

package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/aec"
	"github.com/robot-agent/robot-agent/codec/wav"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/reverb"
	"github.com/robot-agent/robot-agent/room"
	"github.com/robot-agent/robot-agent/roomfile"
)

func TestDuplexBenchStartupFailures(t *testing.T) {
	dir := t.TempDir()
	notWAV := filepath.Join(dir, "x.wav")
	os.WriteFile(notWAV, []byte("not a wav file"), 0o644)
	zero := writeMonoWAV(t, filepath.Join(dir, "zero.wav"), make([]int16, 16000))
	dither := make([]int16, 16000) // 16-bit dither alone: about -95 dBFS
	for i := range dither {
		dither[i] = int16(i%3 - 1)
	}
	ditherWAV := writeMonoWAV(t, filepath.Join(dir, "dither.wav"), dither)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--aec", "magic"}, `--aec "magic" is not one of`},
		{[]string{"--delay-ms", "-5"}, "delay_ms -5"},
		{[]string{"--noise", "rain"}, `noise "rain"`},
		{[]string{"--replies", "0"}, "--replies 0"},
		{[]string{"--far", filepath.Join(dir, "missing.wav")}, "--far"},
		{[]string{"--near", notWAV}, "--near"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--near", zero}, `--near "` + zero + `": silent: its loudest 10 ms is at -180 dBFS, under -80`},
		{[]string{"--far", ditherWAV}, `--far "` + ditherWAV + `": silent`},
		{[]string{"--vad-compare", "--near", ditherWAV}, `--near "` + ditherWAV + `": silent`},
		{[]string{"--startup-sound", filepath.Join(dir, "missing.wav")}, `--startup-sound "` + filepath.Join(dir, "missing.wav") + `": `},
		{[]string{"--startup-sound", notWAV}, `--startup-sound "` + notWAV + `": `},
		{[]string{"--startup-sound", zero}, `--startup-sound "` + zero + `": silent`},
		{[]string{"--startup-sound", "noise", "--vad-compare"}, "--startup-sound plays before the first reply: not with --vad-compare"},
		{[]string{"--ir-wav", zero}, "impulse response is all zeros"},
		{[]string{"--ir-wav", filepath.Join(dir, "missing.wav")}, "missing.wav"},
		{[]string{"--noise-wav", filepath.Join(dir, "missing.wav")}, `noise_wav "` + filepath.Join(dir, "missing.wav") + `": `},
		{[]string{"--noise-wav", zero}, "noise recording is silent"},
		{[]string{"--noise", "pink", "--noise-wav", ditherWAV}, `--noise "pink" and --noise-wav "` + ditherWAV + `": choose one`},
		{[]string{"--mic-dropout-ms", "20000"}, "--mic-dropout-ms 20000 every --mic-dropout-every-s 20: want a length from 0 up to less than the period"},
		{[]string{"--mic-dropout-ms", "100", "--mic-dropout-every-s", "0"}, "--mic-dropout-ms 100 every --mic-dropout-every-s 0"},
		{[]string{"--mic-dropout-ms", "-1"}, "--mic-dropout-ms -1"},
		{[]string{"--speaker-dropout-ms", "20000"}, "--speaker-dropout-ms 20000 every --speaker-dropout-every-s 20: want a length from 0 up to less than the period"},
		{[]string{"--speaker-dropout-ms", "100", "--speaker-dropout-every-s", "-2"}, "--speaker-dropout-ms 100 every --speaker-dropout-every-s -2"},
		{[]string{"--speaker-dropout-ms", "-1"}, "--speaker-dropout-ms -1"},
		{[]string{"--speaker-dropout-ms", "100", "--speaker-dropout-atten-db", "-3"}, "--speaker-dropout-atten-db -3: want 0 (nothing plays) or more"},
		{[]string{"--speaker-dropout-ms", "100", "--volume-down-db", "70"}, "--volume-down-db 70: want 0..60 with --speaker-dropout-ms"},
		{[]string{"--volume-down-db", "6"}, "--volume-down-db 6: want 0..60 with --speaker-dropout-ms (its windows)"},
		{[]string{"--answer", "--barge-in"}, "--answer places the near end after every reply: not with --barge-in or --vad-compare"},
		{[]string{"--answer", "--vad-compare"}, "--answer places the near end after every reply: not with --barge-in or --vad-compare"},
		{[]string{"--speaker-dropout-ms", "100", "--speaker-dropout-atten-db", "6", "--volume-down-db", "6"}, "without --speaker-dropout-atten-db or --speaker-dropout-unreported"},
	} {
		code, _, errs := runCLI(append([]string{"duplex-bench"}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(errs, tc.want) || !strings.HasPrefix(errs, "robot-agent: duplex-bench: ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tc.args, code, errs, tc.want)
		}
	}
}

// The bench takes any WAV files (here stereo 44.1 kHz) and writes the uplink.
func TestDuplexBenchAnyWAVs(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, rate, ch int, secs float64) string {
		p := filepath.Join(dir, name)
		f, _ := os.Create(p)
		w, _ := wav.NewWriter(f, rate, ch)
		s := make([]int16, int(secs*float64(rate))*ch)
		for i := range s {
			s[i] = int16((i * 7919 % 6000) - 3000)
		}
		w.Write(s)
		w.Close()
		f.Close()
		return p
	}
	far, near := mk("far.wav", 44100, 2, 2), mk("near.wav", 8000, 1, 0.8)
	out := filepath.Join(dir, "up.wav")
	code, stdout, errs := runCLI("duplex-bench", "--far", far, "--near", near, "--replies", "2", "--barge-in", "--aec", "none", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(stdout, "speech files") || !strings.Contains(stdout, "\nnone ") {
		t.Errorf("output:\n%s", stdout)
	}
	a, err := wav.ReadFile(out)
	if err != nil || a.SampleRate != 16000 || a.Frames() < 16000 {
		t.Errorf("uplink WAV: %v %+v", err, a.SampleRate)
	}
	if strings.Contains(stdout, "between replies") {
		t.Errorf("a phrase that fits its reply lengthened the gaps:\n%s", stdout)
	}
	// A recording longer than the reply: the gaps grow so that each phrase
	// ends before the next reply, and the bench says so.
	long := mk("long.wav", 16000, 1, 3)
	code, stdout, errs = runCLI("duplex-bench", "--far", far, "--near", long, "--replies", "2", "--barge-in", "--aec", "none")
	if code != 0 || !strings.Contains(stdout, "3.2 s between replies (--gap-ms 1000), so each phrase ends before the next reply") {
		t.Errorf("long phrase: exit %d, stdout %q, stderr %q", code, stdout, errs)
	}
	// --answer: the phrase after every reply, the gap grown to hold it
	// (800 ms at most after the reply, the phrase, 1 s to settle), and the
	// barge-in columns count the answers.
	code, stdout, errs = runCLI("duplex-bench", "--far", far, "--near", near, "--replies", "2", "--answer", "--aec", "none")
	if code != 0 || !strings.Contains(stdout, "(answering every reply, 200-800 ms after its end)") ||
		!strings.Contains(stdout, "2.6 s between replies (--gap-ms 1000), so each answer ends before the next reply") {
		t.Errorf("--answer: exit %d, stdout %q, stderr %q", code, stdout, errs)
	}
	row := ""
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "none ") {
			row = l
		}
	}
	if !strings.Contains(row, "/2 ") {
		t.Errorf("--answer: row %q, want 2 answers counted", row)
	}
}

// A noise recording (--noise-wav, any WAV: here a 440 Hz hum at 48 kHz
// stereo) reaches the mic at --snr-db under the near end's level: the
// uplink, continuous and without a canceller, carries the hum at that
// level, and 20 dB more of it at SNR 0 dB than at 20 dB.
func TestDuplexBenchNoiseRecording(t *testing.T) {
	dir := t.TempDir()
	hum := make([]int16, 2*48000*2)
	for i := range len(hum) / 2 {
		v := int16(6000 * math.Sin(2*math.Pi*440*float64(i)/48000))
		hum[2*i], hum[2*i+1] = v, v
	}
	p := filepath.Join(dir, "hum.wav")
	if err := wav.WriteFile(p, 48000, 2, hum); err != nil {
		t.Fatal(err)
	}
	level := func(snr string) float64 {
		t.Helper()
		out := filepath.Join(dir, "up-"+snr+".wav")
		code, stdout, errs := runCLI("duplex-bench", "--replies", "1", "--aec", "none", "--mode", "continuous", "--noise-wav", p, "--snr-db", snr, "--out", out)
		if code != 0 || !strings.Contains(stdout, "noise recording hum.wav at SNR "+snr+" dB") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, errs)
		}
		a, err := wav.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		s := a.Mono()
		var c, q float64
		for i, v := range s {
			ph := 2 * math.Pi * 440 * float64(i) / float64(a.SampleRate)
			c += float64(v) * math.Cos(ph)
			q += float64(v) * math.Sin(ph)
		}
		return 10 * math.Log10(2*(c*c+q*q)/float64(len(s))/float64(len(s))+1e-9)
	}
	// The header describes the recording: a steady hum, every 20 ms at
	// its RMS, 20 dB under the user at SNR 20 dB.
	_, stdout, _ := runCLI("duplex-bench", "--replies", "1", "--aec", "none", "--noise-wav", p, "--snr-db", "20")
	m := regexp.MustCompile(`noise recording hum\.wav: 2\.0 s, looped; its 20 ms levels over its RMS: p50 ([-+]\d+\.\d) dB, p95 ([-+]\d+\.\d) dB, loudest ([-+]\d+\.\d) dB at \d+\.\d\d s, (\d+\.\d) dB under the user's level at SNR 20 dB \(recurring every 2\.0 s\)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no noise recording line in\n%s", stdout)
	}
	for i, want := range []float64{0, 0, 0, 20} {
		if v, _ := strconv.ParseFloat(m[i+1], 64); math.Abs(v-want) > 0.3 {
			t.Errorf("level %d in %q: %v, want %v", i, m[0], v, want)
		}
	}
	if d := level("0") - level("20"); math.Abs(d-20) > 1 {
		t.Errorf("the hum at SNR 0 dB is %.1f dB over the hum at 20 dB, want 20", d)
	}
}

// --mic-dropout-ms: the uplink (continuous, no canceller: the mic as is)
// holds the dropouts as digital silence, as many as the note says, of the
// length asked, one every --mic-dropout-every-s.
func TestDuplexBenchMicDropouts(t *testing.T) {
	out := filepath.Join(t.TempDir(), "up.wav")
	code, stdout, errs := runCLI("duplex-bench", "--replies", "2", "--aec", "none", "--mode", "continuous", "--noise", "pink", "--mic-dropout-ms", "500", "--mic-dropout-every-s", "3", "--out", out)
	m := regexp.MustCompile(`none: (\d+) mic dropouts of 500 ms \(digital silence, every 3 s\)`).FindStringSubmatch(stdout)
	if code != 0 || m == nil {
		t.Fatalf("exit %d, stderr %q, no dropout note in\n%s", code, errs, stdout)
	}
	a, err := wav.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var runs []int // start of each run of zeros of at least 400 ms, in samples
	s, run := a.Mono(), 0
	for i, v := range s {
		if v != 0 {
			if run >= 400*16 {
				runs = append(runs, i-run)
			}
			run = 0
			continue
		}
		run++
	}
	if n, _ := strconv.Atoi(m[1]); n < 3 || len(runs) != n {
		t.Fatalf("%d runs of digital silence in the uplink at %v, the note says %s (want at least 3)", len(runs), runs, m[1])
	}
	for i := 1; i < len(runs); i++ {
		if d := runs[i] - runs[i-1]; d != 3*16000 {
			t.Errorf("dropouts %d and %d are %d samples apart, want %d", i-1, i, d, 3*16000)
		}
	}
}

// --speaker-dropout-ms: the speaker plays nothing for that long, one every
// --speaker-dropout-every-s, as many times as the note says: with a steady
// tone as the reply, no gap between replies, a dry room and no canceller,
// the uplink (the mic as is) holds the echo except in the dropouts.
func TestDuplexBenchSpeakerDropouts(t *testing.T) {
	dir := t.TempDir()
	far, out := filepath.Join(dir, "tone.wav"), filepath.Join(dir, "up.wav")
	writeTone(t, far, 24000, 1, 440, 5, 0.3)
	code, stdout, errs := runCLI("duplex-bench", "--replies", "3", "--gap-ms", "0", "--rt60", "0", "--far", far, "--aec", "none", "--mode", "continuous",
		"--speaker-dropout-ms", "500", "--speaker-dropout-every-s", "3", "--out", out)
	m := regexp.MustCompile(`none: (\d+) speaker dropouts of 500 ms \(reported, every 3 s\)`).FindStringSubmatch(stdout)
	if code != 0 || m == nil {
		t.Fatalf("exit %d, stderr %q, no dropout note in\n%s", code, errs, stdout)
	}
	a, err := wav.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// Runs of silence (under -60 dBFS in 10 ms) after the bench's 1 s
	// lead: the dropouts, the echo's delay later.
	var runs [][2]int // start, length in 10 ms blocks
	s, run := a.Mono(), 0
	for b := 110; (b+1)*160 <= len(s); b++ {
		var e float64
		for _, v := range s[b*160 : (b+1)*160] {
			e += float64(v) * float64(v)
		}
		if e < 160*33*33 { // -60 dBFS
			run++
			continue
		}
		if run > 0 {
			runs = append(runs, [2]int{b - run, run})
		}
		run = 0
	}
	if n, _ := strconv.Atoi(m[1]); n < 4 || len(runs) != n {
		t.Fatalf("%d silences in the uplink (start, length in 10 ms) %v; the note says %s dropouts (want at least 4)", len(runs), runs, m[1])
	}
	for i, r := range runs {
		if r[1] < 48 || r[1] > 51 {
			t.Errorf("silence %d lasts %d0 ms, want 500", i, r[1])
		}
		if i > 0 && r[0]-runs[i-1][0] != 300 {
			t.Errorf("silences %d and %d are %d0 ms apart, want 3 s", i-1, i, r[0]-runs[i-1][0])
		}
	}
}

// A slower mic (negative drift) runs on the speaker's clock unless told
// otherwise: on the mic's clock its echo overtakes the far end written at
// its pace after a minute or two, and the figures are meaningless.
func TestDuplexBenchNegativeDriftOnTheSpeakersClock(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"--drift-ppm", "-200"}, true},
		{[]string{"--drift-ppm", "-200", "--speaker-clock=false"}, false},
		{[]string{"--drift-ppm", "100"}, false},
		{[]string{"--drift-ppm", "100", "--speaker-clock"}, true},
	} {
		code, stdout, errs := runCLI(append([]string{"duplex-bench", "--replies", "1", "--aec", "none"}, tc.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errs)
		}
		if got := strings.Contains(stdout, "ppm (speaker's clock)"); got != tc.want {
			t.Errorf("%v: on the speaker's clock %v, want %v:\n%s", tc.args, got, tc.want, stdout)
		}
	}
}

func TestDuplexConfigErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "c.yaml")
	os.WriteFile(bad, []byte("duplex:\n  aec: magic\n  double_talk_db: 99\n  noise_guard_db: -3\n  linear_guard_db: 41\n  tail_ms: 1001\n  room_file: room.json\n  uplink: magic\n  duck:\n    hold_ms: 5\n  clip_guard:\n    max_db: 40\n    recover_min: -1\n  sim_room:\n    delay_ms: 9999\n"), 0o644)
	code, _, errs := runCLI("run", "--sim", "--duration", "1s", "--config", bad)
	// Every problem at once, in the yaml.path: value: problem form.
	for _, want := range []string{`duplex.aec: "magic": want auto, none, webrtc, speex`, "duplex.double_talk_db: 99: want 0..60",
		"duplex.noise_guard_db: -3: want 0..40", "duplex.linear_guard_db: 41: want 0..40", "duplex.tail_ms: 1001: want 0..1000", `duplex.room_file: "room.json": must be an absolute path`, `duplex.uplink: "magic": want auto, canceller, linear or linear-gated`,
		"duplex.duck.hold_ms: 5: want 50..30000", "duplex.clip_guard.max_db: 40: want more than 0, at most 30", "duplex.clip_guard.recover_min: -1: want 0..1440",
		"duplex.sim_room.delay_ms: 9999: out of range"} {
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("exit %d, stderr %q: want %q", code, errs, want)
		}
	}
	typo := filepath.Join(dir, "t.yaml")
	os.WriteFile(typo, []byte("duplex:\n  aecc: none\n  duck:\n    enable: true\n"), 0o644)
	code, _, errs = runCLI("run", "--sim", "--duration", "1s", "--config", typo)
	for _, want := range []string{`duplex.aecc: unknown key (did you mean aec?; line 2)`, `duplex.duck.enable: unknown key (did you mean enabled?; line 4)`} {
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("typo: exit %d, stderr %q: want %q", code, errs, want)
		}
	}
}

// make hil's echo path step the way scripts/hil.sh runs it: the played
// noise and its recording (here through a simulated room with a 0.6 s
// RT60) give the delay, the echo gain and the room's RT60; a recording
// that ends with the noise gives no RT60 and says why.
func TestDuplexBenchEchoPathRT60(t *testing.T) {
	dir := t.TempDir()
	n, _ := room.NewNoise(room.NoisePink, 16000, 2)
	buf := make([]float32, 3*16000)
	n.Fill(buf)
	played := make([]int16, 3*16000+8000) // 3 s of noise, 0.5 s of silence (hil.sh's pad)
	for i := range buf {
		played[i] = int16(buf[i] * 6000)
	}
	write := func(name string, s []int16) string { return writeMonoWAV(t, filepath.Join(dir, name), s) }
	r, err := room.New(room.Config{DelayMS: 120, EchoGainDB: -6, RT60: 0.6, Noise: room.NoisePink, NoiseDBFS: -80, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	r.Play(0, played, 16000)
	rec := make([]int16, len(played)+4000)
	r.Capture(0, rec)
	code, stdout, errs := runCLI("duplex-bench", "--echo-played", write("played.wav", played), "--echo-recorded", write("rec.wav", rec))
	var rt60 float64
	if i := strings.Index(stdout, "RT60 "); i >= 0 {
		fmt.Sscanf(stdout[i:], "RT60 %g s", &rt60)
	}
	if code != 0 || !strings.Contains(stdout, "echo path: delay 120ms") || rt60 < 0.48 || rt60 > 0.72 {
		t.Errorf("exit %d, stdout %q, stderr %q: want delay 120ms and an RT60 near 0.6 s", code, stdout, errs)
	}
	code, stdout, _ = runCLI("duplex-bench", "--echo-played", write("p2.wav", played[:3*16000]), "--echo-recorded", write("r2.wav", rec[:3*16000+4000]))
	if code != 0 || !strings.Contains(stdout, "RT60 not measured (play a signal that ends in 0.3 s of silence") {
		t.Errorf("noise without a silence after it: exit %d, stdout %q", code, stdout)
	}
}

// writeMonoWAV writes s as a 16 kHz mono WAV file at path and returns path.
func writeMonoWAV(t *testing.T, path string, s []int16) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := wav.NewWriter(f, 16000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(s); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// --ir-out: the echo path's impulse response estimated from make hil's
// recording is the room's: a known response (a direct path, reflections,
// a 0.5 s tail, 40 ms of delay) played through the simulated room comes
// back with its shape (correlation ≥ 0.98 over 100 ms from 5 ms before
// the direct path) and its late tail's energy, and the output names the
// file and the command that runs the bench in that room.
func TestDuplexBenchIROut(t *testing.T) {
	dir := t.TempDir()
	h := make([]int16, 8000)
	h[0], h[29], h[77] = 20000, 9000, -7000
	seed := uint32(9)
	for k := 160; k < len(h); k++ {
		seed = seed*1664525 + 1013904223
		h[k] = int16((float64(seed>>8)/(1<<24) - 0.5) * 9000 * math.Exp(-6.9*float64(k)/16000/0.5))
	}
	write := func(name string, s []int16) string { return writeMonoWAV(t, filepath.Join(dir, name), s) }
	r, err := room.New(room.Config{DelayMS: 40, EchoGainDB: -6, IRWAV: write("true.wav", h), Noise: room.NoisePink, NoiseDBFS: -80, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := room.NewNoise(room.NoisePink, 16000, 2)
	buf := make([]float32, 3*16000)
	n.Fill(buf)
	played := make([]int16, 3*16000+8000)
	for i := range buf {
		played[i] = int16(buf[i] * 6000)
	}
	r.Play(0, played, 16000)
	rec := make([]int16, len(played)+16000)
	r.Capture(0, rec)
	out := filepath.Join(dir, "ir.wav")
	code, stdout, errs := runCLI("duplex-bench", "--echo-played", write("played.wav", played), "--echo-recorded", write("rec.wav", rec), "--ir-out", out)
	if code != 0 || !strings.Contains(stdout, "impulse response written to "+out) || !strings.Contains(stdout, "--ir-wav "+out) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, errs)
	}
	a, err := wav.ReadFile(out)
	if err != nil || a.SampleRate != 16000 || a.Frames() != 16000 {
		t.Fatalf("%s: %v, %d Hz, %d frames; want 1 s at 16 kHz", out, err, a.SampleRate, a.Frames())
	}
	// The shape over the first 100 ms, and the energy of the tail from
	// 250 ms on: under the recording's floor there (here 42 dB under the
	// direct path per tap, from 150 ms on) it is continued along the
	// fitted decay, as noise.
	var c, ea, eh, ta, th float64
	for k, v := range h {
		x := float64(a.Samples[80+k]) // 5 ms before the direct path
		if k < 1600 {
			c += x * float64(v)
			ea += x * x
			eh += float64(v) * float64(v)
		}
		if k >= 4000 {
			ta += x * x
			th += float64(v) * float64(v)
		}
	}
	scale := eh / ea // the file is normalised to half full scale
	if corr, db := c/math.Sqrt(ea*eh), 10*math.Log10(ta*scale/th); corr < 0.98 || math.Abs(db) > 3 {
		t.Errorf("the written response correlates %.3f with the room's over 100 ms (want ≥ 0.98), its tail from 250 ms is %+.2f dB from the room's (want ±3 dB)", corr, db)
	}
	if code, _, errs := runCLI("duplex-bench", "--echo-played", filepath.Join(dir, "played.wav"), "--echo-recorded", filepath.Join(dir, "rec.wav"), "--ir-out", filepath.Join(dir, "no", "such", "dir.wav")); code != 1 || !strings.Contains(errs, "--ir-out") {
		t.Errorf("unwritable --ir-out: exit %d, stderr %q", code, errs)
	}
	// Without the recordings --ir-out has nothing to write: a one-line
	// error, not a bench run that ignores it.
	if code, stdout, errs := runCLI("duplex-bench", "--ir-out", filepath.Join(dir, "alone.wav"), "--replies", "1"); code != 2 || stdout != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "--ir-out goes with --echo-played and --echo-recorded") {
		t.Errorf("--ir-out alone: exit %d, stdout %q, stderr %q", code, stdout, errs)
	}
}

// duplex.reverb_guard: on by default with the canceller's filter length as
// the lag the late reverberation is predicted beyond; false turns it off.
func TestDuplexReverbGuardConfig(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		opts aec.Options
		want int
	}{
		{"", aec.Options{Kind: aec.KindWebRTC}, aec.DefaultLinearTailMS},
		{"", aec.Options{Kind: aec.KindSpeex}, aec.DefaultTailMS},
		{"duplex:\n  tail_ms: 384\n", aec.Options{Kind: aec.KindWebRTC, TailMS: 384}, 384},
		{"duplex:\n  reverb_guard: false\n", aec.Options{Kind: aec.KindWebRTC}, 0},
	} {
		var cfg config.Config
		if err := config.Decode(strings.NewReader(tt.yaml), &cfg, extraSections...); err != nil {
			t.Fatalf("%q: %v", tt.yaml, err)
		}
		d, err := loadDuplex(cfg, func(string) string { return "" })
		if err != nil {
			t.Fatalf("%q: %v", tt.yaml, err)
		}
		if got := d.reverbGuard(tt.opts); got != tt.want {
			t.Errorf("%q, %+v: ReverbGuardMS %d, want %d", tt.yaml, tt.opts, got, tt.want)
		}
	}
}

// noiseNote finds a loud sound in a recording (white noise with 100 ms at
// 4× the amplitude from 1.00 s) and a dropout (60 ms of zeros).
func TestNoiseNoteFindsTheLoudestSound(t *testing.T) {
	s := make([]int16, 2*16000)
	seed := uint32(7)
	for i := range s {
		seed = seed*1664525 + 1013904223
		s[i] = int16(int32(seed>>20) - 2048)
		if i >= 16000 && i < 17600 {
			s[i] *= 4
		}
	}
	p := filepath.Join(t.TempDir(), "cup.wav")
	if err := wav.WriteFile(p, 16000, 1, s); err != nil {
		t.Fatal(err)
	}
	note, err := noiseNote(p, 5)
	if err != nil {
		t.Fatal(err)
	}
	// The burst is 12 dB over the rest, 9.6 dB over the file's RMS (its
	// share raises the RMS): 4.6 dB over the user at SNR 5 dB.
	m := regexp.MustCompile(`loudest \+(\d+\.\d) dB at 1\.0\d s, (\d+\.\d) dB over the user's level at SNR 5 dB`).FindStringSubmatch(note)
	if m == nil {
		t.Fatalf("note %q", note)
	}
	top, _ := strconv.ParseFloat(m[1], 64)
	over, _ := strconv.ParseFloat(m[2], 64)
	if math.Abs(top-9.6) > 0.5 || math.Abs(over-(top-5)) > 0.05 {
		t.Errorf("note %q: loudest %v dB over the RMS, %v over the user; want 9.6±0.5 and 5 less", note, top, over)
	}
	if strings.Contains(note, "digital silence") {
		t.Errorf("note %q: no digital silence in the file", note)
	}
	// 60 ms of zeros from 0.5 s: a dropout at every loop.
	clear(s[8000:8960])
	if err := wav.WriteFile(p, 16000, 1, s); err != nil {
		t.Fatal(err)
	}
	if note, _ := noiseNote(p, 5); !strings.HasSuffix(note, "; 60 ms of it digital silence, from 0.50 s: a mic dropout at every loop") {
		t.Errorf("note %q: want the 60 ms of zeros at 0.50 s named", note)
	}
}

// uplinkSteps reads the uplink WAV at out and returns the lowest and
// highest level of its 10 ms blocks after the bench's 1 s lead (until the
// 14th second) and how many blocks lie within 1.5 dB of downDB under the
// highest.
func uplinkSteps(t *testing.T, out string, downDB float64) (lo, hi float64, quiet int) {
	t.Helper()
	a, err := wav.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	s := a.Mono()
	var levels []float64
	for b := 110; (b+1)*160 <= len(s) && b < 1400; b++ {
		var e float64
		for _, v := range s[b*160 : (b+1)*160] {
			e += float64(v) * float64(v)
		}
		levels = append(levels, 10*math.Log10(e/160+1e-9))
	}
	hi, lo = slices.Max(levels), slices.Min(levels)
	for _, l := range levels {
		if math.Abs(l-(hi-downDB)) < 1.5 {
			quiet++
		}
	}
	return lo, hi, quiet
}

// --volume-down-db: the dropout windows are the robot's own volume turned
// down instead (above the reference tap); the note says so, and with a
// steady tone in a dry room and no canceller the uplink is that much
// quieter in them.
func TestDuplexBenchVolumeDown(t *testing.T) {
	dir := t.TempDir()
	far, out := filepath.Join(dir, "tone.wav"), filepath.Join(dir, "up.wav")
	writeTone(t, far, 24000, 1, 440, 5, 0.3)
	code, stdout, errs := runCLI("duplex-bench", "--replies", "3", "--gap-ms", "0", "--rt60", "0", "--far", far, "--aec", "none", "--mode", "continuous",
		"--speaker-dropout-ms", "500", "--speaker-dropout-every-s", "3", "--volume-down-db", "20", "--out", out)
	if code != 0 || !regexp.MustCompile(`none: the robot's volume 20 dB down for 500 ms \d+ times \(every 3 s; above the reference`).MatchString(stdout) {
		t.Fatalf("exit %d, stderr %q, no volume note in\n%s", code, errs, stdout)
	}
	lo, hi, quiet := uplinkSteps(t, out, 20)
	if hi-lo < 18 || hi-lo > 22 || quiet < 4*40 {
		t.Errorf("uplink levels from %.1f to %.1f dB, %d blocks 20 dB under the loudest; want a 20 dB range and at least 4 windows of 500 ms there", lo, hi, quiet)
	}
}

// --speaker-dropout-atten-db: in the dropouts the speaker plays that many
// dB quieter instead of nothing (a volume turned down and back up), and
// the note says so: with a steady tone as the reply in a dry room and no
// canceller, the uplink's level in the dropouts is that far under the
// rest.
func TestDuplexBenchSpeakerDropoutAttenuation(t *testing.T) {
	dir := t.TempDir()
	far, out := filepath.Join(dir, "tone.wav"), filepath.Join(dir, "up.wav")
	writeTone(t, far, 24000, 1, 440, 5, 0.3)
	code, stdout, errs := runCLI("duplex-bench", "--replies", "3", "--gap-ms", "0", "--rt60", "0", "--far", far, "--aec", "none", "--mode", "continuous",
		"--speaker-dropout-ms", "500", "--speaker-dropout-every-s", "3", "--speaker-dropout-atten-db", "20", "--out", out)
	if code != 0 || !regexp.MustCompile(`none: \d+ speaker dropouts of 500 ms \(20 dB quieter, not reported, every 3 s\)`).MatchString(stdout) {
		t.Fatalf("exit %d, stderr %q, no dropout note in\n%s", code, errs, stdout)
	}
	lo, hi, quiet := uplinkSteps(t, out, 20)
	if hi-lo < 18 || hi-lo > 22 || quiet < 4*45 {
		t.Errorf("uplink levels from %.1f to %.1f dB, %d blocks 20 dB under the loudest; want a 20 dB range and at least 4 dropouts of 500 ms there", lo, hi, quiet)
	}
}

// --room-file: the usage errors (one canceller with the guard, a file that
// is not a room file), each a one-line message and exit 2; with a
// canceller built in, a model in the file is what the run starts from and
// the file is rewritten at the end.
func TestDuplexBenchRoomFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "room.json")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--aec", "none,webrtc"}, "--room-file " + path + ": needs exactly one --aec canceller"},
		{[]string{"--aec", "none"}, "needs exactly one --aec canceller (not none)"},
	} {
		code, _, errs := runCLI(append([]string{"duplex-bench", "--replies", "1", "--room-file", path}, tc.args...)...)
		if lines := strings.Split(strings.TrimSpace(errs), "\n"); code != 2 || len(lines) != 1 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tc.args, code, errs, tc.want)
		}
	}
	kind := aec.Best()
	if kind == aec.KindNone {
		t.Skip("no canceller built in")
	}
	os.WriteFile(path, []byte("{"), 0o644)
	code, _, errs := runCLI("duplex-bench", "--replies", "1", "--aec", kind, "--room-file", path)
	if code != 2 || !strings.Contains(errs, "--room-file: "+path+": roomfile: not a room file") {
		t.Errorf("corrupt file: exit %d, stderr %q", code, errs)
	}
	if err := roomfile.Save(path, benchDevices, reverb.Model{RT60: 0.6, LevelDB: -5}, time.Now()); err != nil {
		t.Fatal(err)
	}
	code, stdout, errs := runCLI("duplex-bench", "--replies", "1", "--aec", kind, "--room-file", path)
	if code != 0 || !strings.Contains(stdout, "room file "+path+": started from RT60 0.60 s; saved RT60") {
		t.Errorf("exit %d, stderr %q; want the run started from the file and saved:\n%s", code, errs, stdout)
	}
	if _, err := roomfile.Load(path, benchDevices); err != nil {
		t.Errorf("after the run: %v", err)
	}
}

// --reverb-typical and the :typ / :notyp variant options reach the
// canceller's SourceConfig (ReverbUnassumed) per variant.
func TestDuplexBenchReverbTypicalVariants(t *testing.T) {
	for _, tc := range []struct {
		spec    string
		typical bool // --reverb-typical
		want    bool // the variant assumes a typical room
	}{
		{"webrtc", true, true},
		{"webrtc", false, false},
		{"webrtc:notyp", true, false},
		{"webrtc:typ", false, true},
		{"speex:norg:notyp", true, false},
	} {
		v, err := parseVariant(tc.spec, duplexFlags{uplink: "auto", reverbTypical: tc.typical})
		if err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		if v.typ != tc.want {
			t.Errorf("%s with --reverb-typical=%v: typical %v, want %v", tc.spec, tc.typical, v.typ, tc.want)
		}
	}
	if _, err := parseVariant("webrtc:typical", duplexFlags{uplink: "auto"}); err == nil || !strings.Contains(err.Error(), "typ, notyp") {
		t.Errorf("unknown option: %v, want the list naming typ, notyp", err)
	}
}

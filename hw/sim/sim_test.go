package sim

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/codec/wav"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/hw/hwtest"
)

func autoClock() *clock.Fake {
	c := clock.NewFake()
	c.SetAutoAdvance(true)
	return c
}

func TestMicConformance(t *testing.T) {
	clk := autoClock()
	script := &SpeechScript{Utterances: []Utterance{{Speech: time.Second, Silence: time.Second}}}
	hwtest.TestAudioSource(t, func() hw.AudioSource {
		m, err := NewMic(MicConfig{Script: script, Loop: true}, clk)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}, clk)
}

func TestSpeakerConformance(t *testing.T) {
	clk := autoClock()
	hwtest.TestAudioSink(t, func() hw.AudioSink {
		s, err := NewSpeaker(SpeakerConfig{}, clk)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, clk)
}

func TestConformanceRealClock(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time test")
	}
	clk := clock.NewReal()
	t.Run("Mic", func(t *testing.T) {
		hwtest.TestAudioSource(t, func() hw.AudioSource {
			m, _ := NewMic(MicConfig{}, clk)
			return m
		}, clk)
	})
	t.Run("Speaker", func(t *testing.T) {
		hwtest.TestAudioSink(t, func() hw.AudioSink {
			s, _ := NewSpeaker(SpeakerConfig{Format: hw.AudioFormat{SampleRate: 48000, Channels: 2}}, clk)
			return s
		}, clk)
	})
}

// readAll reads n samples from m in reads of the given sizes (cycled).
func readAll(t *testing.T, m *Mic, n int, sizes ...int) []int16 {
	t.Helper()
	out := make([]int16, 0, n)
	for i := 0; len(out) < n; i++ {
		buf := make([]int16, min(sizes[i%len(sizes)], n-len(out)))
		if _, err := m.Read(buf); err != nil {
			t.Fatal(err)
		}
		out = append(out, buf...)
	}
	return out
}

func TestMicDeterministic(t *testing.T) {
	script := &SpeechScript{Utterances: []Utterance{{Speech: 300 * time.Millisecond, Silence: 200 * time.Millisecond}}}
	mk := func(seed uint64) *Mic {
		m, err := NewMic(MicConfig{Script: script, Seed: seed, Loop: true, Record: true}, autoClock())
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m1, m2, m3 := mk(7), mk(7), mk(8)
	a := readAll(t, m1, 24000, 320)
	b := readAll(t, m2, 24000, 1, 999, 17)
	c := readAll(t, m3, 24000, 320)
	if !slices.Equal(a, b) {
		t.Error("same seed, different read sizes: different samples")
	}
	if slices.Equal(a, c) {
		t.Error("different seeds gave identical samples")
	}
	if got := m1.Sent(); !slices.Equal(got, a) {
		t.Error("Sent() differs from what Read returned")
	}
	if m1.Produced() != 24000 {
		t.Errorf("Produced = %d", m1.Produced())
	}
}

// f0 estimates the fundamental of s by autocorrelation over 100..300 Hz.
func f0(s []int16, rate int) float64 {
	best, bestLag := math.Inf(-1), 0
	for lag := rate / 300; lag <= rate/100; lag++ {
		var acc float64
		for i := 0; i+lag < len(s); i++ {
			acc += float64(s[i]) * float64(s[i+lag])
		}
		acc /= float64(len(s) - lag)
		if acc > best {
			best, bestLag = acc, lag
		}
	}
	return float64(rate) / float64(bestLag)
}

func TestMicSpeechLike(t *testing.T) {
	script := &SpeechScript{Utterances: []Utterance{{Silence: 500 * time.Millisecond}, {Speech: 2 * time.Second, Silence: time.Second}}}
	if got := script.SpeechStarts(); !slices.Equal(got, []time.Duration{500 * time.Millisecond}) {
		t.Errorf("SpeechStarts = %v", got)
	}
	if got := script.Duration(); got != 3500*time.Millisecond {
		t.Errorf("Duration = %v", got)
	}
	m, err := NewMic(MicConfig{Script: script, Seed: 1}, autoClock())
	if err != nil {
		t.Fatal(err)
	}
	s := readAll(t, m, 16000*5, 320)
	const ms = 16 // samples per millisecond
	silence := s[:500*ms]
	speech := s[500*ms : 2500*ms]
	after := s[2500*ms : 3500*ms]
	tail := s[3500*ms:] // script over: noise floor
	for name, part := range map[string][]int16{"lead silence": silence, "after": after, "tail": tail} {
		if db := pcm.DBFS(part); math.Abs(db-DefaultNoiseDBFS) > 1 {
			t.Errorf("%s at %.1f dBFS, want %v±1", name, db, DefaultNoiseDBFS)
		}
	}
	if db := pcm.DBFS(speech); db < -28 || db > -18 {
		t.Errorf("speech at %.1f dBFS, want -28..-18", db)
	}
	// Every 20 ms frame of speech (past the ramps) stands well above the floor.
	minDB, maxDB := 0.0, -200.0
	for i := 20 * ms; i+20*ms <= len(speech)-20*ms; i += 20 * ms {
		db := pcm.DBFS(speech[i : i+20*ms])
		minDB, maxDB = min(minDB, db), max(maxDB, db)
	}
	if minDB < DefaultNoiseDBFS+20 {
		t.Errorf("quietest speech frame %.1f dBFS is within 20 dB of the noise floor", minDB)
	}
	if maxDB-minDB < 8 {
		t.Errorf("speech frames span %.1f..%.1f dBFS: no syllable envelope", minDB, maxDB)
	}
	// Syllable rate: count envelope rises through the mean of 10 ms levels.
	var env []float64
	for i := 0; i+10*ms <= len(speech); i += 10 * ms {
		env = append(env, pcm.RMS(speech[i:i+10*ms]))
	}
	var mean float64
	for _, e := range env {
		mean += e / float64(len(env))
	}
	rises := 0
	for i := 1; i < len(env); i++ {
		if env[i-1] < mean && env[i] >= mean {
			rises++
		}
	}
	if rises < 6 || rises > 10 { // 4 Hz over 2 s
		t.Errorf("%d syllables in 2 s, want about 8", rises)
	}
	// Pitch stays in the voiced range and glides.
	lo, hi := 1000.0, 0.0
	for i := 50 * ms; i+40*ms <= len(speech)-50*ms; i += 100 * ms {
		f := f0(speech[i:i+40*ms], 16000)
		if f < 115 || f > 225 {
			t.Errorf("f0 at %d ms = %.0f Hz, want 120..220", i/ms, f)
		}
		lo, hi = min(lo, f), max(hi, f)
	}
	if hi-lo < 10 {
		t.Errorf("pitch %.0f..%.0f Hz does not glide", lo, hi)
	}
}

func TestMicDigitalSilence(t *testing.T) {
	m, err := NewMic(MicConfig{NoiseDBFS: -200}, autoClock())
	if err != nil {
		t.Fatal(err)
	}
	if s := readAll(t, m, 1600, 160); pcm.Peak(s) != 0 {
		t.Errorf("peak %d, want digital silence", pcm.Peak(s))
	}
}

func TestMicPacingDoesNotDrift(t *testing.T) {
	clk := clock.NewFake() // no auto-advance: the test moves time
	m, err := NewMic(MicConfig{}, clk)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	buf := make([]int16, 320) // 20 ms
	done := make(chan error, 1)
	read := func() { _, err := m.Read(buf); done <- err }
	waitParked := func() {
		t.Helper()
		for i := 0; clk.Sleepers() == 0; i++ {
			if i > 5000 {
				t.Fatal("Read never slept")
			}
			time.Sleep(time.Millisecond)
		}
	}
	go read()
	waitParked()
	clk.Advance(30 * time.Millisecond) // caller is 10 ms late
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if at, ok := m.StartedAt(); !ok || at != 0 {
		t.Errorf("StartedAt = %v, %v", at, ok)
	}
	go read() // deadline is 40 ms, not 30+20
	waitParked()
	clk.Advance(9 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Read returned %v at 39 ms, before its 40 ms deadline", err)
	case <-time.After(20 * time.Millisecond):
	}
	waitParked()
	clk.Advance(time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A late caller gets buffered audio at once.
	clk.Advance(100 * time.Millisecond)
	go read()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read blocked although its deadline had passed")
	}
	// Close unblocks a Read parked on a clock that is not moving.
	go func() { _, err := m.Read(make([]int16, 32000)); done <- err }()
	waitParked()
	m.Close()
	if err := <-done; !errors.Is(err, hw.ErrClosed) {
		t.Errorf("Read after Close = %v, want hw.ErrClosed", err)
	}
}

func writeWAV(t *testing.T, path string, rate, ch int, s []int16) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := wav.NewWriter(f, rate, ch)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(s); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestMicWAV(t *testing.T) {
	dir := t.TempDir()
	stereo := filepath.Join(dir, "stereo48k.wav")
	s := make([]int16, 2*24000) // 0.5 s at 48 kHz, L=1000 R=3000
	for i := 0; i < len(s); i += 2 {
		s[i], s[i+1] = 1000, 3000
	}
	writeWAV(t, stereo, 48000, 2, s)

	m, err := NewMic(MicConfig{WAVPath: stereo}, autoClock())
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, m, 16000, 320)
	for i, v := range got[:8000] {
		if v != 2000 {
			t.Fatalf("sample %d = %d, want 2000 (mono mix of 1000/3000)", i, v)
		}
	}
	if db := pcm.DBFS(got[8000:]); math.Abs(db-DefaultNoiseDBFS) > 1.5 {
		t.Errorf("after the file: %.1f dBFS, want the noise floor", db)
	}

	loop, err := NewMic(MicConfig{WAVPath: stereo, Loop: true}, autoClock())
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range readAll(t, loop, 20000, 333) {
		if v != 2000 {
			t.Fatalf("looped sample %d = %d, want 2000", i, v)
		}
	}

	native := filepath.Join(dir, "mono16k.wav")
	ramp := make([]int16, 1000)
	for i := range ramp {
		ramp[i] = int16(i)
	}
	writeWAV(t, native, 16000, 1, ramp)
	m2, _ := NewMic(MicConfig{WAVPath: native, NoiseDBFS: -200}, autoClock())
	got = readAll(t, m2, 1100, 160)
	if !slices.Equal(got[:1000], ramp) || pcm.Peak(got[1000:]) != 0 {
		t.Error("16 kHz mono file not played verbatim followed by silence")
	}
}

func TestResampleLinear(t *testing.T) {
	up := resampleLinear([]int16{0, 100, 200, 300}, 8000, 16000)
	if want := []int16{0, 50, 100, 150, 200, 250, 300, 300}; !slices.Equal(up, want) {
		t.Errorf("8k→16k = %v, want %v", up, want)
	}
	down := resampleLinear([]int16{0, 10, 20, 30, 40, 50}, 48000, 16000)
	if want := []int16{0, 30}; !slices.Equal(down, want) {
		t.Errorf("48k→16k = %v, want %v", down, want)
	}
	odd := resampleLinear([]int16{0, 441, 882}, 44100, 16000)
	if len(odd) != 1 || odd[0] != 0 {
		t.Errorf("44.1k→16k = %v", odd)
	}
}

func TestToMono16kMixesEveryChannel(t *testing.T) {
	// A 4-microphone array's recording at 16 kHz: the mic plays the mix.
	a := wav.Audio{SampleRate: 16000, Channels: 4, Samples: []int16{4, 8, 12, 16, -400, 0, 0, 0}}
	if got, want := toMono16k(a), []int16{10, -100}; !slices.Equal(got, want) {
		t.Errorf("toMono16k = %v, want %v", got, want)
	}
}

func TestMicConfigErrors(t *testing.T) {
	dir := t.TempDir()
	mp3 := filepath.Join(dir, "mp3.wav")
	// An MP3-in-WAV: RIFF header with format tag 0x55.
	b := []byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x55\x00\x01\x00\x80\x3e\x00\x00\x00\xfa\x00\x00\x04\x00\x20\x00data\x00\x00\x00\x00")
	if err := os.WriteFile(mp3, b, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  MicConfig
		msg  string
	}{
		{"both", MicConfig{WAVPath: "x.wav", Script: &SpeechScript{}}, "sets both WAVPath and Script"},
		{"missing file", MicConfig{WAVPath: filepath.Join(dir, "nope.wav")}, "no such file"},
		{"mp3", MicConfig{WAVPath: mp3}, "wav: format tag 85 (MPEG layer 3) not supported"},
		{"loud noise", MicConfig{NoiseDBFS: 3}, "noise level 3 dBFS"},
		{"negative", MicConfig{Script: &SpeechScript{Utterances: []Utterance{{Speech: -1}}}}, "utterance 0 has negative duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewMic(tt.cfg, autoClock())
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %v, want one containing %q", err, tt.msg)
			}
		})
	}
	if _, err := NewMic(MicConfig{}, nil); err == nil {
		t.Error("nil clock accepted")
	}
}

func TestSpeakerBlocksAndRecording(t *testing.T) {
	clk := autoClock()
	path := filepath.Join(t.TempDir(), "out.wav")
	s, err := NewSpeaker(SpeakerConfig{WAVPath: path, Keep: true}, clk)
	if err != nil {
		t.Fatal(err)
	}
	if s.Format() != hw.TTSFormat || s.PeriodFrames() != 480 {
		t.Errorf("Format %v period %d, want %v and 480", s.Format(), s.PeriodFrames(), hw.TTSFormat)
	}
	var want []int16
	for i := range 3 {
		p := make([]int16, 480)
		for j := range p {
			p[j] = int16(i*1000 + j)
		}
		want = append(want, p...)
		if err := s.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if now := clk.Mono(); now != 60*time.Millisecond {
		t.Errorf("after 3 x 20 ms blocks the clock reads %v", now)
	}
	clk.Advance(100 * time.Millisecond) // speaker runs dry
	p := make([]int16, 240)
	want = append(want, p...)
	if err := s.Write(p); err != nil {
		t.Fatal(err)
	}
	wantBlocks := []Block{{0, 480, 480}, {20 * time.Millisecond, 480, 480}, {40 * time.Millisecond, 480, 480}, {160 * time.Millisecond, 240, 240}}
	if got := s.Blocks(); !slices.Equal(got, wantBlocks) {
		t.Errorf("Blocks = %v, want %v", got, wantBlocks)
	}
	if s.Underruns() != 1 {
		t.Errorf("Underruns = %d, want 1", s.Underruns())
	}
	if got := s.Samples(); !slices.Equal(got, want) {
		t.Error("Samples differ from what was written")
	}
	if err := s.Write([]int16{1, 2, 3}[:0]); err != nil {
		t.Errorf("empty Write = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := wav.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if rd.DataBytes() != int64(2*len(want)) {
		t.Errorf("WAV data size %d, want %d (finalized)", rd.DataBytes(), 2*len(want))
	}
	a, err := wav.ReadFile(path)
	if err != nil || a.SampleRate != 24000 || !slices.Equal(a.Samples, want) {
		t.Errorf("recorded WAV: %v, %d Hz, equal=%v", err, a.SampleRate, slices.Equal(a.Samples, want))
	}
}

func TestSpeakerBlockRing(t *testing.T) {
	s, _ := NewSpeaker(SpeakerConfig{BlockLog: 2}, autoClock())
	for range 5 {
		s.Write(make([]int16, 24))
	}
	if got := s.Blocks(); len(got) != 2 || got[0].At != 3*time.Millisecond || got[1].At != 4*time.Millisecond {
		t.Errorf("Blocks = %v, want the last two (at 3 ms and 4 ms)", got)
	}
	if s.Samples() != nil {
		t.Error("Samples without Keep should be nil")
	}
}

func TestSpeakerErrors(t *testing.T) {
	if _, err := NewSpeaker(SpeakerConfig{Format: hw.AudioFormat{SampleRate: 16000, Channels: 3}}, autoClock()); err == nil || !strings.Contains(err.Error(), "16000 Hz x 3 ch") {
		t.Errorf("3 channels: %v", err)
	}
	s, _ := NewSpeaker(SpeakerConfig{Format: hw.AudioFormat{SampleRate: 48000, Channels: 2}}, autoClock())
	if err := s.Write(make([]int16, 3)); err == nil || !strings.Contains(err.Error(), "not whole 2-channel frames") {
		t.Errorf("odd stereo write: %v", err)
	}
	if _, err := NewSpeaker(SpeakerConfig{WAVPath: filepath.Join(t.TempDir(), "no", "dir.wav")}, autoClock()); err == nil {
		t.Error("uncreatable WAV path accepted")
	}
}

func TestSpeakerNoAllocs(t *testing.T) {
	s, _ := NewSpeaker(SpeakerConfig{}, autoClock())
	p := make([]int16, 480)
	s.Write(p) // start the pacer goroutine
	allocs := testing.AllocsPerRun(200, func() {
		if err := s.Write(p); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("allocs per Write = %v, want 0", allocs)
	}
}

func BenchmarkMicRead20ms(b *testing.B) {
	m, _ := NewMic(MicConfig{Script: &SpeechScript{Utterances: []Utterance{{Speech: time.Second, Silence: time.Second}}}, Loop: true}, autoClock())
	buf := make([]int16, 320)
	b.ReportAllocs()
	for b.Loop() {
		m.Read(buf)
	}
}

// NextStart follows the device timeline, not when Write returned: a
// Write that returns late (the caller's goroutine woke up late) does not
// move it; past the device's slack the next block starts when written.
func TestSpeakerNextStartIgnoresLateReturns(t *testing.T) {
	clk := autoClock()
	s, err := NewSpeaker(SpeakerConfig{Latency: 5 * time.Millisecond}, clk)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.NextStart(); got != 5*time.Millisecond {
		t.Fatalf("before the first block NextStart = %v, want now + 5 ms latency", got)
	}
	p := make([]int16, 480) // 20 ms
	if err := s.Write(p); err != nil {
		t.Fatal(err)
	}
	if got := s.NextStart(); got != 25*time.Millisecond {
		t.Fatalf("after one 20 ms block from 0 with 5 ms latency NextStart = %v", got)
	}
	// The caller comes back 15 ms late (within the device's slack, so no
	// underrun): the next block still follows the first on the device.
	clk.Advance(15 * time.Millisecond)
	if got := s.NextStart(); got != 25*time.Millisecond {
		t.Fatalf("15 ms late NextStart = %v, want 25ms (the return was late, the device was not)", got)
	}
	if err := s.Write(p); err != nil {
		t.Fatal(err)
	}
	if got := s.NextStart(); got != 45*time.Millisecond {
		t.Fatalf("second block NextStart = %v, want 45ms", got)
	}
	if s.Underruns() != 0 {
		t.Fatalf("%d underruns", s.Underruns())
	}
	// Past the slack (one period, 20 ms) the device ran dry: a block
	// written now starts now.
	clk.Advance(100 * time.Millisecond)
	now := clk.Mono()
	if got := s.NextStart(); got != now+5*time.Millisecond {
		t.Fatalf("after the device ran dry NextStart = %v, want now (%v) + 5 ms", got, now)
	}
	if err := s.Write(p); err != nil {
		t.Fatal(err)
	}
	if s.Blocks()[2].At != now {
		t.Fatalf("the block after the underrun started at %v, want %v (where NextStart put it)", s.Blocks()[2].At, now)
	}
	if s.Underruns() != 1 {
		t.Fatalf("%d underruns, want the one", s.Underruns())
	}
}

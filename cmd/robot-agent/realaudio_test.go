//go:build portaudio && cgo

package main

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/clock"
	pcmlevel "github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/codec/resample"
	"github.com/robot-agent/robot-agent/codec/wav"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/hw/hwtest"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/uplink"
)

// These tests run the whole agent on real PortAudio devices: under
// scripts/with-pulse.sh a private PulseAudio's null sink (the speaker) and
// its monitor (the mic). An independent parec process records the sink's
// monitor as the witness of what the speaker played.

// probeSpeaker notes when the first audible block reaches the device layer.
type probeSpeaker struct {
	*realSpeaker
	clk       clock.Clock
	firstLoud atomic.Int64 // clock.Mono ns
	written   []int16      // with ROBOT_AGENT_TEST_DUMP: everything written
}

func (p *probeSpeaker) Write(b []int16) error {
	if os.Getenv("ROBOT_AGENT_TEST_DUMP") != "" {
		p.written = append(p.written, b...)
	}
	if p.firstLoud.Load() == 0 {
		for _, v := range b {
			if v > 500 || v < -500 {
				p.firstLoud.Store(int64(p.clk.Mono()))
				break
			}
		}
	}
	return p.realSpeaker.Write(b)
}

type realE2E struct {
	ad audioDevicesConfig // as used
	*runningAgent
	clk    clock.Clock
	reg    *metrics.Registry
	spk    *probeSpeaker
	itimer *interruptTimer
}

func startRealE2E(t *testing.T, gw gateway.Config, ad audioDevicesConfig, mod func(*config.Config)) *realE2E {
	t.Helper()
	if raceEnabled {
		// These tests measure real-time audio (NCC of what the sink
		// recorded, clicks, interrupt-to-silence): under the race
		// detector the Go side runs several-fold slower, and on a busy
		// 2-core machine the figures then measure the detector (ring ran
		// dry, gaps). scripts/test.sh runs them without -race; the device
		// layer's concurrency is race-tested in hw/portaudio.
		t.Skip("real-time audio quality: run without -race (scripts/test.sh does)")
	}
	if os.Getenv("ROBOT_AGENT_PULSE_SINK") == "" {
		hwtest.SkipOrFail(t, "not under scripts/with-pulse.sh (the tests record the private null sink's monitor)")
	}
	for _, tool := range []string{"parec", "paplay"} {
		if _, err := exec.LookPath(tool); err != nil {
			hwtest.SkipOrFail(t, tool+" not installed (pulseaudio-utils)")
		}
	}
	hwtest.LockAudio(t)
	// These tests are about the half-duplex modes; full duplex (the echo
	// canceller, in builds with it) has TestRealFullDuplexEchoPath.
	t.Setenv("ROBOT_AGENT_AEC", "none")
	clk := clock.NewReal()
	cfg := config.Default()
	cfg.Device.ID = "real-audio-e2e"
	if mod != nil {
		mod(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	e := &realE2E{ad: ad, clk: clk, reg: metrics.NewRegistry()}
	log := quietLog()
	if testing.Verbose() {
		log = testLog(t)
	}
	mic, spk, err := openAudioDevices(ad, cfg.Playback.FadeMS, clk, e.reg, log)
	if err != nil {
		hwtest.SkipOrFail(t, err.Error())
	}
	t.Cleanup(func() { mic.Close(); spk.Close() })
	if !mic.Up() || !spk.Up() {
		hwtest.SkipOrFail(t, "the default input or output device did not open")
	}
	e.spk = &probeSpeaker{realSpeaker: spk, clk: clk}
	opts := agentOptions{mic: mic, speaker: e.spk, gwConfig: &gw,
		wrapTTS: func(s uplink.TTSSink) uplink.TTSSink {
			e.itimer = &interruptTimer{TTSSink: s, clk: clk}
			return e.itimer
		}}
	a, err := newAgent(cfg, opts, clk, e.reg, log)
	if err != nil {
		t.Fatal(err)
	}
	a.gw.KeepPayloads(true)
	e.runningAgent = runAgent(t, a)
	waitUntil(t, 5*time.Second, "gateway session", func() bool { return e.a.client.Up() })
	return e
}

// speech returns espeak-ng speech resampled to rate.
func speech(t *testing.T, rate int) []int16 {
	t.Helper()
	if _, err := exec.LookPath("espeak-ng"); err != nil {
		hwtest.SkipOrFail(t, "espeak-ng not installed (scripts/deps.sh installs it)")
	}
	path := filepath.Join(t.TempDir(), "speech.wav")
	out, err := exec.Command("espeak-ng", "-s", "165", "-w", path,
		"Hello, I am your robot. The quick brown fox jumps over the lazy dog.").CombinedOutput()
	if err != nil {
		t.Fatalf("espeak-ng: %v: %s", err, out)
	}
	return wavAt(t, path, rate)
}

// wavAt reads a mono WAV file resampled to rate.
func wavAt(t *testing.T, path string, rate int) []int16 {
	t.Helper()
	a, err := wav.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if a.Channels != 1 {
		t.Fatalf("%s: %d channels, want mono", path, a.Channels)
	}
	rs, err := resample.New(a.SampleRate, rate, resample.QualityHigh)
	if err != nil {
		t.Fatal(err)
	}
	pcm := make([]int16, rs.OutLen(len(a.Samples)))
	n := rs.Process(pcm, a.Samples)
	return pcm[:n]
}

// parec records the null sink's monitor at rate, mono, noting when each
// chunk arrived.
type parec struct {
	cmd    *exec.Cmd
	clk    clock.Clock
	rate   int
	mu     sync.Mutex
	pcm    []int16
	marks  []mark
	copied chan struct{}
}

type mark struct {
	end int           // samples received so far
	at  time.Duration // clock.Mono when they had arrived
}

func startParec(t *testing.T, clk clock.Clock, rate int) *parec {
	t.Helper()
	p := &parec{clk: clk, rate: rate, copied: make(chan struct{})}
	p.cmd = exec.Command("parec", "--device="+os.Getenv("ROBOT_AGENT_PULSE_SINK")+".monitor", "--raw",
		"--format=s16le", "--rate="+itoa(rate), "--channels=1", "--latency-msec=10")
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		hwtest.SkipOrFail(t, "parec: "+err.Error())
	}
	go func() {
		defer close(p.copied)
		buf := make([]byte, 960)
		for {
			n, err := io.ReadAtLeast(out, buf, 2)
			n -= n % 2
			if n > 0 {
				now := clk.Mono()
				p.mu.Lock()
				for i := 0; i < n; i += 2 {
					p.pcm = append(p.pcm, int16(binary.LittleEndian.Uint16(buf[i:])))
				}
				p.marks = append(p.marks, mark{len(p.pcm), now})
				p.mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	waitUntil(t, 5*time.Second, "parec recording", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.pcm) > 0
	})
	time.Sleep(100 * time.Millisecond)
	return p
}

func itoa(n int) string { return strconv.Itoa(n) }

// testLog logs to the test output (with -v).
func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func (p *parec) stop() []int16 {
	p.cmd.Process.Signal(os.Interrupt)
	<-p.copied
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int16(nil), p.pcm...)
}

// timeOf estimates when sample i was recorded: the arrival of the chunk
// holding it, less the samples after it in that chunk. The estimate is
// late by the recorder's own latency.
func (p *parec) timeOf(i int) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.marks {
		if m.end > i {
			return m.at - time.Duration(m.end-1-i)*time.Second/time.Duration(p.rate)
		}
	}
	return p.marks[len(p.marks)-1].at
}

// dump writes pcm to $ROBOT_AGENT_TEST_DUMP/name when that is set, for
// listening to what a test recorded.
func dump(t *testing.T, name string, pcm []int16, rate int) {
	dir := os.Getenv("ROBOT_AGENT_TEST_DUMP")
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Log(err)
		return
	}
	defer f.Close()
	w, err := wav.NewWriter(f, rate, 1)
	if err != nil {
		t.Log(err)
		return
	}
	w.Write(pcm)
	w.Close()
}

func maxStep(x []int16) int {
	m := 0
	for i := 1; i < len(x); i++ {
		m = max(m, int(math.Abs(float64(x[i])-float64(x[i-1]))))
	}
	return m
}

// Real speech through the whole downlink: gateway → WebSocket → jitter
// buffer → PortAudio → null sink, recorded from the sink's monitor. The
// recording matches the original (NCC >= 0.9 after alignment), has no gap
// longer than one period and no click at start or stop, and the robot did
// not interrupt itself although its mic heard every word (half-duplex).
func TestRealDownlinkSpeech(t *testing.T) {
	const rate = 24000
	ref := speech(t, rate)
	e := startRealE2E(t, gateway.Config{Token: "sim-token", Speed: 4, NoEcho: true}, defaultAudioDevices(), nil)
	rec := startParec(t, e.clk, rate)
	sess := e.a.gw.Sessions()[0]
	sess.StreamTTS(context.Background(), ref)
	waitUntil(t, 15*time.Second, "the reply played to the end", func() bool {
		d, i := e.a.progress.counts()
		return d+i >= 1
	})
	time.Sleep(300 * time.Millisecond)
	pcm := rec.stop()
	e.stop(t)
	// The run summary shows the devices' callback timing.
	var sum strings.Builder
	writeDeviceTiming(&sum, e.reg)
	t.Logf("summary:\n%s", sum.String())
	for _, want := range []string{"device:    output", "device:    input", "device underflows", "ring ran dry"} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum.String())
		}
	}

	if _, i := e.a.progress.counts(); i != 0 {
		for _, ev := range e.a.gw.Events() {
			if ev.Header != nil && ev.Header.Kind == protocol.KindMicAudio {
				var pk int
				for j := 0; j+1 < len(ev.Payload); j += 2 {
					pk = max(pk, int(math.Abs(float64(int16(binary.LittleEndian.Uint16(ev.Payload[j:]))))))
				}
				t.Logf("mic frame at %v (gw %v) flag %v peak %d", time.Duration(ev.Header.Timestamp)*time.Microsecond, ev.At, ev.Header.Flag, pk)
			}
		}
		t.Logf("first loud write at %v", time.Duration(e.spk.firstLoud.Load()))
		t.Fatalf("the reply was interrupted %d times: the robot's mic made it interrupt itself", i)
	}
	dump(t, "downlink-recorded.wav", pcm, rate)
	dump(t, "downlink-original.wav", ref, rate)
	dump(t, "downlink-written.wav", e.spk.written, rate)
	off, c := align(pcm, ref, rate)
	t.Logf("recorded %.2f s; speech (%.2f s) found at %.3f s with NCC %.4f", float64(len(pcm))/rate, float64(len(ref))/rate, float64(off)/rate, c)
	if c < 0.9 {
		t.Fatalf("NCC %.4f between the recording and the original, want >= 0.9", c)
	}
	got := pcm[off : off+len(ref)]
	// Gaps: 1 ms windows where the original is loud and the recording not.
	win, period := rate/1000, 10
	run, longest := 0, 0
	for i := 0; i+win <= len(ref); i += win {
		if pr := pcmlevel.Peak(ref[i : i+win]); pr > 1000 && pcmlevel.Peak(got[i:i+win]) < pr/10 {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	if longest > period {
		t.Errorf("a %d ms gap in the played speech, want none longer than one period (%d ms)", longest, period)
	}
	// Clicks: silence before the reply, and no step at the start or the end
	// larger than the speech's own.
	pre := pcm[max(0, off-100*win) : off-win]
	if p := pcmlevel.Peak(pre); p > 200 {
		t.Errorf("peak %d in the 100 ms before the reply, want silence (no click)", p)
	}
	edge := 20 * win
	for _, b := range []struct {
		name     string
		rec, ref []int16
	}{
		{"start", pcm[off-edge : off+edge], append(make([]int16, edge), ref[:edge]...)},
		{"stop", pcm[off+len(ref)-edge : min(len(pcm), off+len(ref)+edge)], append(append([]int16(nil), ref[len(ref)-edge:]...), make([]int16, edge)...)},
	} {
		if rs, fs := maxStep(b.rec), maxStep(b.ref); float64(rs) > 1.5*float64(fs)+300 {
			t.Errorf("click at the %s: largest step %d in the recording, %d in the original", b.name, rs, fs)
		}
	}
	// Late Go-side writes are concealed and counted; audible damage is what
	// the gap and click checks above judge.
	t.Logf("output queue underruns %d, device underflows %d",
		e.reg.Value("robot_agent_audio_output_underruns_total"), e.reg.Value("robot_agent_audio_output_xruns_total"))
}

// A known signal played into the default source (the monitor) goes through
// the agent's mic and uplink; the gateway receives it as 16 kHz mono 20 ms
// frames, matching the original (NCC >= 0.9) at the same level.
func TestRealUplinkCapture(t *testing.T) {
	const rate = 16000
	ref := speech(t, rate)
	path := filepath.Join(t.TempDir(), "known.wav")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := wav.NewWriter(f, rate, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ref); err != nil {
		t.Fatal(err)
	}
	w.Close()
	f.Close()
	e := startRealE2E(t, gateway.Config{Token: "sim-token", NoEcho: true}, defaultAudioDevices(), func(c *config.Config) {
		c.Audio.Mode = capture.ModeContinuous
	})
	time.Sleep(200 * time.Millisecond)
	if out, err := exec.Command("paplay", "--device="+os.Getenv("ROBOT_AGENT_PULSE_SINK"), path).CombinedOutput(); err != nil {
		t.Fatalf("paplay: %v: %s", err, out)
	}
	time.Sleep(500 * time.Millisecond)
	e.stop(t)

	var got []int16
	frames := 0
	for _, ev := range e.a.gw.Events() {
		if ev.Header == nil || ev.Header.Kind != protocol.KindMicAudio || len(ev.Payload) == 0 {
			continue
		}
		frames++
		if len(ev.Payload) != 2*rate*20/1000 {
			t.Fatalf("mic frame of %d bytes, want %d (20 ms of 16 kHz mono PCM16)", len(ev.Payload), 2*rate*20/1000)
		}
		for i := 0; i+1 < len(ev.Payload); i += 2 {
			got = append(got, int16(binary.LittleEndian.Uint16(ev.Payload[i:])))
		}
	}
	if len(got) < len(ref) {
		t.Fatalf("gateway received %d samples (%d frames), fewer than the %d played", len(got), frames, len(ref))
	}
	off, c := align(got, ref, rate)
	lvl := 20 * math.Log10(pcmlevel.RMS(got[off:off+len(ref)])/pcmlevel.RMS(ref))
	t.Logf("gateway received %.2f s; the signal found at %.3f s with NCC %.4f, level %+.2f dB", float64(len(got))/rate, float64(off)/rate, c, lvl)
	if c < 0.9 {
		t.Errorf("NCC %.4f between what the gateway received and what was played, want >= 0.9", c)
	}
	if math.Abs(lvl) > 1.5 {
		t.Errorf("level %+.2f dB relative to the original, want within 1.5 dB", lvl)
	}
}

// Interrupting a reply mid-way silences the speaker within one device
// period (plus the fade) of the interrupt reaching the robot, on top of the
// device's own buffer: the output queue (BufferMS) is flushed, not played.
// Delays are measured through the same recorder for the reply's onset and
// for the silence, so the recorder's own latency cancels out.
func TestRealInterruptSilences(t *testing.T) {
	const rate = 24000
	ad := defaultAudioDevices()
	e := startRealE2E(t, gateway.Config{Token: "sim-token", Speed: 1, NoEcho: true}, ad, nil)
	rec := startParec(t, e.clk, rate)
	sess := e.a.gw.Sessions()[0]
	tone := make([]int16, 3*rate)
	for i := range tone {
		tone[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/rate))
	}
	go sess.StreamTTS(context.Background(), tone)
	waitUntil(t, 5*time.Second, "reply playing", func() bool {
		return e.reg.Value("robot_agent_playback_played_samples_total") > rate/2
	})
	sess.Interrupt()
	waitUntil(t, 2*time.Second, "interrupt received", func() bool { return e.itimer.at.Load() != 0 })
	recv := time.Duration(e.itimer.at.Load())
	time.Sleep(400 * time.Millisecond)
	pcm := rec.stop()
	e.stop(t)

	first, last := -1, -1
	for i, v := range pcm {
		if v > 1000 || v < -1000 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		t.Fatal("nothing audible recorded")
	}
	onset := rec.timeOf(first) - time.Duration(e.spk.firstLoud.Load())
	silence := rec.timeOf(last) - recv
	lead := time.Duration(e.ad.OutputBufferMS) * time.Millisecond
	device := e.spk.Sink.Latency() - lead
	period := time.Duration(e.ad.PeriodMS) * time.Millisecond
	fade := time.Duration(config.Default().Playback.FadeMS) * time.Millisecond
	// onset = lead + device buffer + recorder; silence <= period + fade +
	// device buffer + recorder.
	excess := silence - (onset - lead)
	t.Logf("reply onset %v after the first write (lead %v, device latency %v); last sound %v after the interrupt: %v beyond the device buffer",
		onset.Round(time.Millisecond), lead, device, silence.Round(time.Millisecond), excess.Round(time.Millisecond))
	// The recorder timestamps chunks as they arrive: allow for their jitter
	// (more under the race detector).
	slack := 15 * time.Millisecond
	if limit := period + fade + slack; excess > limit {
		t.Errorf("sound went on %v after the interrupt, %v more than the device buffer; want at most one period + fade (+%v measurement slack) = %v",
			silence.Round(time.Millisecond), excess.Round(time.Millisecond), slack, limit)
	}
	if silence >= onset {
		t.Errorf("silence took %v, as long as a reply takes to start (%v): the output queue was played, not flushed", silence, onset)
	}
	if e.reg.Value("robot_agent_playback_flushes_total") < 1 {
		t.Error("no flush counted")
	}
}

// With half-duplex off, the same reply makes the robot interrupt itself:
// its mic hears its own voice and the gateway barges in. This is what the
// default gate prevents (TestRealDownlinkSpeech).
func TestRealWithoutHalfDuplexTheRobotInterruptsItself(t *testing.T) {
	ad := defaultAudioDevices()
	ad.HalfDuplex = halfDuplexOff
	e := startRealE2E(t, gateway.Config{Token: "sim-token", Speed: 4, NoEcho: true}, ad, nil)
	ref := speech(t, 24000)
	sess := e.a.gw.Sessions()[0]
	sess.StreamTTS(context.Background(), ref)
	waitUntil(t, 10*time.Second, "the robot interrupting its own reply", func() bool {
		_, i := e.a.progress.counts()
		return i >= 1
	})
}

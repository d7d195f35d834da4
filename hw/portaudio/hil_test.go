//go:build portaudio && cgo

package portaudio

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/codec/resample"
	"github.com/robot-agent/robot-agent/codec/wav"
	"github.com/robot-agent/robot-agent/hw/hwtest"
	"github.com/robot-agent/robot-agent/metrics"
)

// TestHIL is the hardware-in-the-loop check run by `make hil`
// (scripts/hil.sh) on a board with a USB mic and speaker: it records a few
// seconds and reports level and clipping, plays a test tone and a short
// phrase and reports underruns, and measures how loud the speaker is at
// the mic (acoustic echo, which the half-duplex tail must cover). It runs
// when ROBOT_AGENT_HIL=1 (or, as a smoke test, under scripts/with-pulse.sh)
// and uses ROBOT_AGENT_AUDIO_INPUT / ROBOT_AGENT_AUDIO_OUTPUT to pick the
// devices (default: the system defaults). Level problems are reported, not
// failed: a quiet room is not a broken mic.
func TestHIL(t *testing.T) {
	if os.Getenv("ROBOT_AGENT_HIL") == "" && os.Getenv("ROBOT_AGENT_REQUIRE_AUDIO") == "" {
		t.Skip("hardware-in-the-loop check: run `make hil` (ROBOT_AGENT_HIL=1)")
	}
	reg := metrics.NewRegistry()
	hwtest.LockAudio(t)
	h, err := NewHost(HostConfig{Metrics: reg, Log: testLogger(t)})
	if err != nil {
		t.Skipf("HIL skipped: %v", err)
	}
	defer h.Close()
	devs := h.Devices()
	in, errIn := Match(devs, os.Getenv("ROBOT_AGENT_AUDIO_INPUT"), false)
	out, errOut := Match(devs, os.Getenv("ROBOT_AGENT_AUDIO_OUTPUT"), true)
	if errIn != nil || errOut != nil {
		t.Skipf("HIL skipped: no usable audio device on this machine (input: %v; output: %v). Plug in the USB mic and speaker, check `robot-agent devices`, or set ROBOT_AGENT_AUDIO_INPUT / ROBOT_AGENT_AUDIO_OUTPUT.", errIn, errOut)
	}
	t.Logf("input  %q (%d ch, %d Hz default)", in.Name, in.MaxInputChannels, in.DefaultSampleRate)
	t.Logf("output %q (%d ch, %d Hz default)", out.Name, out.MaxOutputChannels, out.DefaultSampleRate)
	src, err := h.NewSource(SourceConfig{DeviceConfig: DeviceConfig{Device: in.Name}})
	if err != nil || !src.Up() {
		t.Fatalf("opening the input %q: %v", in.Name, err)
	}
	sink, err := h.NewSink(SinkConfig{DeviceConfig: DeviceConfig{Device: out.Name}})
	if err != nil || !sink.Up() {
		t.Fatalf("opening the output %q: %v", out.Name, err)
	}
	t.Logf("output latency %v (queue + device), input latency %v", sink.Latency(), src.Latency())
	phrase := hilPhrase(t)

	// Like the agent: one goroutine keeps the speaker fed (silence between
	// clips), another keeps reading the mic.
	rec := record(src)
	clips := make(chan []int16)
	played := make(chan struct{})
	go func() {
		defer close(played)
		silence := make([]int16, sink.PeriodFrames())
		for {
			var clip []int16
			select {
			case c, ok := <-clips:
				if !ok {
					return
				}
				clip = c
			default:
				clip = silence
			}
			for off := 0; off < len(clip); off += len(silence) {
				if err := sink.Write(clip[off:min(off+len(silence), len(clip))]); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	mark := func() int { rec.mu.Lock(); defer rec.mu.Unlock(); return len(rec.pcm) }
	since := func(m int) []int16 { rec.mu.Lock(); defer rec.mu.Unlock(); return append([]int16(nil), rec.pcm[m:]...) }
	tail := sink.Latency() + 300*time.Millisecond

	// 1. Room: 3 s of the mic with the speaker silent (1 s in smoke runs).
	roomFor := 3 * time.Second
	if os.Getenv("ROBOT_AGENT_HIL") == "" {
		roomFor = time.Second
	}
	m := mark()
	time.Sleep(roomFor)
	room := since(m)
	lvl := levels(room)
	t.Logf("mic, %v of room: RMS %.1f dBFS, peak %.1f dBFS, DC %+.0f, clipped %d samples (%.3f%%)",
		roomFor, lvl.rms, lvl.peak, lvl.dc, lvl.clipped, 100*float64(lvl.clipped)/float64(max(len(room), 1)))
	switch {
	case lvl.rms < -80:
		t.Log("WARNING: the mic delivers (near) digital silence: muted, unplugged, or capture gain at 0 (alsamixer)?")
	case lvl.clipped > len(room)/1000:
		t.Log("WARNING: the mic clips in a quiet room: lower the capture gain (alsamixer)")
	}

	// 2. Tone: 1 s of 1 kHz at -12 dBFS, and how loud it is at the mic.
	xr0 := reg.Value("robot_agent_audio_output_xruns_total")
	u0 := reg.Value("robot_agent_audio_output_underruns_total")
	tone := make([]int16, 24000)
	for i := range tone {
		tone[i] = int16(32767 * math.Pow(10, -12.0/20) * math.Sin(2*math.Pi*1000*float64(i)/24000))
	}
	m = mark()
	clips <- tone
	time.Sleep(time.Second + tail)
	echo := db(goertzel(since(m), 1000, src.Format().SampleRate) / 32767)
	t.Logf("speaker test tone (1 kHz, -12 dBFS, 1 s): heard at the mic at %.1f dBFS", echo)
	if echo < -70 {
		t.Log("NOTE: the tone is not audible at the mic (speaker off or far from the mic?)")
	}

	// 3. A short phrase.
	if phrase != nil {
		clips <- phrase
		time.Sleep(time.Duration(len(phrase))*time.Second/24000 + tail)
		t.Logf("played a %.1f s phrase", float64(len(phrase))/24000)
	}
	time.Sleep(2 * DefaultWatchInterval) // counters are exported by the supervisor
	u := reg.Value("robot_agent_audio_output_underruns_total") - u0
	xr := reg.Value("robot_agent_audio_output_xruns_total") - xr0
	close(clips)
	<-played
	rec.finish(t)
	t.Logf("while playing: %d output underruns (queue ran dry), %d device underflows; %d input frames overrun",
		u, xr, reg.Value("robot_agent_audio_input_overrun_frames_total"))
	if u != 0 || xr != 0 {
		if os.Getenv("ROBOT_AGENT_HIL") == "" {
			// Smoke run under scripts/with-pulse.sh on a shared CI machine.
			t.Logf("NOTE: %d queue underruns and %d device underflows (smoke run: not judged)", u, xr)
		} else {
			t.Errorf("underruns while playing the tone and phrase: %d queue, %d device", u, xr)
		}
	}
}

type levelReport struct {
	rms, peak, dc float64
	clipped       int
}

func levels(x []int16) levelReport {
	var r levelReport
	var s, sq float64
	p := 0.0
	for _, v := range x {
		f := float64(v)
		s += f
		sq += f * f
		p = max(p, math.Abs(f))
		if v >= 32767 || v <= -32767 {
			r.clipped++
		}
	}
	n := float64(max(len(x), 1))
	r.dc = s / n
	r.rms = db(math.Sqrt(sq/n) / 32768)
	r.peak = db(p / 32768)
	return r
}

// hilPhrase returns a spoken phrase at 24 kHz, or nil without espeak-ng.
func hilPhrase(t *testing.T) []int16 {
	if _, err := exec.LookPath("espeak-ng"); err != nil {
		t.Log("espeak-ng not installed: phrase skipped")
		return nil
	}
	path := filepath.Join(t.TempDir(), "phrase.wav")
	if err := exec.Command("espeak-ng", "-w", path, "Audio check. One, two, three.").Run(); err != nil {
		t.Logf("espeak-ng: %v: phrase skipped", err)
		return nil
	}
	a, err := wav.ReadFile(path)
	if err != nil || a.Channels != 1 {
		t.Logf("espeak-ng output: %v: phrase skipped", err)
		return nil
	}
	rs, err := resample.New(a.SampleRate, 24000, resample.QualityDefault)
	if err != nil {
		t.Log(err)
		return nil
	}
	out := make([]int16, rs.OutLen(len(a.Samples)))
	return out[:rs.Process(out, a.Samples)]
}

//go:build portaudio && opus && cgo

package main

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/codec/opus"
	pcmlevel "github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/codec/wav"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/protocol"
)

// TestRealOpusRoundTrip runs both directions through real (PulseAudio)
// devices with Opus negotiated: speech played into the mic reaches the
// gateway as Opus packets that decode to the speech, and speech the
// gateway sends as Opus is played by the speaker. Opus does not keep the
// waveform exactly, so the bounds are lower than the PCM tests' (measured
// on this machine: NCC about 0.8-0.9 each way).
func TestRealOpusRoundTrip(t *testing.T) {
	ref16, ref24 := speech(t, 16000), speech(t, 24000)
	path := filepath.Join(t.TempDir(), "known.wav")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := wav.NewWriter(f, 16000, 1)
	w.Write(ref16)
	w.Close()
	f.Close()
	e := startRealE2E(t, gateway.Config{Token: "sim-token", Speed: 4, NoEcho: true, Codec: gateway.CodecOpus}, defaultAudioDevices(), func(c *config.Config) {
		c.Audio.Mode = capture.ModeContinuous
	})
	sess := e.a.gw.Sessions()[0]
	if a := sess.Hello.Audio; a == nil || a.Up[0].Format != protocol.FormatOpus {
		t.Fatal("robot did not offer Opus")
	}
	// Uplink.
	time.Sleep(200 * time.Millisecond)
	if out, err := exec.Command("paplay", "--device="+os.Getenv("ROBOT_AGENT_PULSE_SINK"), path).CombinedOutput(); err != nil {
		t.Fatalf("paplay: %v: %s", err, out)
	}
	time.Sleep(500 * time.Millisecond)
	dec, err := opus.NewDecoder(16000)
	if err != nil {
		t.Fatal(err)
	}
	var got []int16
	var wire, frames int
	buf := make([]int16, dec.MaxSamples())
	for _, ev := range e.a.gw.Events() {
		if ev.Header == nil || ev.Header.Kind != protocol.KindMicAudio || len(ev.Payload) == 0 {
			continue
		}
		frames++
		wire += protocol.HeaderSize + len(ev.Payload)
		n, err := dec.Decode(ev.Payload, buf)
		if err != nil {
			t.Fatalf("mic frame %d is not an Opus packet: %v", frames, err)
		}
		got = append(got, buf[:n]...)
	}
	if len(got) < len(ref16) {
		t.Fatalf("gateway decoded %d samples from %d frames, fewer than the %d played", len(got), frames, len(ref16))
	}
	off, c := align(got, ref16, 16000)
	kbit := float64(wire*8) / (float64(frames) * 0.02) / 1000
	lvl := 20 * math.Log10(pcmlevel.RMS(got[off:off+len(ref16)])/pcmlevel.RMS(ref16))
	t.Logf("uplink: %d Opus frames, %.1f kbit/s on the wire with headers; speech found with NCC %.3f, level %+.2f dB", frames, kbit, c, lvl)
	if c < 0.7 || math.Abs(lvl) > 3 {
		t.Errorf("uplink NCC %.3f level %+.2f dB, want >= 0.7 and within 3 dB", c, lvl)
	}
	if kbit > 32 {
		t.Errorf("uplink %.1f kbit/s, want well under PCM's 256", kbit)
	}
	// Downlink.
	rec := startParec(t, e.clk, 24000)
	sess.StreamTTS(context.Background(), ref24)
	waitUntil(t, 15*time.Second, "the reply played to the end", func() bool {
		d, i := e.a.progress.counts()
		return d+i >= 1
	})
	time.Sleep(300 * time.Millisecond)
	pcm := rec.stop()
	e.stop(t)
	dump(t, "opus-downlink-recorded.wav", pcm, 24000)
	d, i := e.a.progress.counts()
	t.Logf("responses done %d, interrupted %d; recorded %d samples, peak %d", d, i, len(pcm), pcmlevel.Peak(pcm))
	// The real devices on a loaded machine glitch (late periods shift the
	// timeline), so each 500 ms of the speech is found on its own and the
	// median match is judged.
	var nccs []float64
	for seg := 0; seg+12000 <= len(ref24); seg += 12000 {
		if pcmlevel.Peak(ref24[seg:seg+12000]) < 2000 {
			continue // a pause
		}
		_, c := align(pcm, ref24[seg:seg+12000], 24000)
		nccs = append(nccs, c)
	}
	slices.Sort(nccs)
	med := nccs[len(nccs)/2]
	t.Logf("downlink: %d packets decoded; 500 ms speech segments found in the recording with median NCC %.3f (min %.3f)", e.reg.Value("robot_agent_tts_packets_total"), med, nccs[0])
	if med < 0.6 {
		t.Errorf("downlink median segment NCC %.3f, want >= 0.6", med)
	}
	if n := e.reg.Value("robot_agent_tts_packets_total"); n < int64(len(ref24)/480) {
		t.Errorf("%d TTS packets decoded, want one per 20 ms (%d)", n, len(ref24)/480)
	}
}

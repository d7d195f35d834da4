//go:build portaudio && webrtcapm && cgo

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/pcm"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/duplex"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/hw/hwtest"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

// pactl runs pactl against the private daemon of scripts/with-pulse.sh.
func pactl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("pactl", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("pactl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestRealFullDuplexEchoPath: a real echo path with real device timing. The
// robot's speaker is a null sink robot_spk; module-loopback carries its
// monitor into the mic's null sink (ci_sink, whose monitor is the mic) with
// 80 ms of clocked delay at 0 dB. The robot speaks a long reply with the
// echo canceller on: it must not interrupt itself. Then a user phrase is
// played into the mic's sink mid-reply: it must reach the gateway through
// the canceller and interrupt the reply.
//
// It runs in make test's real-time step, without -race. Under -race (the
// Go side several times slower, every package's tests at once) the devices
// stall and underflow far more than any robot board's would; there it is
// opt-in: ROBOT_AGENT_FULL_DUPLEX_E2E=1 (make test-full-duplex).
func TestRealFullDuplexEchoPath(t *testing.T) {
	if raceEnabled && os.Getenv("ROBOT_AGENT_FULL_DUPLEX_E2E") != "1" {
		t.Skip("real-time test: runs without -race in make test (scripts/test.sh); under -race opt-in with ROBOT_AGENT_FULL_DUPLEX_E2E=1")
	}
	sinkName := os.Getenv("ROBOT_AGENT_PULSE_SINK")
	if sinkName == "" {
		hwtest.SkipOrFail(t, "no PulseAudio: not under scripts/with-pulse.sh (the test builds its echo path with pactl)")
	}
	for _, tool := range []string{"pactl", "paplay", "espeak-ng"} {
		if _, err := exec.LookPath(tool); err != nil {
			hwtest.SkipOrFail(t, tool+" not installed")
		}
	}
	hwtest.LockAudio(t)
	// The room: robot_spk -> loopback (80 ms) -> ci_sink -> ci_sink.monitor = mic.
	spkMod := pactl(t, "load-module", "module-null-sink", "sink_name=robot_spk", "rate=48000", "channels=2")
	loopMod := pactl(t, "load-module", "module-loopback", "source=robot_spk.monitor", "sink="+sinkName,
		"latency_msec=80", "source_dont_move=true", "sink_dont_move=true")
	pactl(t, "set-default-sink", "robot_spk")
	t.Cleanup(func() {
		exec.Command("pactl", "set-default-sink", sinkName).Run()
		exec.Command("pactl", "unload-module", loopMod).Run()
		exec.Command("pactl", "unload-module", spkMod).Run()
	})

	clk := clock.NewReal()
	reg := metrics.NewRegistry()
	ad := defaultAudioDevices()
	if raceEnabled {
		ad.OutputBufferMS = max(ad.OutputBufferMS, 120)
	}
	cfg := config.Default()
	cfg.Device.ID = "full-duplex-e2e"
	log := quietLog()
	if testing.Verbose() {
		log = testLog(t)
	}
	mic, spk, err := openAudioDevices(ad, cfg.Playback.FadeMS, clk, reg, log)
	if err != nil {
		hwtest.SkipOrFail(t, err.Error())
	}
	t.Cleanup(func() { mic.Close(); spk.Close() })
	if !mic.Up() || !spk.Up() {
		hwtest.SkipOrFail(t, "the devices did not open")
	}
	// The probe places both streams on the agent clock as the canceller
	// does and reports the residual echo delay it has to find.
	t0 := clk.Mono()
	farEnv, micEnv := newEnvTimeline(t0, 60*time.Second), newEnvTimeline(t0, 60*time.Second)
	pspk := &probeSpk{realSpeaker: spk, clk: clk, env: farEnv}
	pmic := &probeMic{AudioSource: mic, lr: mic, clk: clk, env: micEnv}
	gw := gateway.Config{Token: "sim-token", Speed: 4, NoEcho: true}
	a, err := newAgent(cfg, agentOptions{mic: pmic, speaker: pspk, gwConfig: &gw}, clk, reg, log)
	if err != nil {
		t.Fatal(err)
	}
	if a.aecSrc == nil {
		t.Fatal("no echo canceller in a webrtcapm build")
	}
	ra := runAgent(t, a)
	stopSampler := sampleAlignment(t, a, clk)
	defer func() {
		stopSampler()
		t.Logf("echo path seen by the probe (residual delay beyond the device latencies, per window):%s",
			echoReport(farEnv, micEnv, clk.Mono()-t0, 2*time.Second))
		t.Logf("mic reads held because the reference lacked audio the speaker had been handed: %d", a.aecSrc.RefLate())
	}()
	waitUntil(t, 5*time.Second, "gateway session", func() bool { return ra.a.client.Up() })
	ra.a.gw.KeepPayloads(true)

	// A long reply (about 13 s of espeak-ng speech at 0 dB echo gain).
	one := speech(t, 24000)
	var reply []int16
	for range 3 {
		reply = append(reply, one...)
	}
	sess := ra.a.gw.Sessions()[0]
	start, replyAt := time.Now(), clk.Mono()
	go sess.StreamTTS(context.Background(), reply)
	// 7 s of the robot talking to itself through the room.
	time.Sleep(7 * time.Second)
	if _, i := ra.a.progress.counts(); i != 0 {
		when := "no utterance at the gateway"
		if u, err := interruptingUtterance(ra.a.gw.Events(), replyAt, 0); err == nil {
			when = fmt.Sprintf("its utterance reached the gateway %v into the reply", (u.started - replyAt).Round(time.Millisecond))
		}
		t.Fatalf("the robot interrupted itself %d times within %v of its reply (echo canceller on): %s; reads the linear guard took as the user %d, the disturbance guard held %d",
			i, time.Since(start), when, a.aecSrc.LinearGuarded(), a.aecSrc.Guarded())
	}
	// The user talks over the reply, into the mic's sink (straight to the
	// mic: the loopback's 80 ms is the robot's echo path, not the user's).
	user := filepath.Join(t.TempDir(), "user.wav")
	if out, err := exec.Command("espeak-ng", "-v", "en+f3", "-a", "200", "-w", user, "Stop! Stop, that is enough, thank you.").CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v: %s", err, out)
	}
	phrase := wavAt(t, user, protocol.MicRate)
	play := exec.Command("paplay", "--device="+sinkName, user)
	said, saidAt := time.Now(), clk.Mono()
	if err := play.Start(); err != nil {
		t.Fatalf("paplay: %v", err)
	}
	waitUntil(t, 4*time.Second, "the user's phrase interrupting the reply", func() bool {
		_, i := ra.a.progress.counts()
		return i >= 1
	})
	t.Logf("interrupted %v after paplay started the user's phrase", time.Since(said).Round(10*time.Millisecond))
	if err := play.Wait(); err != nil {
		t.Fatalf("paplay: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // the phrase's last frames to the gateway
	// The utterance that interrupted the reply must carry the user's
	// phrase to the gateway, and must have started after that phrase
	// reached the mic: one started before was the robot's own voice.
	u, err := interruptingUtterance(ra.a.gw.Events(), replyAt, len(phrase))
	if err != nil {
		t.Fatal(err)
	}
	off, ncc := align(u.pcm, phrase, protocol.MicRate)
	onset := u.ts + time.Duration(off+firstSound(phrase))*time.Second/protocol.MicRate
	t.Logf("the interrupting utterance (%d): the user's phrase in it at NCC %.2f, its first sound in the mic %v after paplay started; the utterance started %v after that sound",
		u.id, ncc, (onset - saidAt).Round(time.Millisecond), (u.started - onset).Round(time.Millisecond))
	if ncc < minPhraseNCC {
		t.Fatalf("the utterance that interrupted the reply does not carry the user's phrase (NCC %.2f < %.2f): the robot interrupted itself", ncc, minPhraseNCC)
	}
	// The frame timestamps are read times (later than the sound by the
	// capture latency, under 60 ms), so a start on the user's first 60 ms
	// (the VAD's minimum speech) comes out at or after 0 here, and one on
	// the robot's voice before the phrase, below.
	if u.started < onset {
		t.Fatalf("the utterance that interrupted the reply started %v before the user's phrase reached the mic: the robot interrupted itself", onset-u.started)
	}
}

// minPhraseNCC: the least normalized cross-correlation between the clean
// user phrase and the uplink utterance that counts as the phrase having
// reached the gateway (through the canceller, over the reply's echo until
// the interrupt).
const minPhraseNCC = 0.5

// uplinkUtterance is one utterance as the gateway received it.
type uplinkUtterance struct {
	id      uint32
	pcm     []int16       // 16 kHz mono
	ts      time.Duration // the robot's timestamp of its first sample
	started time.Duration // when its first frame reached the gateway (same clock in this process)
}

// interruptingUtterance returns, from the gateway's events (with payloads),
// the first utterance whose start frame arrived at or after from; its pcm
// runs on through the utterances after it (placed by their timestamps,
// silence between them: the VAD may split a phrase at a pause), with
// minLen samples of silence before and at least minLen after its start.
func interruptingUtterance(evs []gateway.Event, from time.Duration, minLen int) (uplinkUtterance, error) {
	var u uplinkUtterance
	found := false
	var at int // where the current utterance's next sample goes in u.pcm
	for _, e := range evs {
		h := e.Header
		if h == nil || h.Kind != protocol.KindMicAudio {
			continue
		}
		if h.Flag == protocol.FlagStart {
			ts := time.Duration(h.Timestamp) * time.Microsecond
			if !found {
				if e.At < from {
					continue
				}
				u = uplinkUtterance{id: h.Stream, ts: ts, started: e.At}
				found = true
			}
			at = max(len(u.pcm), int((ts-u.ts)*protocol.MicRate/time.Second))
		}
		if !found {
			continue
		}
		end := at + len(e.Payload)/2
		u.pcm = padTo(u.pcm, end)
		pcm.BytesToInt16(u.pcm[at:end], e.Payload)
		at = end
	}
	if !found {
		return u, errors.New("no utterance started at the gateway after the reply began")
	}
	// minLen of silence before it too: the utterance may have started
	// inside the phrase (held back by a guard).
	u.pcm = append(make([]int16, minLen), u.pcm...)
	u.ts -= time.Duration(minLen) * time.Second / protocol.MicRate
	u.pcm = padTo(u.pcm, 2*minLen)
	return u, nil
}

// padTo extends p with silence to at least n samples.
func padTo(p []int16, n int) []int16 {
	if n > len(p) {
		p = append(p, make([]int16, n-len(p))...)
	}
	return p
}

// firstSound is the sample index of the phrase's first speech frame as the
// bench labels it (duplex.Labels, 20 ms frames at 16 kHz).
func firstSound(p []int16) int {
	frame := protocol.MicRate / 50
	for i, speech := range duplex.Labels(p) {
		if speech {
			return i * frame
		}
	}
	return 0
}

//go:build portaudio && webrtcapm && cgo

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/gateway"
	"github.com/robot-agent/robot-agent/hw/hwtest"
	"github.com/robot-agent/robot-agent/metrics"
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
	}()
	waitUntil(t, 5*time.Second, "gateway session", func() bool { return ra.a.client.Up() })

	// A long reply (about 13 s of espeak-ng speech at 0 dB echo gain).
	one := speech(t, 24000)
	var reply []int16
	for range 3 {
		reply = append(reply, one...)
	}
	sess := ra.a.gw.Sessions()[0]
	start := time.Now()
	go sess.StreamTTS(context.Background(), reply)
	// 7 s of the robot talking to itself through the room.
	time.Sleep(7 * time.Second)
	if _, i := ra.a.progress.counts(); i != 0 {
		t.Fatalf("the robot interrupted itself %d times within %v of its reply (echo canceller on)", i, time.Since(start))
	}
	// The user talks over the reply, into the mic's sink.
	user := filepath.Join(t.TempDir(), "user.wav")
	if out, err := exec.Command("espeak-ng", "-v", "en+f3", "-a", "200", "-w", user, "Stop! Stop, that is enough, thank you.").CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v: %s", err, out)
	}
	play := exec.Command("paplay", "--device="+sinkName, user)
	said := time.Now()
	if err := play.Start(); err != nil {
		t.Fatalf("paplay: %v", err)
	}
	defer play.Wait()
	waitUntil(t, 4*time.Second, "the user's phrase interrupting the reply", func() bool {
		_, i := ra.a.progress.counts()
		return i >= 1
	})
	// paplay's start-up and the 80 ms path are in this figure: an
	// interrupt sooner than the path plus the VAD's minimum speech came
	// from the robot's own voice.
	if el := time.Since(said); el < 100*time.Millisecond {
		t.Fatalf("interrupted %v after paplay started the user's phrase: before the phrase could be heard (the robot interrupted itself)", el)
	}
	t.Logf("interrupted %v after paplay started the user's phrase", time.Since(said).Round(10*time.Millisecond))
}

package duplex

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/aec"
	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/codec/wav"
	"github.com/robot-agent/robot-agent/room"
)

func speech(t *testing.T) (far, near []int16) {
	t.Helper()
	f := Synthetic(4*time.Second, 1)
	n := Synthetic(1200*time.Millisecond, 2)
	return ToMono(wav.Audio{SampleRate: 16000, Channels: 1, Samples: f}, FarRate), n
}

// A short version of the bench's targets, on the simulator's speech: each
// built-in canceller must cancel, never let the robot's own voice start an
// utterance, and let the user's voice through. Fails without a canceller's
// effect (the none baseline is checked to be bad in the same run).
func TestChainCancelsEchoAndHearsTheUser(t *testing.T) {
	far, near := speech(t)
	rc := room.Config{DelayMS: 80, EchoGainDB: 0, RT60: 0.3, DRRDB: 6, DriftPPM: 100, Seed: 1}
	base := Scenario{Far: far, Near: near, Replies: 3, GapMS: 800, LeadMS: 1000, Room: rc,
		Capture: capture.Config{Mode: capture.ModeVAD}, Seed: 3}

	none := base
	none.AEC = aec.Options{Kind: aec.KindNone}
	r, err := Run(none)
	if err != nil {
		t.Fatal(err)
	}
	if r.FalseBargeIns == 0 || math.Abs(r.ERLE) > 0.5 {
		t.Fatalf("baseline without canceller: %d false barge-ins, ERLE %.1f dB: the scenario has no echo problem", r.FalseBargeIns, r.ERLE)
	}
	if !slices.Contains(aec.Available(), aec.KindWebRTC) {
		t.Skip("no WebRTC canceller in this build (tag webrtcapm)")
	}
	echo := base
	echo.AEC = aec.Options{Kind: aec.KindWebRTC}
	r, err = Run(echo)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("far only: ERLE %.1f dB (first 2 s %.1f), false barge-ins %d, delay %v", r.ERLE, r.ERLEFirst2s, r.FalseBargeIns, r.DelayEstimate)
	if r.ERLE < 25 || r.FalseBargeIns != 0 {
		t.Errorf("webrtc: ERLE %.1f dB (want >= 25), %d false barge-ins (want 0)", r.ERLE, r.FalseBargeIns)
	}
	// Faster convergence than with the previous 8 ms lead: the far end
	// reaches the canceller ahead of the echo's place in its filter and is
	// not moved after the first delay estimate.
	lead8 := echo
	lead8.Align.MarginMS = 8
	r8, err := Run(lead8)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ERLE over the first 2 s: %.1f dB (lead 8 ms: %.1f dB)", r.ERLEFirst2s, r8.ERLEFirst2s)
	// (On this synthetic speech 16 vs 13 dB; on espeak-ng speech 27 vs 9,
	// docs/benchmarks.md.)
	if r.ERLEFirst2s < r8.ERLEFirst2s+1 {
		t.Errorf("webrtc: ERLE over the first 2 s %.1f dB, with an 8 ms lead %.1f dB: want at least 1 dB better", r.ERLEFirst2s, r8.ERLEFirst2s)
	}
	if d := r.DelayEstimate - 80*time.Millisecond; d < -8*time.Millisecond || d > 8*time.Millisecond {
		t.Errorf("delay estimate %v, want 80±8 ms", r.DelayEstimate)
	}
	// Barge-in through the canceller: the user's voice must start
	// utterances during replies (docs/benchmarks.md has the full trials;
	// detection within 300 ms is not yet reliable in double-talk).
	bi := echo
	bi.BargeIn, bi.SERDB = true, 6
	bi.AEC.Suppression = "low"
	r, err = Run(bi)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("barge-in at SER +6 dB: %d/%d within 300 ms, onsets %v, near corr %.2f, false %d", r.BargeInsIn300ms, r.Phrases, r.Onsets, r.NearCorr, r.FalseBargeIns)
	if len(r.Onsets) < r.Phrases/2 || r.FalseBargeIns != 0 {
		t.Errorf("barge-in: %d/%d phrases started an utterance, %d false", len(r.Onsets), r.Phrases, r.FalseBargeIns)
	}
}

func TestScenarioErrors(t *testing.T) {
	if _, err := Run(Scenario{}); !errors.Is(err, ErrScenario) {
		t.Errorf("empty: %v", err)
	}
	if _, err := Run(Scenario{Far: make([]int16, 100), BargeIn: true}); !errors.Is(err, ErrScenario) {
		t.Errorf("barge-in without near: %v", err)
	}
	if _, err := Run(Scenario{Far: make([]int16, 100), Answer: true}); !errors.Is(err, ErrScenario) {
		t.Errorf("answer without near: %v", err)
	}
	if _, err := Run(Scenario{Far: make([]int16, 100), Near: make([]int16, 100), Answer: true, BargeIn: true}); !errors.Is(err, ErrScenario) {
		t.Errorf("answer and barge-in: %v", err)
	}
	if _, err := Run(Scenario{Far: make([]int16, 24000), AEC: aec.Options{Kind: "x"}}); !errors.Is(err, aec.ErrConfig) {
		t.Errorf("bad aec: %v", err)
	}
}

func TestLabelsAndTrim(t *testing.T) {
	s := make([]int16, 16000)
	for i := 4000; i < 8000; i++ {
		s[i] = int16(3000 * math.Sin(float64(i)))
	}
	l := Labels(s)
	if l[10] || !l[15] || l[45] {
		t.Errorf("labels: %v %v %v", l[10], l[15], l[45])
	}
	if tr := Trim(s, 16000); len(tr) != 4000 {
		t.Errorf("trim kept %d samples, want 4000", len(tr))
	}
}

func TestMeasureEchoFindsRoomDelayAndGain(t *testing.T) {
	p, _ := room.New(room.Config{DelayMS: 37, EchoGainDB: -8})
	n, _ := room.NewNoise(room.NoisePink, 16000, 4)
	buf := make([]float32, 16000)
	n.Fill(buf)
	played := make([]int16, 16000)
	for i := range played {
		played[i] = int16(buf[i] * 4000)
	}
	p.Play(0, played, 16000)
	rec := make([]int16, 24000)
	p.Capture(0, rec)
	e, err := MeasureEcho(played, rec, 16000, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if d := e.Delay - 37*time.Millisecond; d < -time.Millisecond/8 || d > time.Millisecond/8 || math.Abs(e.GainDB+8) > 0.5 || e.Corr < 0.95 {
		t.Errorf("measured %v, want delay 37 ms, gain -8 dB", e)
	}
	if _, err := MeasureEcho(make([]int16, 16000), rec, 16000, time.Second); err == nil {
		t.Error("silent played signal accepted")
	}
}

// The interrupted-noise method on simulated rooms: 3 s of pink noise and
// 1 s of silence played into rooms of known RT60 (quiet, and with a noise
// floor 45 or 35 dB under the echo); MeasureEcho reports the decay within
// 20 %, and no figure when the floor is 22 dB under the echo.
func TestMeasureDecayFindsRoomRT60(t *testing.T) {
	n, _ := room.NewNoise(room.NoisePink, 16000, 4)
	buf := make([]float32, 3*16000)
	n.Fill(buf)
	played := make([]int16, 4*16000)
	for i := range buf {
		played[i] = int16(buf[i] * 4000)
	}
	for _, c := range []struct {
		rt60    float64
		noise   string
		noiseDB float64
	}{{0.2, room.NoiseNone, 0}, {0.3, room.NoiseNone, 0}, {0.5, room.NoiseNone, 0}, {0.8, room.NoiseNone, 0}, {1.2, room.NoiseNone, 0},
		{0.5, room.NoiseWhite, -75}, {0.8, room.NoisePink, -75}, {0.5, room.NoisePink, -65}, {0.5, room.NoisePink, -50}} {
		p, err := room.New(room.Config{DelayMS: 37, EchoGainDB: -8, RT60: c.rt60, Noise: c.noise, NoiseDBFS: c.noiseDB, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		p.Play(0, played, 16000)
		rec := make([]int16, len(played)+16000/2)
		p.Capture(0, rec)
		e, err := MeasureEcho(played, rec, 16000, 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if c.noiseDB == -50 {
			// The floor 22 dB under the steady level: too little decay.
			if e.RT60 != 0 {
				t.Errorf("RT60 measured above a noise floor 22 dB down: %v", e)
			}
			continue
		}
		if got := e.RT60.Seconds(); math.Abs(got-c.rt60) > 0.2*c.rt60 {
			t.Errorf("RT60 %.1f s, noise %v: measured %v", c.rt60, c.noise, e)
		}
	}
	// No silence after the signal: nothing to measure, and MeasureEcho
	// still reports the path.
	p, _ := room.New(room.Config{DelayMS: 37, EchoGainDB: -8, RT60: 0.5})
	p.Play(0, played[:3*16000], 16000)
	rec := make([]int16, 4*16000)
	p.Capture(0, rec)
	if e, err := MeasureEcho(played[:3*16000], rec, 16000, 300*time.Millisecond); err != nil || e.RT60 != 0 || e.Corr < 0.5 {
		t.Errorf("without a silence after the signal: %v, %v", e, err)
	}
	if _, err := MeasureDecay(played[:3*16000], rec, 16000, 592); !errors.Is(err, ErrNoDecay) {
		t.Errorf("MeasureDecay without a silence: %v, want ErrNoDecay", err)
	}
}

// With the far end written at the speaker's pace (SpeakerClock) and the mic
// 200 ppm slower, drift compensation finds the offset and the canceller
// removes more echo than without it in the same run (speex: the MDF filter
// cannot follow a sliding path on its own). The bench keeps its time
// bookkeeping: no false barge-ins.
func TestSpeakerClockDriftCompensation(t *testing.T) {
	if !slices.Contains(aec.Available(), aec.KindSpeex) {
		t.Skip("no speex canceller in this build (tag speexdsp)")
	}
	if testing.Short() {
		t.Skip("simulated replies")
	}
	far, near := speech(t)
	rc := room.Config{DelayMS: 60, EchoGainDB: 0, RT60: 0.2, DRRDB: 6, DriftPPM: -200, Seed: 1}
	sc := Scenario{Far: far, Near: near, Replies: 4, GapMS: 500, LeadMS: 1000, Room: rc, SpeakerClock: true,
		AEC: aec.Options{Kind: aec.KindSpeex}, Capture: capture.Config{Mode: capture.ModeVAD}, Seed: 3}
	off, err := Run(sc)
	if err != nil {
		t.Fatal(err)
	}
	sc.Align.DriftCompensation = true
	on, err := Run(sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ERLE after 2 s: %.1f dB without, %.1f dB with drift compensation (%.1f ppm)", off.ERLE, on.ERLE, on.DriftPPM)
	if math.Abs(on.DriftPPM+200) > 3 {
		t.Errorf("compensating %.1f ppm, want -200", on.DriftPPM)
	}
	if on.ERLE < off.ERLE+6 {
		t.Errorf("ERLE %.1f dB with compensation, %.1f dB without: want at least 6 dB more", on.ERLE, off.ERLE)
	}
}

// A barge-in phrase longer than the rest of its reply must not run into the
// next reply: the gap after each reply grows to hold it.
func TestBargeInGapHoldsALongPhrase(t *testing.T) {
	const reply, gap = 10 * NearRate, NearRate
	for _, tc := range []struct {
		name          string
		near, wantGap int
	}{
		{"short phrase: gap unchanged", 2 * NearRate, gap},
		{"phrase ending at the next reply: unchanged", 5 * NearRate, gap},
		{"longer: ends a second before the next reply", 8 * NearRate, 4*NearRate + bargeInSettle},
		{"rounded up to whole frames", 5*NearRate + 1, NearRate + micFrame + bargeInSettle},
	} {
		got := bargeInGap(reply, gap, tc.near)
		if got != tc.wantGap {
			t.Errorf("%s: gap %d, want %d", tc.name, got, tc.wantGap)
		}
		if end := reply*6/10 + tc.near; end > reply+got {
			t.Errorf("%s: the latest phrase ends at %d, after the next reply's start %d", tc.name, end, reply+got)
		}
	}
}

func TestBargeInGapMS(t *testing.T) {
	if g := BargeInGapMS(10*FarRate, 2*NearRate, 1000); g != 1000 {
		t.Errorf("short phrase: %d ms, want 1000", g)
	}
	if g := BargeInGapMS(10*FarRate, 8*NearRate, 1000); g != 5000 {
		t.Errorf("8 s phrase in 10 s replies: %d ms, want 5000 (ends 1 s before the next reply)", g)
	}
}

// Lengths convert in 64 bits: on armv7 (32-bit int) an 8.7 s reply times
// NearRate overflowed.
func TestAtNearRateLongReply(t *testing.T) {
	if got := atNearRate(600 * FarRate); got != 600*NearRate {
		t.Errorf("10 minutes of far end: %d samples at 16 kHz, want %d", got, 600*NearRate)
	}
}

// quietReverberantRoom is the reverberation guard's scene: a voice reply in
// a quiet room with an RT60 of 0.8 s and more reverberation than direct
// sound, without the guard.
func quietReverberantRoom(t *testing.T) Scenario {
	t.Helper()
	if !slices.Contains(aec.Available(), aec.KindWebRTC) {
		t.Skip("no WebRTC canceller in this build (tag webrtcapm)")
	}
	// A voice: the simulator's speech has no such pauses and soft onsets.
	fa, err := Espeak("Sure. The weather today is sunny with a light breeze from the west, and the temperature will reach twenty two degrees in the afternoon. Tomorrow it will be cloudy.", "en")
	if err != nil {
		t.Skip(err)
	}
	na, err := Espeak("Stop, wait a moment please.", "en+f3")
	if err != nil {
		t.Skip(err)
	}
	far, near := ToMono(fa, FarRate), ToMono(na, NearRate)
	rc := room.Config{DelayMS: 60, EchoGainDB: 0, RT60: 0.8, DRRDB: -1, DriftPPM: 100, Seed: 1}
	return Scenario{Far: far, Near: near, Replies: 6, GapMS: 800, LeadMS: 1000, Room: rc,
		AEC:     aec.Options{Kind: aec.KindWebRTC, Uplink: aec.BestUplink(aec.KindWebRTC)},
		Align:   aec.SourceConfig{GuardMarginDB: aec.DefaultGuardMarginDB, DriftCompensation: true, LinearGuardDB: aec.DefaultLinearGuardDB},
		Capture: capture.Config{Mode: capture.ModeVAD}, Seed: 3}
}

// In a quiet room whose late reverberation outlasts the filters (RT60
// 0.8 s, more reverberation than direct sound), WebRTC's moderate
// suppressor lets some of the robot's reverberant voice through and the
// robot interrupts itself; the reverberation guard (aec.SourceConfig
// .ReverbGuardMS) holds what the room's learnt late reverberation explains.
// The same run without the guard must show the problem (else the scene
// proves nothing), and the guard must not hide a user who talks over the
// robot in that room.
func TestReverbGuardQuietReverberantRoom(t *testing.T) {
	if raceEnabled {
		t.Skip("under -race; scripts/test.sh runs it without")
	}
	base := quietReverberantRoom(t)
	guarded := base
	guarded.Align.ReverbGuardMS = guarded.AEC.FilterMS()
	off, err := Run(base)
	if err != nil {
		t.Fatal(err)
	}
	on, err := Run(guarded)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("false barge-ins in %d replies: %d without the guard, %d with it (%d reads held, RT60 learnt %.2f s)", base.Replies, off.FalseBargeIns, on.FalseBargeIns, on.ReverbHeld, on.RoomRT60)
	if off.FalseBargeIns < 3 {
		t.Fatalf("without the guard only %d false barge-ins: the scene does not show the problem", off.FalseBargeIns)
	}
	if on.FalseBargeIns*3 > off.FalseBargeIns || on.ReverbHeld == 0 {
		t.Errorf("with the guard %d false barge-ins (%d without), %d reads held: want at most a third", on.FalseBargeIns, off.FalseBargeIns, on.ReverbHeld)
	}
	if on.RoomRT60 < 0.6 || on.RoomRT60 > 1.0 {
		t.Errorf("RT60 learnt %.2f s, the room's 0.8 s", on.RoomRT60)
	}
	bi := guarded
	bi.BargeIn, bi.SERDB = true, -10
	rb, err := Run(bi)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("barge-in at SER -10 dB with the guard: %d/%d started, %d within 300 ms", len(rb.Onsets), rb.Phrases, rb.BargeInsIn300ms)
	if len(rb.Onsets) < rb.Phrases*3/4 {
		t.Errorf("barge-in with the guard: %d/%d phrases started an utterance", len(rb.Onsets), rb.Phrases)
	}
}

// At the end of a reply the room's reverberation of its last words is still
// 40 dB and more over a quiet room's floor, and the robot took its own
// fading voice for the user: after the far end's 400 ms hang (room seed 6:
// 3 false barge-ins in 6 replies before the guard held the tail) and late
// in the hang, where the linear filter's output was just over the 4 dB the
// guard allowed it (room seed 7: 5). Both must be gone; with the guard the
// robot still hears a user who talks over it in that room
// (TestReverbGuardQuietReverberantRoom).
func TestReverbGuardHoldsTheTailAfterAReply(t *testing.T) {
	if raceEnabled {
		t.Skip("under -race; scripts/test.sh runs it without")
	}
	s := quietReverberantRoom(t)
	s.Replies, s.GapMS = 6, 1500
	s.Align.ReverbGuardMS = s.AEC.FilterMS()
	for _, seed := range []uint64{6, 7} {
		s.Room.Seed = seed
		r, err := Run(s)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("room seed %d: %d false barge-ins in %d replies, %d of them after a reply", seed, r.FalseBargeIns, s.Replies, r.FalseAfterReply)
		if r.FalseBargeIns != 0 {
			t.Errorf("room seed %d: %d false barge-ins in %d replies (%d after a reply), want 0", seed, r.FalseBargeIns, s.Replies, r.FalseAfterReply)
		}
	}
}

// quietDefaultRoom is the bench's default room without noise, replies of
// the simulator's speech, WebRTC's canceller as the agent configures it.
func quietDefaultRoom(t *testing.T, replies int) Scenario {
	t.Helper()
	if !slices.Contains(aec.Available(), aec.KindWebRTC) {
		t.Skip("no WebRTC canceller in this build (tag webrtcapm)")
	}
	far, _ := speech(t)
	return Scenario{Far: far, Replies: replies, GapMS: 1000, LeadMS: 1000,
		Room:    room.Config{DelayMS: 60, EchoGainDB: 0, RT60: 0.3, DRRDB: 6, DriftPPM: 100, Seed: 1},
		AEC:     aec.Options{Kind: aec.KindWebRTC, Uplink: aec.BestUplink(aec.KindWebRTC)},
		Align:   aec.SourceConfig{GuardMarginDB: aec.DefaultGuardMarginDB, DriftCompensation: true, LinearGuardDB: aec.DefaultLinearGuardDB},
		Capture: capture.Config{Mode: capture.ModeVAD},
		Seed:    1}
}

// A speaker that drops out (a USB speaker gone and reopened) plays nothing
// of what the robot writes meanwhile. Reported (hw/portaudio's Sink.Up, the
// bench's speaker likewise), the reference holds silence there and the
// robot does not interrupt itself when its voice comes back. The same
// dropouts unreported (an amplifier that loses power) give the cancellers
// the far end without its echo: they must show the problem, else the scene
// proves nothing; with the silent-speaker detector (SilentSpeaker) the
// mic tells, and the robot does not interrupt itself either.
func TestSpeakerDropoutsDoNotMakeTheRobotInterruptItself(t *testing.T) {
	s := quietDefaultRoom(t, 8)
	s.SpeakerDropoutMS, s.SpeakerDropoutEveryS = 2000, 7
	for _, tc := range []struct{ unreported, detector bool }{{false, false}, {true, false}, {true, true}} {
		s.SpeakerDropoutUnreported, s.Align.SilentSpeaker = tc.unreported, tc.detector
		r, err := Run(s)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("unreported %v, detector %v: %d speaker dropouts, %d false barge-ins in %d replies (%d within 5 s after a dropout); taken for silent %d times",
			tc.unreported, tc.detector, r.SpeakerDropouts, r.FalseBargeIns, s.Replies, r.FalseAfterSpeakerDropout, r.SilentSpeakers)
		if r.SpeakerDropouts < 5 {
			t.Fatalf("%d speaker dropouts, want at least 5 (one every 7 s)", r.SpeakerDropouts)
		}
		switch {
		case !tc.unreported && r.FalseBargeIns != 0:
			t.Errorf("reported dropouts: %d false barge-ins in %d replies, want 0", r.FalseBargeIns, s.Replies)
		case tc.unreported && !tc.detector && r.FalseAfterSpeakerDropout == 0:
			t.Errorf("unreported dropouts: no false barge-in after one: the scene does not show what the report prevents")
		case tc.detector && (r.FalseBargeIns != 0 || r.SilentSpeakers < int64(r.SpeakerDropouts)):
			t.Errorf("unreported dropouts, silent-speaker detector: %d false barge-ins in %d replies (want 0), taken for silent %d times in %d dropouts", r.FalseBargeIns, s.Replies, r.SilentSpeakers, r.SpeakerDropouts)
		}
	}
}

// The robot's own volume turned 12 dB down and back up (VolumeDownDB: the
// agent's volume control, above the reference tap) is no new echo path for
// the canceller: no false barge-in; the same steps below the tap (the
// speaker playing quieter, SpeakerDropoutAttenDB) make the robot interrupt
// itself in this quiet room.
func TestVolumeStepsAboveTheTapDoNotMakeTheRobotInterruptItself(t *testing.T) {
	s := quietDefaultRoom(t, 12)
	s.SpeakerDropoutMS, s.SpeakerDropoutEveryS, s.Align.SilentSpeaker = 4000, 10, true
	for _, above := range []bool{false, true} {
		s.VolumeDownDB, s.SpeakerDropoutAttenDB = 0, 12
		if above {
			s.VolumeDownDB, s.SpeakerDropoutAttenDB = 12, 0
		}
		r, err := Run(s)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("volume 12 dB down for 4 s every 10 s, above the tap %v: %d steps, %d false barge-ins in %d replies (%d within 5 s after a step)",
			above, r.SpeakerDropouts, r.FalseBargeIns, s.Replies, r.FalseAfterSpeakerDropout)
		switch {
		case r.SpeakerDropouts < 5:
			t.Fatalf("%d volume steps, want at least 5", r.SpeakerDropouts)
		case above && r.FalseBargeIns != 0:
			t.Errorf("above the tap: %d false barge-ins in %d replies, want 0", r.FalseBargeIns, s.Replies)
		case !above && r.FalseAfterSpeakerDropout == 0:
			t.Errorf("below the tap: no false barge-in after a step: the scene does not show what the volume control's place prevents")
		}
	}
	s.VolumeDownDB, s.SpeakerDropoutAttenDB = 12, 6
	if _, err := Run(s); !errors.Is(err, ErrScenario) {
		t.Errorf("volume down with an attenuated speaker as well: %v, want ErrScenario", err)
	}
}

// A mic that reports its dropouts (MicDropoutReported, as hw/portaudio's
// Source does) has them taken for outages even in a room as quiet as
// digital silence, where digital silence alone is the room: the canceller
// counts every read of them, and none without the report.
func TestReportedMicDropoutsReachTheCanceller(t *testing.T) {
	s := quietDefaultRoom(t, 3)
	s.MicDropoutMS, s.MicDropoutEveryS = 500, 5
	for _, reported := range []bool{false, true} {
		s.MicDropoutReported = reported
		r, err := Run(s)
		if err != nil {
			t.Fatal(err)
		}
		// A read is 20 ms; a dropout's first and last reads are partly
		// silent and count whole.
		lo, hi := int64(r.Dropouts*25), int64(r.Dropouts*26)
		t.Logf("reported %v: %d dropouts of 500 ms, %d reads taken for an outage", reported, r.Dropouts, r.MicLostReads)
		if r.Dropouts < 2 {
			t.Fatalf("%d dropouts, want at least 2", r.Dropouts)
		}
		if reported && (r.MicLostReads < lo || r.MicLostReads > hi) {
			t.Errorf("reported: %d reads taken for an outage, want %d..%d", r.MicLostReads, lo, hi)
		}
		if !reported && r.MicLostReads != 0 {
			t.Errorf("unreported, in a room without noise: %d reads taken for an outage, want 0 (digital silence is the room here)", r.MicLostReads)
		}
	}
}

// The room kept across a restart (aec.Source.Room, the agent's
// duplex.room_file), and a typical room assumed at the very first start
// (reverb.Typical): in a quiet reverberant room the reverberation guard
// needs the first reply's long pauses to learn the room, and with no room
// to start from (aec.SourceConfig.ReverbUnassumed) the tail of the robot's
// voice starts utterances of its own until then (one in the first two
// replies of most starts). Started from the model a previous run learnt in
// the same room, or from the typical room (it learns this room's level
// from the first pause on), it holds them from the first word.
func TestRestoredRoomKeepsTheFirstRepliesFromInterruptingTheRobot(t *testing.T) {
	if raceEnabled {
		// 26 replies of an espeak-ng voice: about 15 s, but over 10
		// minutes under -race (make test runs it in its pass without).
		t.Skip("under -race; scripts/test.sh runs it without")
	}
	s := quietReverberantRoom(t)
	s.Align.ReverbGuardMS = s.AEC.FilterMS()
	seeds := []uint64{1, 3} // of 1-8, two whose unassumed start interrupts itself (1 each; 2, 4-7: 0 either way; 8: 1 cold, 0 kept)
	var cold, typical, warm int
	for _, seed := range seeds {
		s.Room.Seed = seed
		s.Replies, s.RoomModel, s.Align.ReverbUnassumed = 6, nil, false
		learnt, err := Run(s)
		if err != nil {
			t.Fatal(err)
		}
		if learnt.RoomModel == nil {
			t.Fatalf("room seed %d: nothing learnt in %d replies", seed, s.Replies)
		}
		s.Replies, s.Align.ReverbUnassumed = 2, true
		c, err := Run(s)
		if err != nil {
			t.Fatal(err)
		}
		s.Align.ReverbUnassumed = false
		ty, err := Run(s)
		if err != nil {
			t.Fatal(err)
		}
		s.RoomModel = learnt.RoomModel
		w, err := Run(s)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("room seed %d (learnt RT60 %.2f s): false barge-ins in the first 2 replies: %d with no room assumed, %d from the typical room, %d from the kept room", seed, learnt.RoomModel.RT60, c.FalseBargeIns, ty.FalseBargeIns, w.FalseBargeIns)
		cold += c.FalseBargeIns
		typical += ty.FalseBargeIns
		warm += w.FalseBargeIns
	}
	if cold < 2 {
		t.Fatalf("%d false barge-ins with no room assumed: the scene does not show the problem", cold)
	}
	if typical != 0 {
		t.Errorf("%d false barge-ins from the typical room (none assumed: %d), want 0", typical, cold)
	}
	if warm != 0 {
		t.Errorf("%d false barge-ins from the kept room (none assumed: %d), want 0", warm, cold)
	}
}

// A user who answers the robot 200-800 ms after its reply, in a quiet
// reverberant room (RT60 1.0 s) where the reply's tail is still 20-40 dB
// over the noise: the reverberation guard holds the tail but not the
// answer, which starts an utterance within 300 ms of its onset. Before
// the guard followed the room's free decay (reverb.Tail.FreeDecay) the
// first 2 replies of room seeds 1-4 had 5 false barge-ins, the tail's
// utterance swallowing the answer (3 of 8 heard); now none, and 8 of 8.
func TestAnswerInTheReplysTailIsHeard(t *testing.T) {
	if raceEnabled {
		// About 25 s of espeak-ng speech through the whole chain: several
		// minutes under -race (make test runs it in its pass without).
		t.Skip("under -race; scripts/test.sh runs it without")
	}
	base := quietReverberantRoom(t)
	base.Align.ReverbGuardMS = base.AEC.FilterMS()
	base.Replies, base.Answer = 2, true
	var heard, answers, falses int
	for seed := uint64(1); seed <= 4; seed++ {
		s := base
		s.Room.RT60, s.Room.Seed, s.Seed = 1.0, seed, seed
		r, err := Run(s)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("room seed %d: %d answers, %d within 300 ms, onsets %v, %d false, guard held %d reads", seed, r.Phrases, r.BargeInsIn300ms, r.Onsets, r.FalseBargeIns, r.ReverbHeld)
		if r.Phrases != 2 || r.ReverbHeld == 0 {
			t.Errorf("room seed %d: %d answers placed, %d reads held by the reverberation guard: want 2, and the guard at work", seed, r.Phrases, r.ReverbHeld)
		}
		heard += r.BargeInsIn300ms
		answers += r.Phrases
		falses += r.FalseBargeIns
	}
	if heard < answers-1 || falses > 1 {
		t.Errorf("%d of %d answers within 300 ms, %d false barge-ins: want all but one at most, one false at most", heard, answers, falses)
	}
}

// In a large reverberant hall (RT60 1.5 s, more reverberation than direct
// sound) WebRTC's AEC2 lets the echo through at the onsets of words after
// short gaps, and what it leaves there is the reverberation beyond its own
// 128 ms filter, not only the part beyond the linear filter's 256 ms: the
// reverberation guard judges the decision signal against the former
// (aec's filterSpanner, reverb.Tail.Beyond) within 4 dB. Judged against
// the latter without the margin, as before, the robot interrupted itself
// in each of these 4 starts' first 3 replies (checked). Counted per start:
// a robot that interrupts itself stops talking, so what matters is
// whether it does at all (the bench plays on, and each false start
// counts).
func TestReverbGuardJudgesTheMainCancellersOwnFilter(t *testing.T) {
	if raceEnabled {
		t.Skip("under -race; scripts/test.sh runs it without")
	}
	base := quietReverberantRoom(t)
	base.Align.ReverbGuardMS = base.AEC.FilterMS()
	base.Replies = 3
	starts := 0
	for seed := uint64(1); seed <= 4; seed++ {
		s := base
		s.Room.RT60, s.Room.DRRDB, s.Room.Seed, s.Seed = 1.5, -3, seed, seed
		r, err := Run(s)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("room seed %d: %d false barge-ins, guard held %d reads", seed, r.FalseBargeIns, r.ReverbHeld)
		if r.FalseBargeIns > 0 {
			starts++
		}
	}
	if starts > 1 {
		t.Errorf("the robot interrupted itself in %d of 4 starts of 3 replies in a 1.5 s hall: want 1 at most", starts)
	}
}

// In the same hall a user who talks over the robot is heard every time:
// the first barge-in's utterance ends the hangover after the user stops
// while the robot's voice goes on (capture's uttSpeech: a frame the echo
// guard calls echo is no evidence of the user), so the next one starts
// its own. Before, that first utterance ran on over the robot's voice (the
// canceller leaves it loud there) and every later user went unheard: 1 of
// these 6 barge-ins within 300 ms (checked).
func TestBargeInsInAReverberantHallEachStartAnUtterance(t *testing.T) {
	if raceEnabled {
		t.Skip("under -race; scripts/test.sh runs it without")
	}
	s := quietReverberantRoom(t)
	s.Align.ReverbGuardMS = s.AEC.FilterMS()
	s.Room.RT60, s.Room.DRRDB = 1.5, -3
	s.BargeIn, s.SERDB = true, 0
	r, err := Run(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d phrases, %d within 300 ms, onsets %v, %d false", r.Phrases, r.BargeInsIn300ms, r.Onsets, r.FalseBargeIns)
	if r.Phrases != s.Replies || r.BargeInsIn300ms < r.Phrases-1 || r.FalseBargeIns > 0 {
		t.Errorf("%d of %d barge-ins within 300 ms, %d false: want all but one at most, none false", r.BargeInsIn300ms, r.Phrases, r.FalseBargeIns)
	}
}

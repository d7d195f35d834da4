package playback

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/metrics"
)

const fadeLen = DefaultFadeMS * samplesPerMS // 96 samples

// le encodes samples as PCM16LE.
func le(samples []int16) []byte {
	b := make([]byte, 2*len(samples))
	for i, v := range samples {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	}
	return b
}

func constant(n int, v int16) []int16 {
	s := make([]int16, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func counting(n int, from int16) []int16 {
	s := make([]int16, n)
	for i := range s {
		s[i] = from + int16(i)
	}
	return s
}

func newTestPlayer(t testing.TB, cfg Config) (*Player, *clock.Fake, *metrics.Registry) {
	t.Helper()
	clk := clock.NewFake()
	reg := metrics.NewRegistry()
	p, err := New(cfg, clk, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p, clk, reg
}

// disableFades makes transitions hard cuts so that concurrent tests can
// compare sample values exactly (fades are tested deterministically).
func disableFades(p *Player) { p.fadeLen, p.gain = 1, 1 }

func fill(p *Player, n int) []int16 {
	out := make([]int16, n)
	p.Fill(out)
	return out
}

func mustPush(t *testing.T, p *Player, id uint32, samples []int16) {
	t.Helper()
	if err := p.PushPCM(id, le(samples)); err != nil {
		t.Fatalf("PushPCM(%d, %d samples): %v", id, len(samples), err)
	}
}

func drain(p *Player) []Event {
	var ev []Event
	p.DrainEvents(func(e Event) { ev = append(ev, e) })
	return ev
}

func allZero(s []int16) bool {
	for _, v := range s {
		if v != 0 {
			return false
		}
	}
	return true
}

func maxDelta(s []int16) int {
	m := 0
	for i := 1; i < len(s); i++ {
		m = max(m, int(math.Abs(float64(int(s[i])-int(s[i-1])))))
	}
	return m
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // "" = valid
	}{
		{"zero takes defaults", Config{}, ""},
		{"explicit", Config{SlotSamples: 240, Slots: 64, PrebufferMS: 1, FadeMS: 2, PeriodFrames: 480}, ""},
		{"slot negative", Config{SlotSamples: -1}, "SlotSamples=-1 out of range"},
		{"slot too big", Config{SlotSamples: 24001}, "SlotSamples=24001 out of range"},
		{"slots not pow2", Config{Slots: 300}, "Slots=300 must be a power of two"},
		{"slots one", Config{Slots: 1}, "Slots=1 must be a power of two"},
		{"slots negative", Config{Slots: -8}, "Slots=-8"},
		{"slots too many", Config{Slots: 1 << 17}, "Slots=131072"},
		{"prebuffer negative", Config{PrebufferMS: -5}, "PrebufferMS=-5 is negative"},
		{"prebuffer over half ring", Config{Slots: 4, SlotSamples: 480}, "PrebufferMS=60 needs 1440 samples, more than half the ring (Slots*SlotSamples = 1920)"},
		{"fade negative", Config{FadeMS: -1}, "FadeMS=-1 out of range"},
		{"fade too long", Config{FadeMS: 51}, "FadeMS=51 out of range"},
		{"period negative", Config{PeriodFrames: -240}, "PeriodFrames=-240 out of range"},
		{"expand too fast", Config{ExpandPct: 60}, "ExpandPct=60 out of range"},
		{"budget negative", Config{ConcealBudget: -0.01}, "ConcealBudget=-0.01 out of range"},
		{"budget too big", Config{ConcealBudget: 0.5}, "ConcealBudget=0.5 out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			_, nerr := New(tt.cfg, clock.NewFake(), nil, nil)
			if tt.want == "" {
				if err != nil || nerr != nil {
					t.Fatalf("Validate = %v, New = %v; want nil", err, nerr)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) || !errors.Is(nerr, ErrInvalidConfig) {
				t.Fatalf("Validate = %v, New = %v; want ErrInvalidConfig", err, nerr)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "playback: invalid config: ") || !strings.Contains(msg, tt.want) {
				t.Fatalf("error %q does not name %q", msg, tt.want)
			}
		})
	}
	p, _, _ := newTestPlayer(t, Config{})
	want := Config{SlotSamples: 480, Slots: 16384, PrebufferMS: 60, FadeMS: 4, PeriodFrames: 240,
		ChunkSlots: 64, PreallocMS: 10000, MinDelayMS: 20, MaxDelayMS: 2000, StretchPct: 5, CatchUpPct: 40,
		ExpandPct: 25, ConcealBudget: 0.009}
	if p.Config() != want {
		t.Errorf("defaults = %+v, want %+v", p.Config(), want)
	}
	if _, err := New(Config{}, nil, nil, nil); err == nil || !strings.HasPrefix(err.Error(), "playback: ") {
		t.Errorf("New(nil clock) = %v", err)
	}
}

func TestPushPCMBadChunk(t *testing.T) {
	p, _, reg := newTestPlayer(t, Config{})
	for _, tc := range []struct {
		id   uint32
		pcm  []byte
		want string
	}{
		{0, []byte{1, 0}, "response id 0"},
		{7, []byte{1, 0, 2}, "response 7: odd PCM16 byte length 3"},
	} {
		err := p.PushPCM(tc.id, tc.pcm)
		if !errors.Is(err, ErrBadChunk) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("PushPCM(%d, %d bytes) = %v, want ErrBadChunk naming %q", tc.id, len(tc.pcm), err, tc.want)
		}
	}
	if got := reg.Value("robot_agent_playback_bad_chunks_total"); got != 2 {
		t.Errorf("bad chunks = %d, want 2", got)
	}
	if p.Depth() != 0 {
		t.Errorf("Depth = %d after rejected chunks", p.Depth())
	}
	if err := p.PushPCM(7, nil); err != nil {
		t.Errorf("empty chunk: %v", err)
	}
}

// TestPlayExactlyThenDone: a whole response plays sample-exact, progress
// advances, the end is faded (hold ramp), and Done reports every sample.
func TestPlayExactlyThenDone(t *testing.T) {
	p, _, reg := newTestPlayer(t, Config{})
	in := counting(2400, 1) // 100 ms, last sample 2400
	pcm := le(in)
	for off := 0; off < len(pcm); off += 1000 { // chunks not aligned to slots
		if err := p.PushPCM(1, pcm[off:min(off+1000, len(pcm))]); err != nil {
			t.Fatal(err)
		}
	}
	p.EndResponse(1)
	if p.Depth() != 2400 {
		t.Fatalf("Depth = %d, want 2400", p.Depth())
	}
	var out []int16
	for range 10 {
		out = append(out, fill(p, 240)...)
		if pr := p.Progress(); pr.ResponseID != 1 || pr.SamplesPlayed != int64(len(out)) {
			t.Fatalf("Progress = %+v after %d samples", pr, len(out))
		}
	}
	if !slices.Equal(out, in) {
		t.Fatal("output differs from input")
	}
	tail := fill(p, 240)
	// Hold-ramp fade from the last sample: gains 95/96 .. 1/96, then zeros.
	for k := 0; k < fadeLen-1; k++ {
		want := int16(2400 * int32(fadeLen-1-k) / fadeLen)
		if tail[k] != want {
			t.Fatalf("end fade sample %d = %d, want %d", k, tail[k], want)
		}
	}
	if !allZero(tail[fadeLen-1:]) {
		t.Fatal("no silence after the end fade")
	}
	ev := drain(p)
	if len(ev) != 1 || ev[0] != (Event{Kind: EventDone, ResponseID: 1, SamplesPlayed: 2400}) {
		t.Fatalf("events = %+v", ev)
	}
	if pr := p.Progress(); pr != (Progress{}) {
		t.Errorf("Progress after done = %+v", pr)
	}
	if reg.Value("robot_agent_playback_underruns_total") != 0 || reg.Value("robot_agent_playback_played_samples_total") != 2400 ||
		reg.Value("robot_agent_playback_depth_samples") != 0 || reg.Value("robot_agent_playback_concealed_samples_total") != 0 {
		t.Errorf("metrics: %v", reg.Snapshot())
	}
}

func TestPrebuffer(t *testing.T) {
	t.Run("waits for PrebufferMS", func(t *testing.T) {
		p, _, _ := newTestPlayer(t, Config{Policy: PolicyStall})
		mustPush(t, p, 1, constant(960, 1000)) // 40 ms < 60 ms
		if out := fill(p, 240); !allZero(out) {
			t.Fatal("played before the prebuffer filled")
		}
		if pr := p.Progress(); pr != (Progress{ResponseID: 1}) {
			t.Fatalf("Progress while prebuffering = %+v", pr)
		}
		mustPush(t, p, 1, constant(480, 1000)) // now 60 ms
		if out := fill(p, 240); !slices.Equal(out, constant(240, 1000)) {
			t.Fatalf("not playing verbatim after prebuffer: %v", out[:8])
		}
	})
	t.Run("ended response skips the wait", func(t *testing.T) {
		p, _, reg := newTestPlayer(t, Config{})
		mustPush(t, p, 1, constant(240, -700)) // 10 ms only
		p.EndResponse(1)
		if out := fill(p, 240); !slices.Equal(out, constant(240, -700)) {
			t.Fatal("short ended response did not play at once")
		}
		fill(p, 240)
		if reg.Value("robot_agent_playback_underruns_total") != 0 {
			t.Error("end of an ended response counted as underrun")
		}
		if ev := drain(p); len(ev) != 1 || ev[0].Kind != EventDone || ev[0].SamplesPlayed != 240 {
			t.Errorf("events = %+v", ev)
		}
	})
}

// TestUnderrunConcealment starves a response mid-way and checks the fade-out
// to silence, the concealment counters, the renewed prebuffer, and the
// fade-in, with the largest step at any transition bounded.
func TestUnderrunConcealment(t *testing.T) {
	sine := func(n, phase int, amp, hz float64) []int16 {
		s := make([]int16, n)
		for i := range s {
			s[i] = int16(amp * math.Sin(2*math.Pi*hz*float64(phase+i)/sampleRate))
		}
		return s
	}
	tests := []struct {
		name   string
		a, b   []int16 // before and after the underrun
		amp    int
		natual int // largest step in the signal itself
	}{
		{"dc", constant(1440, 12000), constant(1440, 12000), 12000, 0},
		{"negative dc", constant(1440, -30000), constant(1440, -30000), 30000, 0},
		// 1440 samples = 24 periods of 400 Hz (60 samples): ends at a
		// zero crossing, so start at a quarter period to cut at a peak.
		{"sine 400 Hz", sine(1440, 15, 20000, 400), sine(1440, 15+1440, 20000, 400), 20000, 2100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Stall policy: it resumes only at PrebufferMS (the adaptive
			// resume is tested in adaptive_test.go).
			p, _, reg := newTestPlayer(t, Config{Policy: PolicyStall})
			mustPush(t, p, 1, tt.a)
			var out []int16
			for range 6 {
				out = append(out, fill(p, 240)...)
			}
			if !slices.Equal(out, tt.a) {
				t.Fatal("first part not played verbatim")
			}
			under := fill(p, 240)
			if reg.Value("robot_agent_playback_underruns_total") != 1 {
				t.Fatalf("underruns = %d, want 1", reg.Value("robot_agent_playback_underruns_total"))
			}
			if allZero(under[:fadeLen-1]) || !allZero(under[fadeLen-1:]) {
				t.Fatal("underrun is not a fade of fadeLen-1 samples followed by silence")
			}
			out = append(out, under...)
			out = append(out, fill(p, 240)...) // more silence, still concealed
			if got := reg.Value("robot_agent_playback_concealed_samples_total"); got != 480 {
				t.Fatalf("concealed = %d, want 480", got)
			}
			mustPush(t, p, 1, tt.b[:720]) // 30 ms: not enough to resume
			if s := fill(p, 240); !allZero(s) {
				t.Fatal("resumed before the prebuffer refilled")
			}
			out = append(out, make([]int16, 240)...)
			mustPush(t, p, 1, tt.b[720:])
			p.EndResponse(1)
			for range 7 {
				out = append(out, fill(p, 240)...)
			}
			resumed := out[len(out)-1680 : len(out)-240]
			// Fade-in: gain k/96 on the first 96 samples, verbatim after.
			for k := 0; k < fadeLen; k++ {
				if want := int16(int32(tt.b[k]) * int32(k+1) / fadeLen); resumed[k] != want {
					t.Fatalf("fade-in sample %d = %d, want %d", k, resumed[k], want)
				}
			}
			if !slices.Equal(resumed[fadeLen:], tt.b[fadeLen:]) {
				t.Fatal("resumed audio not verbatim after the fade-in")
			}
			bound := tt.natual + tt.amp/fadeLen + 1
			if d := maxDelta(out); d > bound {
				t.Fatalf("max |delta| = %d at a transition, bound %d (a hard cut would be ~%d)", d, bound, tt.amp)
			}
			if reg.Value("robot_agent_playback_underruns_total") != 1 {
				t.Error("the end of an ended response counted as underrun")
			}
			if ev := drain(p); len(ev) != 1 || ev[0] != (Event{Kind: EventDone, ResponseID: 1, SamplesPlayed: 2880}) {
				t.Errorf("events = %+v", ev)
			}
		})
	}
}

// TestInterrupt: barge-in fades out within FadeMS, reports the samples
// played, drops late chunks of the interrupted response, and lets a new
// response play.
func TestInterrupt(t *testing.T) {
	p, clk, reg := newTestPlayer(t, Config{})
	mustPush(t, p, 1, constant(2400, 10000))
	played := append(fill(p, 240), fill(p, 240)...)
	if !slices.Equal(played, constant(480, 10000)) {
		t.Fatal("response 1 not playing")
	}
	clk.Advance(time.Second)
	if got := p.Interrupt(1); got != 1 {
		t.Fatalf("Interrupt(1) = %d", got)
	}
	after := fill(p, 240)
	for k := 0; k < fadeLen-1; k++ {
		if want := int16(10000 * int32(fadeLen-1-k) / fadeLen); after[k] != want {
			t.Fatalf("interrupt fade sample %d = %d, want %d", k, after[k], want)
		}
	}
	if !allZero(after[fadeLen-1:]) {
		t.Fatal("old response still audible after FadeMS")
	}
	ev := drain(p)
	want := Event{Kind: EventInterrupted, ResponseID: 1, SamplesPlayed: 480 + fadeLen - 1, At: time.Second}
	if len(ev) != 1 || ev[0] != want {
		t.Fatalf("events = %+v, want %+v", ev, want)
	}
	if err := p.PushPCM(1, le(constant(480, 10000))); !errors.Is(err, ErrStale) {
		t.Fatalf("late chunk of interrupted response: %v, want ErrStale", err)
	}
	p.EndResponse(1)
	if !allZero(fill(p, 2400)) {
		t.Fatal("interrupted response played again")
	}
	if p.Depth() != 0 {
		t.Errorf("Depth = %d after flush", p.Depth())
	}
	mustPush(t, p, 2, constant(1440, -8000))
	p.EndResponse(2)
	if out := fill(p, 1440); !slices.Equal(out, constant(1440, -8000)) {
		t.Fatal("new response after interrupt did not play verbatim")
	}
	fill(p, 240)
	if ev := drain(p); len(ev) != 1 || ev[0].Kind != EventDone || ev[0].ResponseID != 2 || ev[0].SamplesPlayed != 1440 {
		t.Fatalf("events = %+v", ev)
	}
	for name, want := range map[string]int64{
		"robot_agent_playback_flushes_total":                  1,
		"robot_agent_playback_stale_frames_dropped_total":     1,
		"robot_agent_playback_played_samples_total":           480 + fadeLen - 1 + 1440,
		"robot_agent_playback_depth_samples":                  0,
		"robot_agent_playback_underruns_total":                0,
		"robot_agent_playback_overflow_dropped_samples_total": 0,
	} {
		if got := reg.Value(name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

func TestInterruptScope(t *testing.T) {
	t.Run("zero covers everything pushed", func(t *testing.T) {
		p, _, _ := newTestPlayer(t, Config{})
		mustPush(t, p, 1, constant(480, 1))
		p.EndResponse(1)
		mustPush(t, p, 2, constant(480, 2))
		if got := p.Interrupt(0); got != 2 {
			t.Fatalf("Interrupt(0) = %d, want 2", got)
		}
		if !allZero(fill(p, 960)) {
			t.Fatal("interrupted audio played")
		}
		ev := drain(p)
		if len(ev) != 2 || ev[0] != (Event{Kind: EventInterrupted, ResponseID: 1}) || ev[1] != (Event{Kind: EventInterrupted, ResponseID: 2}) {
			t.Fatalf("events = %+v", ev)
		}
		if err := p.PushPCM(2, le(constant(2, 2))); !errors.Is(err, ErrStale) {
			t.Fatalf("late chunk: %v", err)
		}
		mustPush(t, p, 3, constant(480, 3))
		p.EndResponse(3)
		if !slices.Equal(fill(p, 480), constant(480, 3)) {
			t.Fatal("response 3 did not play")
		}
	})
	t.Run("explicit id keeps newer responses", func(t *testing.T) {
		p, _, _ := newTestPlayer(t, Config{})
		mustPush(t, p, 1, constant(480, 1))
		p.EndResponse(1)
		mustPush(t, p, 2, constant(480, 2))
		p.EndResponse(2)
		p.Interrupt(1)
		if !slices.Equal(fill(p, 480), constant(480, 2)) {
			t.Fatal("response 2 clipped by Interrupt(1)")
		}
	})
	t.Run("nothing pushed", func(t *testing.T) {
		p, _, reg := newTestPlayer(t, Config{})
		if got := p.Interrupt(0); got != 0 {
			t.Fatalf("Interrupt(0) = %d", got)
		}
		if reg.Value("robot_agent_playback_flushes_total") != 0 {
			t.Error("empty interrupt counted as flush")
		}
		mustPush(t, p, 1, constant(10, 5))
	})
	t.Run("superseded chunk is stale", func(t *testing.T) {
		p, _, reg := newTestPlayer(t, Config{})
		mustPush(t, p, 5, constant(10, 5))
		if err := p.PushPCM(4, le(constant(10, 4))); !errors.Is(err, ErrStale) {
			t.Fatalf("older response after newer: %v", err)
		}
		if reg.Value("robot_agent_playback_stale_frames_dropped_total") != 1 {
			t.Error("not counted")
		}
	})
}

func TestResetSession(t *testing.T) {
	p, _, _ := newTestPlayer(t, Config{})
	mustPush(t, p, 5, constant(1440, 500))
	if !slices.Equal(fill(p, 240), constant(240, 500)) {
		t.Fatal("not playing")
	}
	p.ResetSession()
	out := fill(p, 240)
	if !allZero(out[fadeLen-1:]) {
		t.Fatal("old session audible after the fade")
	}
	if ev := drain(p); len(ev) != 1 || ev[0].Kind != EventInterrupted || ev[0].ResponseID != 5 {
		t.Fatalf("events = %+v", ev)
	}
	mustPush(t, p, 1, constant(480, 1)) // ids restart in the new session
	p.EndResponse(1)
	if !slices.Equal(fill(p, 480), constant(480, 1)) {
		t.Fatal("new session's response 1 did not play")
	}
	p.Interrupt(0)
	if err := p.PushPCM(1, le(constant(2, 1))); !errors.Is(err, ErrStale) {
		t.Fatalf("Interrupt(0) in new session: late chunk %v", err)
	}
}

func TestOverflow(t *testing.T) {
	p, _, reg := newTestPlayer(t, Config{Slots: 4, SlotSamples: 480, PrebufferMS: 1})
	err := p.PushPCM(1, le(constant(5*480, 1)))
	if !errors.Is(err, ErrFull) {
		t.Fatalf("PushPCM over capacity = %v, want ErrFull", err)
	}
	if got := reg.Value("robot_agent_playback_overflow_dropped_samples_total"); got != 480 {
		t.Errorf("overflow dropped = %d, want 480", got)
	}
	if p.Depth() != 4*480 || reg.Value("robot_agent_playback_depth_samples") != 4*480 {
		t.Errorf("Depth = %d, gauge %d", p.Depth(), reg.Value("robot_agent_playback_depth_samples"))
	}
	fill(p, 480)
	// The rest of an overflowed response is dropped too, so what plays is
	// a prefix of it and samples_played stays meaningful.
	if err := p.PushPCM(1, le(constant(480, 1))); !errors.Is(err, ErrFull) {
		t.Errorf("push of the overflowed response after room freed = %v, want ErrFull", err)
	}
	if got := p.LostSamples(); got != 960 {
		t.Errorf("LostSamples = %d, want 960", got)
	}
	p.EndResponse(1)
	if err := p.PushPCM(2, le(constant(480, 2))); err != nil {
		t.Errorf("push of a new response after room freed: %v", err)
	}
	fill(p, 4*480)
	ev := drain(p)
	if len(ev) == 0 || ev[0].ResponseID != 1 || ev[0].SamplesLost != 960 || ev[0].SamplesPlayed != 4*480 {
		t.Errorf("events = %+v, want response 1 with 960 lost, %d played", ev, 4*480)
	}
	if st := p.Stats(); st.Peak != 4*480 || st.Lost != 960 {
		t.Errorf("Stats = %+v", st)
	}
}

func TestEventQueueOverflowCounted(t *testing.T) {
	p, _, reg := newTestPlayer(t, Config{})
	const n = eventQueueSize + 6
	for id := uint32(1); id <= n; id++ {
		mustPush(t, p, id, constant(24, int16(id)))
		p.EndResponse(id)
	}
	out := fill(p, 24*n+240)
	for i := range 24 * n {
		if out[i] != int16(i/24+1) {
			t.Fatalf("back-to-back responses: sample %d = %d", i, out[i])
		}
	}
	ev := drain(p)
	if len(ev) != eventQueueSize {
		t.Fatalf("%d events, want %d", len(ev), eventQueueSize)
	}
	for i, e := range ev {
		if e.ResponseID != uint32(i+1) || e.Kind != EventDone || e.SamplesPlayed != 24 {
			t.Fatalf("event %d = %+v", i, e)
		}
	}
	if got := reg.Value("robot_agent_playback_events_dropped_total"); got != 6 {
		t.Errorf("events dropped = %d, want 6", got)
	}
	if drain(p) != nil {
		t.Error("events after drain")
	}
}

func TestLatencies(t *testing.T) {
	p, clk, _ := newTestPlayer(t, Config{PrebufferMS: 1, Policy: PolicyStall})
	if _, _, n := p.Latencies(); n != 0 {
		t.Fatalf("n = %d before any audio", n)
	}
	mustPush(t, p, 1, constant(480, 1)) // pushed at t=0
	clk.Advance(30 * time.Millisecond)
	mustPush(t, p, 1, constant(480, 1)) // pushed at t=30ms
	fill(p, 480)                        // slot 1: 30 ms
	clk.Advance(50 * time.Millisecond)
	fill(p, 480) // slot 2: 50 ms
	p50, p99, n := p.Latencies()
	if n != 2 || p50 != 30*time.Millisecond || p99 != 50*time.Millisecond {
		t.Fatalf("Latencies = %v, %v, %d; want 30ms, 50ms, 2", p50, p99, n)
	}
	var l latencyRecorder
	for i := 1; i <= latencyWindow+100; i++ {
		l.record(time.Duration(i))
	}
	p50, p99, win, total := l.percentiles()
	if win != latencyWindow || total != latencyWindow+100 || p50 != time.Duration(100+latencyWindow/2) || p99 != time.Duration(100+rank(latencyWindow, 99)+1) {
		t.Fatalf("window percentiles = %v %v %d %d", p50, p99, win, total)
	}
}

func TestNoAllocs(t *testing.T) {
	p, _, _ := newTestPlayer(t, Config{PrebufferMS: 1})
	chunk := le(constant(480, 3))
	out := make([]int16, 240)
	sink := func(Event) {}
	if a := testing.AllocsPerRun(200, func() {
		if err := p.PushPCM(1, chunk); err != nil {
			panic(err)
		}
	}); a != 0 {
		t.Errorf("PushPCM allocs = %v", a)
	}
	if a := testing.AllocsPerRun(200, func() { p.Fill(out); p.Fill(out) }); a != 0 {
		t.Errorf("Fill (playing, underrun, silence) allocs = %v", a)
	}
	id := uint32(2)
	if a := testing.AllocsPerRun(200, func() {
		_ = p.PushPCM(id, chunk)
		p.Fill(out)
		p.Interrupt(0)
		p.Fill(out) // fade, flush, event
		p.DrainEvents(sink)
		id++
	}); a != 0 {
		t.Errorf("push/fill/interrupt cycle allocs = %v", a)
	}
}

// testSink records Writes; it fails or cancels after enough samples.
type testSink struct {
	format hw.AudioFormat
	period int // 0: not hw.Periodic behaviour (PeriodFrames returns 0)
	mu     sync.Mutex
	got    []int16
	sizes  map[int]int
	stopAt int
	stop   func()
	err    error
}

func (s *testSink) Format() hw.AudioFormat { return s.format }
func (s *testSink) PeriodFrames() int      { return s.period }
func (s *testSink) Close() error           { return nil }
func (s *testSink) Write(p []int16) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, p...)
	s.sizes[len(p)]++
	if len(s.got) >= s.stopAt {
		if s.err != nil {
			return s.err
		}
		s.stop()
	}
	return nil
}

func TestRun(t *testing.T) {
	t.Run("plays in sink periods until cancelled", func(t *testing.T) {
		p, _, _ := newTestPlayer(t, Config{})
		in := counting(1000, 1)
		mustPush(t, p, 1, in)
		p.EndResponse(1)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sink := &testSink{format: hw.TTSFormat, period: 120, sizes: map[int]int{}, stopAt: 2400, stop: cancel}
		if err := p.Run(ctx, sink); !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
		if !slices.Equal(sink.got[:1000], in) || len(sink.sizes) != 1 || sink.sizes[120] == 0 {
			t.Fatalf("sink got wrong audio or write sizes %v", sink.sizes)
		}
	})
	t.Run("config period when sink has none", func(t *testing.T) {
		p, _, _ := newTestPlayer(t, Config{PeriodFrames: 96})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sink := &testSink{format: hw.TTSFormat, sizes: map[int]int{}, stopAt: 960, stop: cancel}
		p.Run(ctx, sink)
		if len(sink.sizes) != 1 || sink.sizes[96] != 10 {
			t.Fatalf("write sizes %v, want 10 x 96", sink.sizes)
		}
	})
	t.Run("sink error", func(t *testing.T) {
		p, _, _ := newTestPlayer(t, Config{})
		sink := &testSink{format: hw.TTSFormat, sizes: map[int]int{}, stopAt: 1, err: hw.ErrDeviceLost}
		err := p.Run(context.Background(), sink)
		if !errors.Is(err, hw.ErrDeviceLost) || !strings.HasPrefix(err.Error(), "playback: sink write: ") {
			t.Fatalf("Run = %v", err)
		}
	})
	t.Run("wrong format", func(t *testing.T) {
		p, _, _ := newTestPlayer(t, Config{})
		err := p.Run(context.Background(), &testSink{format: hw.MicFormat})
		if !errors.Is(err, ErrSinkFormat) || !strings.Contains(err.Error(), "sink is 16000 Hz x 1 ch, want 24000 Hz x 1 ch") {
			t.Fatalf("Run = %v", err)
		}
	})
}

// FuzzPushPCM feeds arbitrary chunks, ids and interrupts and checks the
// player's invariants: no panic, Fill fills everything, depth never goes
// negative, and every sample handed out was pushed.
func FuzzPushPCM(f *testing.F) {
	f.Add([]byte{1, 0, 2, 0}, uint32(1), uint8(0))
	f.Add([]byte{1}, uint32(0), uint8(3))
	f.Add(make([]byte, 4000), uint32(7), uint8(0x81))
	f.Fuzz(func(t *testing.T, pcm []byte, id uint32, op uint8) {
		p, _, reg := newTestPlayer(t, Config{Slots: 8, SlotSamples: 64, PrebufferMS: 1})
		for round := range 4 {
			_ = p.PushPCM(id+uint32(round&int(op>>6)), pcm)
			if op&1 != 0 {
				p.EndResponse(id)
			}
			if op&2 != 0 && round == 1 {
				p.Interrupt(uint32(op >> 2))
			}
			p.Fill(make([]int16, 1+int(op)%300))
			if p.depth.Load() < 0 {
				t.Fatalf("negative depth %d", p.depth.Load())
			}
		}
		if reg.Value("robot_agent_playback_played_samples_total") > 4*int64(len(pcm)/2) {
			t.Fatal("played more samples than pushed")
		}
		p.DrainEvents(func(Event) {})
	})
}

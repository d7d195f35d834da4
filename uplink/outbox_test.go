package uplink

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

func state(name string, v int) *protocol.State {
	b, _ := json.Marshal(v)
	return &protocol.State{StateName: name, StateValue: b}
}

func ids(t *testing.T, o *Outbox) []string {
	t.Helper()
	var out []string
	for {
		data, ok := o.next()
		if !ok {
			return out
		}
		m, err := protocol.DecodeFromRobot(data)
		if err != nil {
			t.Fatalf("outbox produced undecodable message: %v", err)
		}
		out = append(out, m.Envelope().EventID)
	}
}

func TestOutboxOrderAckAndResend(t *testing.T) {
	clk := clock.NewFake()
	reg := metrics.NewRegistry()
	o := NewOutbox("boot", 100, clk, reg)
	for i := 1; i <= 5; i++ {
		clk.Advance(time.Millisecond)
		if err := o.Emit(state("s", i)); err != nil {
			t.Fatal(err)
		}
	}
	got := ids(t, o)
	want := []string{"boot-1", "boot-2", "boot-3", "boot-4", "boot-5"}
	if !slices.Equal(got, want) {
		t.Fatalf("first send order = %v, want %v", got, want)
	}
	if !o.Ack("boot-2") || !o.Ack("boot-4") {
		t.Fatal("ack of pending ids reported not pending")
	}
	if o.Ack("boot-2") {
		t.Fatal("second ack of boot-2 reported pending")
	}
	if reg.Value("robot_agent_control_unknown_acks_total") != 1 {
		t.Fatal("duplicate ack not counted")
	}
	o.rewind()
	got = ids(t, o)
	want = []string{"boot-1", "boot-3", "boot-5"}
	if !slices.Equal(got, want) {
		t.Fatalf("resend after reconnect = %v, want %v", got, want)
	}
	if reg.Value("robot_agent_control_resent_total") != 3 {
		t.Fatalf("resent counter = %d, want 3", reg.Value("robot_agent_control_resent_total"))
	}
	if o.Len() != 3 {
		t.Fatalf("Len = %d, want 3", o.Len())
	}
}

func TestOutboxAckDuringSendKeepsCursor(t *testing.T) {
	o := NewOutbox("b", 100, clock.NewFake(), metrics.NewRegistry())
	for i := 0; i < 4; i++ {
		o.Emit(state("s", i))
	}
	o.next() // b-1
	o.next() // b-2
	o.Ack("b-1")
	got := ids(t, o)
	if !slices.Equal(got, []string{"b-3", "b-4"}) {
		t.Fatalf("after ack of an already-sent message, next = %v, want [b-3 b-4]", got)
	}
}

func TestOutboxTimestampsAndFull(t *testing.T) {
	clk := clock.NewFake()
	reg := metrics.NewRegistry()
	o := NewOutbox("b", 2, clk, reg)
	clk.Advance(1500 * time.Microsecond)
	s := state("x", 1)
	if err := o.Emit(s); err != nil {
		t.Fatal(err)
	}
	if s.TS != 1500 {
		t.Fatalf("ts = %d, want 1500 (µs of the clock)", s.TS)
	}
	keep := state("y", 1)
	keep.TS = 42
	o.Emit(keep)
	if keep.TS != 42 {
		t.Fatal("Emit overwrote a capture timestamp set by the producer")
	}
	err := o.Emit(state("z", 1))
	if !errors.Is(err, ErrOutboxFull) {
		t.Fatalf("third emit into a 2-limit outbox: err = %v, want ErrOutboxFull", err)
	}
	if reg.Value("robot_agent_control_outbox_full_total") != 1 {
		t.Fatal("full outbox not counted")
	}
}

func TestBackoffFullJitterBounds(t *testing.T) {
	base, cap := 100*time.Millisecond, 2*time.Second
	for attempt := 0; attempt < 10; attempt++ {
		bound := base << attempt
		if bound > cap {
			bound = cap
		}
		var largest time.Duration
		for i := 0; i < 500; i++ {
			d := backoff(base, cap, attempt)
			if d < 0 || d > bound {
				t.Fatalf("attempt %d: backoff %v outside [0, %v]", attempt, d, bound)
			}
			largest = max(largest, d)
		}
		if largest < bound/2 {
			t.Fatalf("attempt %d: 500 draws never exceeded %v (bound %v): not full jitter", attempt, largest, bound)
		}
	}
}

func TestFrameLaneNoAllocAndDrops(t *testing.T) {
	reg := metrics.NewRegistry()
	dropped := reg.Counter("d", "")
	queued := reg.Counter("q", "")
	l := newFrameLane(4, protocol.HeaderSize+640, dropped, queued)
	samples := make([]int16, 320)
	for i := range samples {
		samples[i] = int16(i * 3)
	}
	h := protocol.Header{Kind: protocol.KindMicAudio, Flag: protocol.FlagContinue, Stream: 7}
	allocs := testing.AllocsPerRun(1000, func() {
		h.Seq++
		if !l.pushPCM(h, samples) {
			t.Fatal("push into empty lane failed")
		}
		f, ok := l.peek()
		if !ok || len(f) != protocol.HeaderSize+640 {
			t.Fatal("peek failed")
		}
		l.release()
	})
	if allocs != 0 {
		t.Fatalf("push+peek+release allocates %v times, want 0", allocs)
	}
	for i := 0; i < 4; i++ {
		if !l.pushPCM(h, samples) {
			t.Fatalf("push %d into a 4-slot lane failed", i)
		}
	}
	if l.pushPCM(h, samples) {
		t.Fatal("push into a full lane succeeded")
	}
	if l.pushPCM(h, make([]int16, 400)) {
		t.Fatal("oversized frame accepted")
	}
	if dropped.Value() != 2 {
		t.Fatalf("dropped = %d, want 2", dropped.Value())
	}
	f, _ := l.peek()
	gh, payload, err := protocol.ParseHeader(f)
	if err != nil {
		t.Fatal(err)
	}
	if gh.Stream != 7 || len(payload) != 640 || payload[2] != 3 {
		t.Fatalf("frame in lane decoded as %+v / %d bytes", gh, len(payload))
	}
}

func TestReconnectBackoffGrowsOnlyWhileSessionsFailEarly(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := reconnectBackoff{base: 100 * time.Millisecond, cap: 3 * time.Second, stable: 10 * time.Second,
		fastCap: time.Second, fastWindow: 30 * time.Second}
	maxOf := func(now time.Time, established bool, lasted time.Duration, n int) time.Duration {
		// The largest of many draws approaches the attempt's bound.
		var m time.Duration
		for i := 0; i < n; i++ {
			saved, savedFast := b.attempt, b.fastUntil
			m = max(m, b.next(now, established, lasted, 0))
			b.attempt, b.fastUntil = saved, savedFast
		}
		b.next(now, established, lasted, 0)
		return m
	}
	check := func(what string, got, want time.Duration) {
		t.Helper()
		if got > want || got < want/2 {
			t.Fatalf("%s: max delay %v, want close to and at most %v", what, got, want)
		}
	}
	// Sessions that reach hello but fail early (5 s), and failed dials,
	// grow the delay up to the cap.
	for i, want := range []time.Duration{100, 200, 400, 800, 1600, 3000, 3000} {
		check(fmt.Sprintf("early failure %d", i), maxOf(t0, i%2 == 0, 5*time.Second, 300), want*time.Millisecond)
	}
	// A stable session: the first retry is within base (sub-second)...
	now := t0.Add(time.Hour)
	check("first retry after a stable session", maxOf(now, true, time.Minute, 300), 100*time.Millisecond)
	// ...then failed dials (gateway still down) grow, but within the fast
	// window never past fastCap...
	for i, want := range []time.Duration{200, 400, 800, 1000, 1000} {
		now = now.Add(time.Second)
		check(fmt.Sprintf("fast window dial %d", i), maxOf(now, false, 0, 300), want*time.Millisecond)
	}
	// ...and after it up to the cap.
	now = now.Add(time.Minute)
	check("after the fast window", maxOf(now, false, 0, 300), 3*time.Second)
	// go_away's delay wins.
	if d := b.next(now, true, time.Minute, 1234*time.Millisecond); d != 1234*time.Millisecond {
		t.Fatalf("go_away delay ignored: %v", d)
	}
}

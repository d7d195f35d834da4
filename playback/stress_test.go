package playback

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
)

// TestConcurrentExactlyOnceInOrder: the read pump and the device run on
// their own goroutines, chunks come in irregular sizes, the consumer
// underruns often; with no flush every sample must come out exactly once and
// in order (silence aside).
func TestConcurrentExactlyOnceInOrder(t *testing.T) {
	for _, pol := range []Policy{PolicyStall, PolicyAdaptive} {
		t.Run(fmt.Sprint(pol), func(t *testing.T) { testConcurrentExactlyOnceInOrder(t, pol) })
	}
}

// testConcurrentExactlyOnceInOrder runs with sample-exact output: the adaptive policy with
// time-stretching off (StretchPct < 0) still exercises its stage, start,
// resume and interrupt paths.
func testConcurrentExactlyOnceInOrder(t *testing.T, pol Policy) {
	p, err := New(Config{Slots: 16, SlotSamples: 96, PrebufferMS: 2, Policy: pol, StretchPct: -1}, clock.NewReal(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	disableFades(p) // exact values through underruns
	const (
		responses = 20
		perResp   = 9000
	)
	// Sample value i%30000+1 (never 0), running across responses.
	var failed atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(1, 2))
		seq := 0
		buf := make([]int16, 700)
		for id := uint32(1); id <= responses; id++ {
			for left := perResp; left > 0; {
				n := min(left, 1+rng.IntN(len(buf)))
				for i := range n {
					buf[i] = int16(seq%30000 + 1)
					seq++
				}
				for p.ring.Len()+(n+95)/96 > 16 { // wait for room (never overflow)
					runtime.Gosched()
				}
				if err := p.PushPCM(id, le(buf[:n])); err != nil {
					t.Errorf("PushPCM: %v", err)
					failed.Store(true)
					return
				}
				left -= n
				if rng.IntN(8) == 0 {
					runtime.Gosched() // let the consumer starve now and then
				}
			}
			if id%2 == 0 {
				p.EndResponse(id) // odd responses end implicitly
			}
		}
		p.EndResponse(responses)
	}()
	out := make([]int16, 240)
	want := 0
	doneEvents := 0
	for spins := 0; want < responses*perResp; spins++ {
		if spins > 50_000_000 || failed.Load() {
			t.Fatalf("stuck after %d samples", want)
		}
		p.Fill(out)
		for _, v := range out {
			if v == 0 {
				continue
			}
			if v != int16(want%30000+1) {
				t.Fatalf("sample %d = %d, want %d (lost, duplicated or reordered)", want, v, want%30000+1)
			}
			want++
		}
		p.DrainEvents(func(e Event) {
			if e.Kind != EventDone || e.SamplesPlayed != perResp || e.ResponseID != uint32(doneEvents+1) {
				t.Errorf("event %+v", e)
			}
			doneEvents++
		})
	}
	wg.Wait()
	for range 10 {
		if !allZero(fill(p, 240)) {
			t.Fatal("extra samples after the last one")
		}
	}
	p.DrainEvents(func(Event) { doneEvents++ })
	if doneEvents != responses {
		t.Errorf("%d done events, want %d", doneEvents, responses)
	}
}

// TestConcurrentInterruptStress: a producer pushes short responses, a third
// goroutine barges in at random, the consumer fills as fast as it can. For
// every Fill that started after an Interrupt returned, no sample of a
// response at or below that interrupt's cutoff may come out (fades are
// disabled so that nothing old is allowed at all). Every completion event
// must match what was really played, Done only for fully played responses,
// and a response pushed after the last interrupt must play in full.
func TestConcurrentInterruptStress(t *testing.T) {
	for _, pol := range []Policy{PolicyStall, PolicyAdaptive} {
		t.Run(fmt.Sprint(pol), func(t *testing.T) { testConcurrentInterruptStress(t, pol) })
	}
}

// testConcurrentInterruptStress runs with sample-exact output: the adaptive policy with
// time-stretching off (StretchPct < 0) still exercises its stage, start,
// resume and interrupt paths.
func testConcurrentInterruptStress(t *testing.T, pol Policy) {
	reg := metrics.NewRegistry()
	p, err := New(Config{Slots: 64, SlotSamples: 96, PrebufferMS: 1, Policy: pol, StretchPct: -1}, clock.NewReal(), reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	disableFades(p)
	const responses = 400 // sample value of response id is id
	accepted := make([]int, responses+6)
	var lastCut atomic.Uint32 // max cutoff of Interrupt calls that returned
	var producerDone, interrupterDone, failed atomic.Bool
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // read pump
		defer wg.Done()
		defer producerDone.Store(true)
		rng := rand.New(rand.NewPCG(3, 4))
		for id := uint32(1); id <= responses; id++ {
			chunks := 1 + rng.IntN(12)
			for range chunks {
				n := 96 * (1 + rng.IntN(3))
				for p.Depth() > 2000 {
					runtime.Gosched()
				}
				switch err := p.PushPCM(id, le(constant(n, int16(id)))); err {
				case nil:
					accepted[id] += n
				case ErrStale:
				default:
					t.Errorf("PushPCM(%d): %v", id, err)
					failed.Store(true)
					return
				}
			}
			p.EndResponse(id)
			if rng.IntN(4) == 0 {
				time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
			}
		}
	}()
	go func() { // barge-in
		defer wg.Done()
		defer interrupterDone.Store(true)
		rng := rand.New(rand.NewPCG(5, 6))
		for !producerDone.Load() {
			time.Sleep(time.Duration(rng.IntN(1000)) * time.Microsecond)
			var cut uint32
			// An explicit id needs a pushed response to be "around": with
			// none yet (id 0) the one before it would wrap to 2^32-1 and
			// cut every response of the session, the final one included
			// (it failed that way under qemu-arm, where the barge-in
			// goroutine can run before the producer's first push).
			if newest := uint32(p.maxSeen.Load()); rng.IntN(3) == 0 && newest > 0 {
				// An explicit id around the newest one: the previous
				// response (newer ones must survive), or the next
				// (not pushed yet: its chunks must be dropped).
				cut = p.Interrupt(newest + uint32(rng.IntN(3)) - 1)
			} else {
				cut = p.Interrupt(0)
			}
			for old := lastCut.Load(); cut > old && !lastCut.CompareAndSwap(old, cut); old = lastCut.Load() {
			}
		}
	}()

	heard := make([]int, responses+6)
	events := make([]*Event, responses+6)
	onEvent := func(e Event) {
		if e.ResponseID == 0 || int(e.ResponseID) >= len(events) {
			t.Errorf("event for unknown response %+v", e)
			return
		}
		if events[e.ResponseID] != nil {
			t.Errorf("second event %+v for response, first %+v", e, *events[e.ResponseID])
		}
		events[e.ResponseID] = &e
	}
	out := make([]int16, 240)
	lastID := int16(0)
	const final = responses + 5 // above any id the barge-in goroutine may cut
	finalPushed := false
	for spins := 0; events[final] == nil; spins++ {
		if spins > 50_000_000 || failed.Load() {
			t.Fatal("final response never completed")
		}
		if interrupterDone.Load() && !finalPushed {
			wg.Wait()
			// The "new response after interrupt": pushed once every
			// Interrupt has returned, it must play in full.
			if err := p.PushPCM(final, le(constant(1000, final))); err != nil {
				t.Fatal(err)
			}
			accepted[final] = 1000
			p.EndResponse(final)
			finalPushed = true
		}
		if spins%4 == 0 {
			time.Sleep(50 * time.Microsecond) // a device period, roughly
		}
		cut := int16(lastCut.Load())
		p.Fill(out)
		for i, v := range out {
			if v == 0 {
				continue
			}
			if v < 0 || int(v) >= len(heard) {
				t.Fatalf("sample %d = %d: not a pushed value", i, v)
			}
			if v <= cut {
				t.Fatalf("response %d played in a Fill that started after Interrupt cut up to %d", v, cut)
			}
			if v < lastID {
				t.Fatalf("response %d played after response %d", v, lastID)
			}
			lastID = v
			heard[v]++
		}
		p.DrainEvents(onEvent)
	}
	if reg.Value("robot_agent_playback_events_dropped_total") != 0 || reg.Value("robot_agent_playback_overflow_dropped_samples_total") != 0 {
		t.Fatalf("test setup lost events or audio: %v", reg.Snapshot())
	}
	var done, interrupted int
	for id := 1; id <= final; id++ {
		e := events[id]
		if e == nil {
			if heard[id] != 0 {
				t.Errorf("response %d: %d samples heard but no event", id, heard[id])
			}
			continue
		}
		if int64(heard[id]) != e.SamplesPlayed {
			t.Errorf("response %d: event %+v but %d samples heard", id, *e, heard[id])
		}
		switch e.Kind {
		case EventDone:
			done++
			if heard[id] != accepted[id] {
				t.Errorf("response %d done with %d of %d accepted samples", id, heard[id], accepted[id])
			}
		case EventInterrupted:
			interrupted++
		}
	}
	if events[final].Kind != EventDone {
		t.Errorf("final response: %+v", *events[final])
	}
	t.Logf("%d done, %d interrupted; metrics %v", done, interrupted, reg.Snapshot())
	if interrupted == 0 || done < 2 {
		t.Errorf("stress did not exercise both outcomes: %d done, %d interrupted", done, interrupted)
	}
}

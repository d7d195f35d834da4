package playback

import (
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestNewRingValidation(t *testing.T) {
	tests := []struct {
		slots, slotSamples int
		wantErr            string // "" = ok
	}{
		{2, 1, ""},
		{256, 480, ""},
		{0, 480, "slots=0"},
		{1, 480, "slots=1"},
		{3, 480, "slots=3"},
		{-4, 480, "slots=-4"},
		{8, 0, "slotSamples=0"},
		{8, -1, "slotSamples=-1"},
		{8, maxSlotSamples + 1, "slotSamples=24001"},
	}
	for _, tt := range tests {
		r, err := NewRing(tt.slots, tt.slotSamples)
		if tt.wantErr == "" {
			if err != nil || r.Cap() != tt.slots || r.SlotSamples() != tt.slotSamples {
				t.Errorf("NewRing(%d, %d) = %v, %v", tt.slots, tt.slotSamples, r, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "playback: ") {
			t.Errorf("NewRing(%d, %d) error = %v, want one naming %q", tt.slots, tt.slotSamples, err, tt.wantErr)
		}
	}
}

func TestRingFIFOFullEmptyWrap(t *testing.T) {
	r, err := NewRing(4, 3)
	if err != nil {
		t.Fatal(err)
	}
	if r.Front() != nil {
		t.Fatal("new ring not empty")
	}
	dst := make([]int16, 3)
	next := int16(1)
	for round := 0; round < 3; round++ { // wraps the counters several times
		for i := 0; i < 4; i++ {
			if n := r.Push([]int16{next, next + 1, next + 2, 99}, uint64(i), uint32(round), 0); n != 3 {
				t.Fatalf("round %d push %d stored %d, want 3 (extra sample ignored)", round, i, n)
			}
			next += 3
		}
		if r.Len() != 4 || r.Reserve() != nil || r.Push([]int16{1}, 0, 0, 0) != 0 {
			t.Fatalf("round %d: full ring: Len=%d, Reserve/Push should fail", round, r.Len())
		}
		want := next - 12
		for i := 0; i < 4; i++ {
			s := r.Front()
			if s == nil || s.Resp != uint64(i) || s.Gen != uint32(round) || s.N != 3 {
				t.Fatalf("round %d pop %d: slot %+v", round, i, s)
			}
			n, ok := r.Pop(dst)
			if !ok || n != 3 {
				t.Fatalf("Pop = %d, %v", n, ok)
			}
			for _, v := range dst {
				if v != want {
					t.Fatalf("round %d: got %d, want %d", round, v, want)
				}
				want++
			}
		}
		if _, ok := r.Pop(dst); ok || r.Len() != 0 {
			t.Fatal("empty ring popped")
		}
	}
}

// TestRingConcurrentCounting pushes a counting sequence through a small ring
// from one goroutine and checks on another that every sample arrives exactly
// once and in order, across many full/empty transitions.
func TestRingConcurrentCounting(t *testing.T) {
	const (
		slotSamples = 7
		total       = 200_000
	)
	r, err := NewRing(8, slotSamples)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // producer
		defer wg.Done()
		var seq uint32
		chunk := 1
		for seq < total {
			s := r.Reserve()
			if s == nil {
				runtime.Gosched()
				continue
			}
			n := min(chunk, total-int(seq))
			for i := range n {
				s.Buf()[i] = int16(seq)
				seq++
			}
			s.N, s.Resp = n, uint64(seq) // Resp = count pushed so far
			r.Commit()
			chunk = chunk%slotSamples + 1 // 1..7, partial slots included
		}
	}()
	var got uint32
	for got < total {
		s := r.Front()
		if s == nil {
			runtime.Gosched()
			continue
		}
		for _, v := range s.Samples() {
			if v != int16(got) {
				t.Fatalf("sample %d = %d, want %d", got, v, int16(got))
			}
			got++
		}
		if s.Resp != uint64(got) {
			t.Fatalf("slot header Resp=%d, want %d (header torn from data)", s.Resp, got)
		}
		r.Release()
	}
	wg.Wait()
	if r.Front() != nil {
		t.Fatal("extra slots after the last sample")
	}
}

func TestRingNoAllocs(t *testing.T) {
	r, _ := NewRing(16, 480)
	frame := make([]int16, 480)
	dst := make([]int16, 480)
	if a := testing.AllocsPerRun(1000, func() {
		r.Push(frame, 1, 0, 0)
		r.Pop(dst)
	}); a != 0 {
		t.Errorf("Push+Pop allocs = %v, want 0", a)
	}
}

// TestGrowableRingFollowsDepth: storage grows in chunks as the ring
// deepens and is reused, not re-allocated, as the producer laps it; data
// survives intact.
func TestGrowableRingFollowsDepth(t *testing.T) {
	r, err := NewGrowableRing(64, 4, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.AllocatedSlots() != 0 {
		t.Fatalf("allocated %d before use", r.AllocatedSlots())
	}
	next, want := int16(1), int16(1)
	buf := make([]int16, 4)
	for lap := range 20 {
		depth := 3 + lap%10 // at most 12 slots deep
		for r.Len() < depth {
			if r.Push([]int16{next, next, next, next}, 1, 0, 0) != 4 {
				t.Fatal("push failed")
			}
			next++
		}
		for r.Len() > 1 {
			if n, ok := r.Pop(buf); !ok || n != 4 || buf[0] != want || buf[3] != want {
				t.Fatalf("lap %d: pop = %v %v, want %d", lap, buf, ok, want)
			}
			want++
		}
	}
	// Deepest was 12 slots: at most 16 (whole chunks) plus one chunk being
	// reclaimed behind the consumer.
	if got := r.AllocatedSlots(); got > 20 {
		t.Errorf("allocated %d slots for a depth of at most 12", got)
	}
	if _, err := NewGrowableRing(64, 4, 3, 0); err == nil {
		t.Error("chunkSlots 3 accepted")
	}
}

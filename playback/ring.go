package playback

import (
	"fmt"
	"sync/atomic"
	"time"
)

// cacheLinePad keeps fields written by different goroutines on different
// cache lines (64 bytes on the Cortex-A cores the agent runs on).
type cacheLinePad [64]byte

// Slot is one fixed-size cell of a Ring. Its sample storage is preallocated
// by NewRing and reused forever; a Slot is owned by the producer between
// Reserve and Commit and by the consumer between Front and Release.
type Slot struct {
	buf []int16 // fixed storage, len == cap == Ring.SlotSamples()

	// N is the number of valid samples at the start of Buf().
	N int
	// Resp identifies the response the samples belong to. The Player
	// stores session<<32 | response id here so that keys keep increasing
	// across sessions.
	Resp uint64
	// Gen is the Player generation (interrupt count) current when the
	// producer filled the slot.
	Gen uint32
	// Pushed is the clock.Mono() time at which the producer filled it.
	Pushed time.Duration
}

// Buf returns the slot's whole fixed storage (for the producer to fill).
func (s *Slot) Buf() []int16 { return s.buf }

// Samples returns the valid samples, Buf()[:N].
func (s *Slot) Samples() []int16 { return s.buf[:s.N] }

// Ring is a single-producer single-consumer queue of fixed-size audio slots.
// It never blocks, and never allocates after NewRing (after warm-up for a
// NewGrowableRing): Reserve reports a full
// ring by returning nil, Front an empty one by returning nil.
//
// # Concurrency
//
// Exactly one goroutine may act as producer (Reserve, Commit, Push) and one
// as consumer (Front, Release, Pop) at a time; Len and Cap may be called from
// any goroutine.
//
// # Memory ordering
//
// head and tail are free-running uint64 counters (slot index = counter &
// mask). The producer writes a slot with plain stores and then publishes it
// with tail.Store; the consumer observes it with tail.Load. Go's sync/atomic
// operations are sequentially consistent, and the memory model makes a store
// "synchronized before" every load that observes it, so all plain writes to
// the slot happen before the consumer's reads of it (store-release /
// load-acquire). Symmetrically the consumer finishes reading a slot before it
// hands it back with head.Store, and the producer only reuses it after a
// head.Load that observes that store, so it can never overwrite a slot that is
// still being read. Each side caches the other side's counter and reloads it
// only when the ring looks full (producer) or empty (consumer), so the common
// path touches one shared cache line per operation. The race detector
// understands these edges; the ring is clean under -race.
type Ring struct {
	slots       []Slot
	mask        uint64
	slotSamples int
	chunkSlots  int
	allocated   atomic.Int64 // slots with storage (ever allocated)

	_    cacheLinePad
	tail atomic.Uint64 // next slot to publish; stored by the producer only
	_    cacheLinePad
	head atomic.Uint64 // next slot to read; stored by the consumer only
	_    cacheLinePad

	// producer-private
	ptail      uint64
	cachedHead uint64
	reclaim    uint64    // counter of the oldest chunk that may still hold storage
	free       [][]int16 // storage of chunks the consumer is done with
	chunks     [][]int16 // storage of each chunk, nil if none
	_          cacheLinePad

	// consumer-private
	chead      uint64
	cachedTail uint64
	_          cacheLinePad
}

// NewRing returns a ring of slots slots (a power of two, at least 2) of
// slotSamples samples each. All storage is allocated here, in one block.
func NewRing(slots, slotSamples int) (*Ring, error) {
	return NewGrowableRing(slots, slotSamples, slots, slots)
}

// NewGrowableRing returns a ring of slots slots (a power of two, at least
// 2) of slotSamples samples each whose sample storage is allocated on
// demand in chunks of chunkSlots slots (a power of two dividing slots) by
// the producer, the first time Reserve reaches a slot of a chunk that has
// none; the first prealloc slots (rounded up to whole chunks) get theirs
// here. Chunks are kept once allocated, so after warm-up (the deepest the
// buffer has been) Reserve never allocates. Only the slot headers (about
// 64 bytes each) are allocated for the whole capacity up front.
func NewGrowableRing(slots, slotSamples, chunkSlots, prealloc int) (*Ring, error) {
	if slots < 2 || slots > maxRingSlots || slots&(slots-1) != 0 {
		return nil, fmt.Errorf("playback: ring slots=%d must be a power of two in [2, %d]", slots, maxRingSlots)
	}
	if slotSamples < 1 || slotSamples > maxSlotSamples {
		return nil, fmt.Errorf("playback: ring slotSamples=%d out of range [1, %d]", slotSamples, maxSlotSamples)
	}
	if chunkSlots < 1 || chunkSlots > slots || chunkSlots&(chunkSlots-1) != 0 {
		return nil, fmt.Errorf("playback: ring chunkSlots=%d must be a power of two in [1, %d]", chunkSlots, slots)
	}
	r := &Ring{
		slots:       make([]Slot, slots),
		mask:        uint64(slots - 1),
		slotSamples: slotSamples,
		chunkSlots:  chunkSlots,
	}
	r.free = make([][]int16, 0, slots/chunkSlots)
	r.chunks = make([][]int16, slots/chunkSlots)
	for i := 0; i < min(max(prealloc, 0), slots); i += chunkSlots {
		r.grow(i)
	}
	return r, nil
}

// maxRingSlots bounds the slot count (headers are allocated up front).
const maxRingSlots = 1 << 20

// grow gives the chunk holding slot i its sample storage. Producer only
// (or the constructor): the consumer reads buf only after the tail.Store
// that publishes the slot, which follows this write.
//
// Storage follows the depth, not the position: before allocating, the
// producer takes back the storage of every chunk the consumer has wholly
// released (all its slots are behind head, which the producer observed
// with an atomic load, so the consumer no longer reads them) and reuses it.
// The ring therefore holds as much storage as the deepest it has been,
// rounded up to chunks, however long it runs.
func (r *Ring) grow(i int) {
	c := i &^ (r.chunkSlots - 1)
	cs := uint64(r.chunkSlots)
	for r.reclaim+cs <= r.cachedHead {
		k := int(r.reclaim & r.mask)
		if b := r.chunks[k/r.chunkSlots]; b != nil {
			r.free = append(r.free, b)
			r.chunks[k/r.chunkSlots] = nil
			for j := range r.chunkSlots {
				r.slots[k+j].buf = nil
			}
		}
		r.reclaim += cs
	}
	var storage []int16
	if n := len(r.free); n > 0 {
		storage = r.free[n-1]
		r.free = r.free[:n-1]
	} else {
		storage = make([]int16, r.chunkSlots*r.slotSamples)
		r.allocated.Add(int64(r.chunkSlots))
	}
	r.chunks[c/r.chunkSlots] = storage
	for j := range r.chunkSlots {
		r.slots[c+j].buf = storage[j*r.slotSamples : (j+1)*r.slotSamples : (j+1)*r.slotSamples]
	}
}

// AllocatedSlots returns how many slots have sample storage (the memory the
// ring holds is AllocatedSlots * SlotSamples * 2 bytes). Any goroutine.
func (r *Ring) AllocatedSlots() int { return int(r.allocated.Load()) }

// Cap returns the number of slots.
func (r *Ring) Cap() int { return len(r.slots) }

// SlotSamples returns the storage size of every slot, in samples.
func (r *Ring) SlotSamples() int { return r.slotSamples }

// Len returns the number of published, unreleased slots. Any goroutine; the
// answer may be stale by the time it is used.
func (r *Ring) Len() int {
	h := r.head.Load() // head first: tail only grows, so tail >= h below
	t := r.tail.Load()
	return int(t - h)
}

// Reserve returns the next free slot for the producer to fill, or nil if the
// ring is full. Calling Reserve again before Commit returns the same slot.
// Producer only.
func (r *Ring) Reserve() *Slot {
	if r.ptail-r.cachedHead == uint64(len(r.slots)) {
		r.cachedHead = r.head.Load()
		if r.ptail-r.cachedHead == uint64(len(r.slots)) {
			return nil
		}
	}
	s := &r.slots[r.ptail&r.mask]
	if s.buf == nil {
		r.cachedHead = r.head.Load()
		r.grow(int(r.ptail & r.mask))
	}
	return s
}

// Commit publishes the slot returned by the last Reserve. Producer only;
// must follow a successful Reserve.
func (r *Ring) Commit() {
	r.ptail++
	r.tail.Store(r.ptail)
}

// Front returns the oldest published slot without removing it, or nil if
// the ring is empty. Consumer only.
func (r *Ring) Front() *Slot {
	if r.chead == r.cachedTail {
		r.cachedTail = r.tail.Load()
		if r.chead == r.cachedTail {
			return nil
		}
	}
	return &r.slots[r.chead&r.mask]
}

// Release hands the slot returned by Front back to the producer. Consumer
// only; must follow a non-nil Front.
func (r *Ring) Release() {
	r.chead++
	r.head.Store(r.chead)
}

// Push copies samples into one slot and publishes it; it returns the number
// of samples stored: min(len(samples), SlotSamples()), or 0 if the ring is
// full. Samples beyond SlotSamples() are not stored. Producer only.
func (r *Ring) Push(samples []int16, resp uint64, gen uint32, at time.Duration) int {
	s := r.Reserve()
	if s == nil {
		return 0
	}
	n := copy(s.buf, samples)
	s.N, s.Resp, s.Gen, s.Pushed = n, resp, gen, at
	r.Commit()
	return n
}

// Pop copies the oldest slot's samples into dst and releases the slot. It
// returns the number of samples copied (samples that do not fit in dst are
// discarded) and false if the ring was empty. Consumer only.
func (r *Ring) Pop(dst []int16) (int, bool) {
	s := r.Front()
	if s == nil {
		return 0, false
	}
	n := copy(dst, s.buf[:s.N])
	r.Release()
	return n, true
}

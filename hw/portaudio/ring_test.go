//go:build portaudio && cgo

package portaudio

import (
	"math/rand/v2"
	"testing"
	"time"
)

// These tests drive the C ring (ring.c) directly: the Go side through the
// ring interface, the device side through render/capture, exactly what
// the PortAudio callbacks run. No device is needed.

func newTestRing(t *testing.T, output bool, frames, ch, fade, lead int) *cRing {
	t.Helper()
	r, err := paBackend{}.newRing(output, frames, ch, fade, lead)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.free)
	return r.(*cRing)
}

func constant(frames, ch int, v int16) []int16 {
	p := make([]int16, frames*ch)
	for i := range p {
		p[i] = v
	}
	return p
}

func TestCRingWrapsAroundInOrder(t *testing.T) {
	r := newTestRing(t, true, 64, 2, 1, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	next, want := int16(0), int16(0)
	for range 2000 {
		n := rng.IntN(40) + 1
		p := make([]int16, 0, 2*n)
		for range n {
			p = append(p, next, -next)
			next++
		}
		written := r.write(p, r.flushGen())
		next -= int16(n - written)
		out := make([]int16, 2*(rng.IntN(40)+1))
		if b := r.buffered(); b < len(out)/2 {
			out = out[:2*max(b, 1)]
		}
		if r.buffered() == 0 {
			continue
		}
		r.render(out)
		for i := 0; i < len(out); i += 2 {
			if out[i] != want || out[i+1] != -want {
				t.Fatalf("frame %d = (%d,%d), want (%d,%d)", want, out[i], out[i+1], want, -want)
			}
			want++
		}
	}
	if s := r.stats(); s.underrunCallbacks != 0 {
		t.Errorf("%d underruns while never reading past the writer", s.underrunCallbacks)
	}
}

func TestCRingPrimeThenAudio(t *testing.T) {
	r := newTestRing(t, true, 256, 1, 1, 30)
	r.prime()
	r.write(constant(50, 1, 1000), r.flushGen())
	out := make([]int16, 60)
	r.render(out)
	for i, v := range out {
		want := int16(0)
		if i >= 30 {
			want = 1000
		}
		if v != want {
			t.Fatalf("sample %d = %d, want %d (30 frames of start-up silence, then audio)", i, v, want)
		}
	}
	if s := r.stats(); s.underrunCallbacks != 0 {
		t.Errorf("start-up silence counted as %d underruns", s.underrunCallbacks)
	}
}

// An underrun holds the last frame and fades it to zero (no click), is
// counted once per callback, and audio fades back in.
func TestCRingUnderrunConcealsWithFades(t *testing.T) {
	const fade = 16
	r := newTestRing(t, true, 256, 1, fade, 0)
	r.write(constant(40, 1, 16000), r.flushGen())
	out := make([]int16, 64)
	r.render(out)
	if out[39] != 16000 {
		t.Fatalf("last real sample %d, want 16000", out[39])
	}
	for i := 40; i < 40+fade; i++ {
		if out[i] >= out[i-1] || out[i-1]-out[i] > 16000/fade+1 {
			t.Fatalf("fade-out step %d: %d -> %d", i, out[i-1], out[i])
		}
	}
	for i := 40 + fade; i < 64; i++ {
		if out[i] != 0 {
			t.Fatalf("sample %d after the fade = %d, want 0", i, out[i])
		}
	}
	s := r.stats()
	if s.underrunCallbacks != 1 || s.underrunFrames != 24 {
		t.Errorf("underruns %d callbacks / %d frames, want 1 / 24", s.underrunCallbacks, s.underrunFrames)
	}
	r.write(constant(40, 1, 16000), r.flushGen())
	r.render(out[:40])
	for i := 1; i < 40; i++ {
		if d := int(out[i]) - int(out[i-1]); d < 0 || d > 16000/fade+1 {
			t.Fatalf("fade-in step %d: %d -> %d", i, out[i-1], out[i])
		}
	}
	if out[39] != 16000 {
		t.Errorf("after the fade-in sample = %d, want 16000", out[39])
	}
}

// Flush fades out what plays and drops everything queued, including audio
// the producer computed before the flush and writes after it; audio
// computed after the flush plays.
func TestCRingFlush(t *testing.T) {
	const fade = 8
	r := newTestRing(t, true, 1024, 1, fade, 0)
	gen := r.flushGen()
	r.write(constant(400, 1, 10000), gen)
	out := make([]int16, 100)
	r.render(out)

	r.flush()                                  // barge-in
	r.write(constant(100, 1, 10001), gen)      // a block computed before the flush
	r.write(constant(100, 1, 5), r.flushGen()) // computed after
	r.render(out)
	for i := 0; i < fade-1; i++ { // gain steps fade-1 .. 1, then 0
		if want := int16(10000 * (fade - 1 - i) / fade); out[i] != want {
			t.Fatalf("fade sample %d = %d, want %d", i, out[i], want)
		}
	}
	for i := fade; i < 100; i++ {
		if out[i] < 0 || out[i] > 5 { // the new audio, fading in
			t.Fatalf("sample %d after the flush = %d: old audio played", i, out[i])
		}
	}
	if got := r.buffered(); got > 100-fade {
		t.Errorf("%d frames still queued after the flush, want only new audio", got)
	}
}

// A block computed before a flush and published after the callback
// processed the flush must not be "blessed" by a later publish.
func TestCRingStaleBlockNotBlessed(t *testing.T) {
	r := newTestRing(t, true, 1024, 1, 1, 0)
	old := r.flushGen()
	r.write(constant(50, 1, 100), old)
	out := make([]int16, 20)
	r.render(out)
	r.flush()
	r.render(out)                               // the callback processes the flush
	r.write(constant(50, 1, 200), old)          // stale, published late
	r.write(constant(50, 1, 300), r.flushGen()) // fresh
	big := make([]int16, 100)
	r.render(big)
	for i, v := range big {
		if v == 200 {
			t.Fatalf("sample %d: stale audio played after the flush", i)
		}
	}
	if big[0] != 300 {
		t.Errorf("first sample after the flush %d, want the fresh 300", big[0])
	}
}

func TestCRingInputOverrun(t *testing.T) {
	r := newTestRing(t, false, 64, 2, 1, 0)
	in := make([]int16, 2*100)
	for i := range in {
		in[i] = int16(i / 2)
	}
	r.capture(in)
	if s := r.stats(); s.overrunFrames != 36 {
		t.Errorf("overrun %d frames, want 36", s.overrunFrames)
	}
	out := make([]int16, 2*100)
	if n := r.read(out); n != 64 || out[0] != 0 || out[2*63] != 63 {
		t.Errorf("read %d frames (%d..%d), want the first 64", n, out[0], out[2*63])
	}
	r.capture(in[:20])
	r.drop()
	if n := r.read(out); n != 0 {
		t.Errorf("read %d frames after drop, want 0", n)
	}
}

// The callbacks' timing records reach Go in order; records overwritten
// before Go read them are counted as lost, never returned torn.
func TestCRingTimingRecords(t *testing.T) {
	r := newTestRing(t, true, 1024, 2, 1, 0)
	if _, _, ok := r.last(); ok {
		t.Fatal("last() before any callback: ok")
	}
	out := make([]int16, 2*480)
	cb := func(i int) {
		dry := r.renderTimed(out, int64(i)*10_000_000, float64(i)/100, float64(i)/100+0.03, FlagOutputUnderflow*uint32(i%2))
		_ = dry
	}
	for i := range 10 {
		cb(i)
	}
	dst := make([]CallbackTiming, 64)
	n, lost := r.timings(dst)
	if n != 10 || lost != 0 {
		t.Fatalf("timings: %d records, %d lost; want 10, 0", n, lost)
	}
	for i, tm := range dst[:n] {
		if tm.Start != time.Duration(i)*10*time.Millisecond || tm.Frames != 480 || tm.Dry != 480 ||
			tm.DeviceDelay(true) < 29*time.Millisecond || tm.DeviceUnderflow(true) != (i%2 == 1) {
			t.Errorf("record %d = %+v", i, tm)
		}
	}
	if last, _, ok := r.last(); !ok || last.Start != 90*time.Millisecond {
		t.Errorf("last() = %+v, %v; want the record at 90 ms", last, ok)
	}
	// More than the ring's capacity of records before Go reads them.
	for i := 10; i < 10+2000; i++ {
		cb(i)
	}
	total, lostAll := 0, uint64(0)
	prev := time.Duration(-1)
	for {
		n, lost := r.timings(dst)
		lostAll += lost
		for _, tm := range dst[:n] {
			if tm.Start <= prev {
				t.Fatalf("records out of order: %v after %v", tm.Start, prev)
			}
			prev = tm.Start
		}
		total += n
		if n < len(dst) {
			break
		}
	}
	if total != 1024 || lostAll != 2000-1024 {
		t.Errorf("after 2000 unread callbacks: %d records, %d lost; want 1024, %d", total, lostAll, 2000-1024)
	}
}

// A flush fades out within the flush cap (4 ms at the stream's rate) even
// when the underrun fade (FadeMS) is longer, and monotonically.
func TestCRingFlushFadeCapped(t *testing.T) {
	const fade, capFrames = 400, 32 // e.g. 50 ms underrun fade, 4 ms at 8 kHz
	r := newTestRing(t, true, 4096, 1, fade, 0)
	r.setFlushFade(capFrames)
	r.write(constant(2000, 1, 10000), r.flushGen())
	out := make([]int16, 1000)
	r.render(out) // fades in over 400 frames, then full level
	if out[999] != 10000 {
		t.Fatalf("level before the flush %d, want 10000", out[999])
	}
	r.flush()
	r.render(out[:100])
	for i := 1; i < capFrames; i++ {
		if out[i] > out[i-1] {
			t.Fatalf("fade-out not monotonic at %d: %v", i, out[:capFrames])
		}
	}
	if out[0] == 0 || out[capFrames-1] > 10000/capFrames+1 {
		t.Errorf("fade-out starts at %d and ends at %d, want from ~10000 to ~0 over %d frames", out[0], out[capFrames-1], capFrames)
	}
	for i, v := range out[capFrames:100] {
		if v != 0 {
			t.Fatalf("sample %d after a %d-frame flush fade = %d, want silence", capFrames+i, capFrames, v)
		}
	}
}

// Audio written after a flush under the new generation plays, even when
// no callback ran between the flush and the write (hw.Flusher: a Write
// that starts after Flush returns plays normally); what was queued before
// is faded out and dropped.
func TestCRingWriteAfterFlushPlays(t *testing.T) {
	r := newTestRing(t, true, 4096, 1, 8, 0)
	r.setFlushFade(8)
	r.write(constant(1000, 1, 5000), r.flushGen())
	out := make([]int16, 100)
	r.render(out) // playing the old audio at full level after the fade-in
	r.flush()
	r.write(constant(300, 1, -7000), r.flushGen())
	out = make([]int16, 400)
	r.render(out)
	for i := range 8 {
		if out[i] < 0 || out[i] > 5000 {
			t.Fatalf("fade-out sample %d = %d, want the old audio fading (0..5000)", i, out[i])
		}
	}
	n := 0
	for _, v := range out[8:] {
		if v > 0 {
			t.Fatalf("old audio after the flush fade: %v", out[:40])
		}
		if v == -7000 {
			n++
		}
	}
	if n < 280 {
		t.Errorf("%d samples of the audio written after the flush played at full level, want ~292 (300 less the fade-in)", n)
	}
}

package portaudio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// fakeBackend simulates PortAudio for the supervisor tests: a set of
// present devices (sys), the enumeration PortAudio cached at its last
// initialize (seen), streams driven by tick or by a real-time goroutine.
type fakeBackend struct {
	mu      sync.Mutex
	sys     []Device // devices present now
	seen    []Device // devices as of the last initialize
	inited  bool
	inits   int
	opens   int
	fp      string
	streams []*fakeStream
	auto    bool                 // streams run their callback every period on the real clock
	now     func() time.Duration // the callbacks' clock for timing records (nil: real)
}

func (f *fakeBackend) initialize() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inited = true
	f.inits++
	f.seen = slices.Clone(f.sys)
	for i := range f.seen {
		f.seen[i].Index = i
	}
	return nil
}

func (f *fakeBackend) terminate() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.streams {
		if s.open {
			return errors.New("fake: terminate with an open stream (PortAudio would crash a writer)")
		}
	}
	f.inited = false
	return nil
}

func (f *fakeBackend) devices() ([]Device, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.inited {
		return nil, errors.New("fake: not initialized")
	}
	return slices.Clone(f.seen), nil
}

func (f *fakeBackend) newRing(output bool, frames, channels, fade, lead int) (ring, error) {
	return &goRing{cap: frames, ch: channels, output: output, now: f.now}, nil
}

func (f *fakeBackend) open(d Device, output bool, p streamParams, r ring) (stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opens++
	if !f.inited {
		return nil, errors.New("fake: not initialized")
	}
	present := false
	for _, s := range f.sys {
		present = present || s.Name == d.Name
	}
	if !present {
		return nil, fmt.Errorf("fake: cannot open %q", d.Name)
	}
	s := &fakeStream{f: f, dev: d, output: output, p: p, r: r.(*goRing), open: true}
	s.r.mu.Lock()
	s.r.rate = p.rate
	s.r.mu.Unlock()
	f.streams = append(f.streams, s)
	return s, nil
}

func (f *fakeBackend) fingerprint() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fp
}

// plug sets the devices present now and changes the fingerprint, as a USB
// device coming or going does.
func (f *fakeBackend) plug(devs ...Device) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sys = devs
	f.fp = fmt.Sprint(len(f.fp), devs)
}

// live returns the open streams.
func (f *fakeBackend) live() []*fakeStream {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*fakeStream
	for _, s := range f.streams {
		if s.open {
			out = append(out, s)
		}
	}
	return out
}

type fakeStream struct {
	f      *fakeBackend
	dev    Device
	output bool
	p      streamParams
	r      *goRing
	open   bool // fakeBackend.mu
	cancel context.CancelFunc
	done   chan struct{}
}

func (s *fakeStream) start() error {
	if s.f.auto {
		ctx, cancel := context.WithCancel(context.Background())
		s.cancel, s.done = cancel, make(chan struct{})
		go func() {
			defer close(s.done)
			t := time.NewTicker(time.Duration(s.p.periodFrames) * time.Second / time.Duration(s.p.rate))
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					s.tick(s.p.periodFrames)
				}
			}
		}()
	}
	return nil
}

// tick runs one callback of frames.
func (s *fakeStream) tick(frames int) {
	if s.output {
		s.r.render(frames)
	} else {
		s.r.capture(frames)
	}
}

func (s *fakeStream) close() error {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	s.f.mu.Lock()
	s.open = false
	s.f.mu.Unlock()
	return nil
}

func (s *fakeStream) latency() time.Duration { return 20 * time.Millisecond }

// fakeDeviceDelay is the DAC/ADC delay the fake's time info reports.
const fakeDeviceDelay = 20 * time.Millisecond

// goRing is a mutex-protected stand-in for the C ring (the real ring's
// lock-free protocol is tested against PortAudio in ring_test.go).
type goRing struct {
	mu        sync.Mutex
	cap, ch   int
	buf       []int16 // queued interleaved frames
	gen       uint32
	flushed   uint32 // generation processed by render
	played    []int16
	st        ringStats
	freed     bool
	nextInput int16
	output    bool
	rate      int                  // for time info; 0: no time info
	now       func() time.Duration // the callbacks' clock (default: since fakeEpoch)
	flags     uint32               // status flags of the next callback
	tims      []CallbackTiming     // records not yet taken
	lastTim   CallbackTiming
	haveTim   bool
}

var fakeEpoch = time.Now()

func (r *goRing) clock() time.Duration {
	if r.now != nil {
		return r.now()
	}
	return time.Since(fakeEpoch)
}

// record appends a callback record as the C callback does. r.mu held.
func (r *goRing) record(frames, dry int) {
	t := CallbackTiming{Start: r.clock(), Frames: frames, Flags: r.flags, Buffered: len(r.buf) / r.ch, Dry: dry}
	r.flags = 0
	if r.rate > 0 {
		t.Current = t.Start.Seconds()
		if r.output {
			t.BufferTime = t.Current + fakeDeviceDelay.Seconds()
		} else {
			t.BufferTime = t.Current - fakeDeviceDelay.Seconds()
		}
	}
	if len(r.tims) < 1024 {
		r.tims = append(r.tims, t)
	}
	r.lastTim, r.haveTim = t, true
}

func (r *goRing) timings(dst []CallbackTiming) (int, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := copy(dst, r.tims)
	r.tims = r.tims[:copy(r.tims, r.tims[n:])]
	return n, 0
}

func (r *goRing) last() (CallbackTiming, time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastTim, r.clock(), r.haveTim
}

func (r *goRing) write(p []int16, gen uint32) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen != r.gen { // stale: dropped, as the C callback would
		return len(p) / r.ch
	}
	n := min(len(p)/r.ch, r.cap-len(r.buf)/r.ch)
	r.buf = append(r.buf, p[:n*r.ch]...)
	return n
}

func (r *goRing) read(p []int16) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := min(len(p), len(r.buf)) / r.ch
	copy(p, r.buf[:n*r.ch])
	r.buf = r.buf[n*r.ch:]
	return n
}

func (r *goRing) buffered() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.buf) / r.ch
}

func (r *goRing) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
}

func (r *goRing) flushGen() uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gen
}

func (r *goRing) prime() {}

func (r *goRing) drop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = r.buf[:0]
}

func (r *goRing) stats() ringStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

func (r *goRing) free() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.freed = true
}

// render plays frames (output device side).
func (r *goRing) render(frames int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.flushed != r.gen {
		r.flushed = r.gen
		r.buf = r.buf[:0]
	}
	n := min(frames, len(r.buf)/r.ch)
	r.played = append(r.played, r.buf[:n*r.ch]...)
	r.buf = r.buf[n*r.ch:]
	if n < frames {
		r.st.underrunCallbacks++
		r.st.underrunFrames += uint64(frames - n)
		r.played = append(r.played, make([]int16, (frames-n)*r.ch)...)
	}
	r.st.callbacks++
	r.record(frames, frames-n)
}

// capture records frames of a ramp (input device side).
func (r *goRing) capture(frames int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := 0; i < frames; i++ {
		if len(r.buf)/r.ch >= r.cap {
			r.st.overrunFrames++
			continue
		}
		for c := 0; c < r.ch; c++ {
			r.buf = append(r.buf, r.nextInput)
		}
		r.nextInput++
	}
	r.st.callbacks++
	r.record(frames, 0)
}

// logRecorder is an slog.Handler that keeps every record.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r)
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// count returns how many records at level have a message containing msg.
func (l *logRecorder) count(level slog.Level, msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if r.Level == level && containsFold(r.Message, msg) {
			n++
		}
	}
	return n
}

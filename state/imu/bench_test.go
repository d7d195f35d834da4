package imu

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/i2c/i2ctest"
	"periph.io/x/conn/v3/physic"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/state"
)

// replayBus answers the init sequence and then serves the recorded sample
// reads in a loop without Playback's checks, so the benchmark measures the
// module, not the fake bus.
type replayBus struct {
	init    []i2ctest.IO
	samples [][]byte
	i, k    int
}

func newReplayBus() *replayBus {
	ops := DefaultRecording()
	r := &replayBus{init: ops[:recordingInitOps]}
	for _, op := range ops[recordingInitOps:] {
		r.samples = append(r.samples, op.R)
	}
	return r
}

func (r *replayBus) String() string                  { return "replay" }
func (r *replayBus) SetSpeed(physic.Frequency) error { return nil }
func (r *replayBus) Close() error                    { return nil }
func (r *replayBus) Tx(addr uint16, w, rd []byte) error {
	if r.i < len(r.init) {
		copy(rd, r.init[r.i].R)
		r.i++
		return nil
	}
	copy(rd, r.samples[r.k])
	r.k = (r.k + 1) % len(r.samples)
	return nil
}

type countEmitter struct{ n atomic.Int64 }

func (c *countEmitter) Emit(m protocol.Message) error {
	c.n.Add(1)
	m.Envelope().EventID = "e"
	_, err := protocol.Marshal(m)
	return err
}

func benchModule(b *testing.B, clk clock.Clock, em state.Emitter) *Module {
	deps := state.Deps{Clock: clk}
	m, err := New(Config{Enabled: true, SampleHz: 200, PublishHz: 10, AccelRangeG: 4, GyroRangeDPS: 500}, busOpener{newReplayBus()}, deps)
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Open(); err != nil {
		b.Fatal(err)
	}
	m.start(state.NewPublisher(Name, em, deps))
	return m
}

type busOpener struct{ b i2c.BusCloser }

func (o busOpener) OpenI2C(string) (i2c.BusCloser, error) { return o.b, nil }

// Cost of one IMU sample: burst read decode, motion detector, coalescer
// update, and (every 20th sample) the flush with its events encoded for
// the wire. Reports the share of one core this costs at 200 Hz.
func BenchmarkIMUSample(b *testing.B) {
	em := &countEmitter{}
	m := benchModule(b, clock.NewFake(), em)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if err := m.step(time.Duration(i) * 5 * time.Millisecond); err != nil {
			b.Fatal(err)
		}
		i++
	}
	nsPerSample := float64(b.Elapsed().Nanoseconds()) / float64(i)
	b.ReportMetric(nsPerSample*200/1e9*100, "%core@200Hz")
	b.ReportMetric(float64(em.n.Load())/float64(i)*200, "events/s@200Hz")
}

// The real sampling loop at 200 Hz on the real clock (timer wake-ups
// included) for one second per op; reports the process CPU time it used as
// a share of one core.
func BenchmarkIMURun200Hz(b *testing.B) {
	em := &countEmitter{}
	m := benchModule(b, clock.NewReal(), em)
	b.ResetTimer()
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		m.Run(ctx, m.pub)
		cancel()
	}
	wall := time.Since(start)
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano()-before.Utime.Nano()) + time.Duration(after.Stime.Nano()-before.Stime.Nano())
	b.ReportMetric(float64(cpu)/float64(wall)*100, "%core")
	b.ReportMetric(float64(m.samples.Value())/wall.Seconds(), "samples/s")
	b.ReportMetric(float64(m.overruns.Value())/wall.Seconds(), "overruns/s")
}

// Baseline for BenchmarkIMURun200Hz: an empty 200 Hz timer loop on the real
// clock, the share of a core the wake-ups alone cost on this machine.
func BenchmarkTimer200HzBaseline(b *testing.B) {
	clk := clock.NewReal()
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	for range b.N {
		t := clk.NewTimer(5 * time.Millisecond)
		for range 200 {
			<-t.C()
			t.Reset(5 * time.Millisecond)
		}
		t.Stop()
	}
	wall := time.Since(start)
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano()-before.Utime.Nano()) + time.Duration(after.Stime.Nano()-before.Stime.Nano())
	b.ReportMetric(float64(cpu)/float64(wall)*100, "%core")
}

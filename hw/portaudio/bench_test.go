//go:build portaudio && cgo

package portaudio

import (
	"context"
	"fmt"
	"math"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/metrics"
)

// BenchmarkHandoff compares the device-side lateness of the Sink's hand-off
// design (Go writes a C ring, a C callback plays it) with the PortAudio
// callback into Go and with blocking writes from a goroutine locked to its
// OS thread, in the same run, alternating designs, while every P runs a
// spinning goroutine and another keeps the GC marking ~64 MB of pointers.
// Run it once (it takes ~15 s per load condition):
//
//	scripts/with-pulse.sh go test -tags portaudio -run '^$' -bench Handoff -benchtime 1x ./hw/portaudio/
func BenchmarkHandoff(b *testing.B) {
	for _, loaded := range []bool{true, false} {
		name := "idle"
		if loaded {
			name = "saturated"
		}
		b.Run(name, func(b *testing.B) { benchHandoff(b, loaded) })
	}
}

func benchHandoff(b *testing.B, loaded bool) {
	_, _, out := openTestHost(b, HostConfig{})
	rate := out.DefaultSampleRate
	p := handoffParams{
		dev: out, rate: rate, ch: min(out.MaxOutputChannels, 2), period: rate / 100,
		latency: max(out.DefaultLowOutputLatency, minDevicePeriods*10*time.Millisecond),
		leadMS:  DefaultSinkBufferMS, srcRate: 24000, duration: 2 * time.Second,
	}
	phase := 0
	p.fill = func(dst []int16) {
		for i := range dst {
			dst[i] = int16(6000 * math.Sin(2*math.Pi*440*float64(phase)/24000))
			phase++
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var load *loadGenerator
	if loaded {
		load = startLoad(ctx)
		time.Sleep(200 * time.Millisecond)
	}
	results := map[string]*handoffResult{}
	order := []string{"cring", "gocallback", "blocking"}
	measure := map[string]func(handoffParams) (handoffResult, error){
		"cring": measureCRing, "gocallback": measureGoCallback, "blocking": measureBlocking,
	}
	b.ResetTimer()
	for round := 0; round < 2; round++ {
		for _, d := range order {
			r, err := measure[d](p)
			if err != nil {
				b.Fatalf("%s: %v", d, err)
			}
			acc := results[d]
			if acc == nil {
				acc = &handoffResult{Design: d}
				results[d] = acc
			}
			acc.Lateness = append(acc.Lateness, r.Lateness...)
			acc.FeederLate = append(acc.FeederLate, r.FeederLate...)
			acc.Underruns += r.Underruns
			acc.Periods += r.Periods
		}
	}
	b.StopTimer()
	if load != nil {
		load.Stop()
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	var tab strings.Builder
	fmt.Fprintf(&tab, "device %q %d Hz x %d ch, period %d frames, suggested latency %v, lead %d ms\n", out.Name, rate, p.ch, p.period, p.latency, p.leadMS)
	fmt.Fprintf(&tab, "%-11s %8s %10s %10s %10s %9s\n", "design", "periods", "p50", "p99", "max", "underruns")
	for _, d := range order {
		r := results[d]
		fmt.Fprintf(&tab, "%-11s %8d %10v %10v %10v %9d\n", d, r.Periods, percentile(r.Lateness, 50), percentile(r.Lateness, 99), percentile(r.Lateness, 100), r.Underruns)
		b.ReportMetric(us(percentile(r.Lateness, 99)), d+"-p99-µs")
		b.ReportMetric(us(percentile(r.Lateness, 100)), d+"-max-µs")
		b.ReportMetric(float64(r.Underruns), d+"-underruns")
	}
	c := results["cring"]
	fmt.Fprintf(&tab, "cring Go feeder wake-up lateness (absorbed by the lead): p99 %v, max %v\n", percentile(c.FeederLate, 99), percentile(c.FeederLate, 100))
	b.ReportMetric(us(percentile(c.FeederLate, 99)), "cring-feeder-p99-µs")
	b.ReportMetric(us(percentile(c.FeederLate, 100)), "cring-feeder-max-µs")
	g := results["gocallback"]
	if p99 := percentile(c.Lateness, 99); p99 > 0 {
		b.ReportMetric(float64(percentile(g.Lateness, 99))/float64(p99), "gocb/cring-p99-ratio")
		b.ReportMetric(float64(percentile(g.Lateness, 100))/float64(percentile(c.Lateness, 100)), "gocb/cring-max-ratio")
	}
	b.Log("\n" + tab.String())
}

// BenchmarkFullDuplexCPU measures the process CPU time per minute of
// full-duplex audio through the real Sink and Source: 24 kHz TTS written in
// 10 ms periods (resampled and upmixed to the device) while the mic is read
// in 20 ms frames at 16 kHz (downmixed and resampled), including
// PortAudio's and the ALSA/PulseAudio client's threads.
//
//	scripts/with-pulse.sh go test -tags portaudio -run '^$' -bench FullDuplexCPU -benchtime 1x ./hw/portaudio/
func BenchmarkFullDuplexCPU(b *testing.B) {
	h, _, _ := openTestHost(b, HostConfig{Metrics: metrics.NewRegistry()})
	sink, err := h.NewSink(SinkConfig{})
	if err != nil {
		b.Fatal(err)
	}
	src, err := h.NewSource(SourceConfig{})
	if err != nil {
		b.Fatal(err)
	}
	const dur = 10 * time.Second
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]int16, 320)
		for end := time.Now().Add(dur); time.Now().Before(end); {
			if _, err := src.Read(buf); err != nil {
				return
			}
		}
	}()
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	t0 := time.Now()
	blk := make([]int16, sink.PeriodFrames())
	phase := 0
	b.ResetTimer()
	for end := time.Now().Add(dur); time.Now().Before(end); {
		for i := range blk {
			blk[i] = int16(6000 * math.Sin(2*math.Pi*440*float64(phase)/float64(hw.TTSFormat.SampleRate)))
			phase++
		}
		if err := sink.Write(blk); err != nil {
			b.Fatal(err)
		}
	}
	<-done
	b.StopTimer()
	wall := time.Since(t0)
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(syscall.TimevalToNsec(ru1.Utime)-syscall.TimevalToNsec(ru0.Utime)) +
		time.Duration(syscall.TimevalToNsec(ru1.Stime)-syscall.TimevalToNsec(ru0.Stime))
	perMin := time.Duration(float64(cpu) * float64(time.Minute) / float64(wall))
	b.ReportMetric(perMin.Seconds(), "cpu-s/min-audio")
	b.ReportMetric(100*float64(cpu)/float64(wall), "%cpu")
	b.Logf("%v of full-duplex audio used %v CPU: %.2f s per minute (%.1f%% of one core)", wall.Round(time.Millisecond), cpu.Round(time.Millisecond), perMin.Seconds(), 100*float64(cpu)/float64(wall))
}

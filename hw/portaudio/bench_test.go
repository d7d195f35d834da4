//go:build portaudio && cgo

package portaudio

import (
	"math"
	"syscall"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/metrics"
)

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

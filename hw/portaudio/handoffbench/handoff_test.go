//go:build portaudio && cgo

package handoffbench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/hw/hwtest"
	"github.com/robot-agent/robot-agent/hw/portaudio"
)

// setup opens a Host on the default output device (the private
// PulseAudio null sink under scripts/with-pulse.sh) and the shared
// parameters. HANDOFF_PERIODS sets the periods per design (default 10000).
func setup(b *testing.B, rt int) (*portaudio.Host, *Recorder, Params) {
	b.Helper()
	hwtest.LockAudio(b)
	rec := &Recorder{}
	h, err := portaudio.NewHost(portaudio.HostConfig{Timing: rec.Hook})
	if err != nil {
		hwtest.SkipOrFail(b, "PortAudio: "+err.Error())
	}
	b.Cleanup(func() { h.Close() })
	out, err := portaudio.Match(h.Devices(), "", true)
	if err != nil {
		hwtest.SkipOrFail(b, err.Error())
	}
	periods := 10000
	if v := os.Getenv("HANDOFF_PERIODS"); v != "" {
		if periods, err = strconv.Atoi(v); err != nil || periods < 100 {
			b.Fatalf("HANDOFF_PERIODS=%q: want a number >= 100", v)
		}
	}
	rate := out.DefaultSampleRate
	p := Params{
		Dev: out, Rate: rate, Ch: min(out.MaxOutputChannels, 2), Period: rate / 100,
		// What the Sink asks for: the device's low latency, at least 3 periods.
		Latency: max(out.DefaultLowOutputLatency, 30*time.Millisecond),
		LeadMS:  portaudio.DefaultSinkBufferMS, Periods: periods, Realtime: rt,
	}
	return h, rec, p
}

func openSink(h *portaudio.Host, p Params) func() (*portaudio.Sink, error) {
	return func() (*portaudio.Sink, error) {
		rt := p.Realtime
		if rt == 0 {
			rt = -1
		}
		return h.NewSink(portaudio.SinkConfig{
			DeviceConfig: portaudio.DeviceConfig{Device: p.Dev.Name, SampleRate: p.Rate, Channels: p.Ch, PeriodMS: 10,
				Latency: p.Latency, RealtimePriority: rt},
			BufferMS: p.LeadMS,
		})
	}
}

// rtGranted reports whether this process may use SCHED_FIFO at prio (the
// sub-benchmarks with real-time scheduling skip where it is not).
func rtGranted(prio int) bool {
	done := make(chan bool)
	go func() {
		// A throwaway locked thread: it exits with the goroutine.
		lockThread()
		done <- threadRealtime(prio) == nil
	}()
	return <-done
}

// BenchmarkHandoff measures, in the same run with designs alternating, how
// late the device side starts each period (against the device cadence)
// and how many device underflows PortAudio reports, for the Sink's C ring,
// a PortAudio callback into Go and blocking writes; idle and with every P
// spinning plus a GC-churning allocator; with the device thread at
// SCHED_FIFO 20 (rt, where permitted) and at normal priority (nort).
//
//	scripts/with-pulse.sh go test -tags portaudio -run '^$' -bench Handoff -benchtime 1x -timeout 2h ./hw/portaudio/handoffbench/
func BenchmarkHandoff(b *testing.B) {
	for _, load := range []string{"idle", "saturated"} {
		for _, sched := range []string{"rt", "nort"} {
			b.Run(load+"/"+sched, func(b *testing.B) {
				prio := 0
				if sched == "rt" {
					if prio = 20; !rtGranted(prio) {
						b.Skip("SCHED_FIFO not permitted here (needs CAP_SYS_NICE or RLIMIT_RTPRIO >= 20)")
					}
				}
				benchHandoff(b, load == "saturated", prio)
			})
		}
	}
}

func benchHandoff(b *testing.B, loaded bool, rt int) {
	h, rec, p := setup(b, rt)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var load *Load
	if loaded {
		load = StartLoad(ctx)
		time.Sleep(200 * time.Millisecond)
	}
	measure := []func() (Result, error){
		func() (Result, error) { return MeasureCRing(p, openSink(h, p), rec) },
		func() (Result, error) { return MeasureGoCallback(p) },
		func() (Result, error) { return MeasureBlocking(p) },
	}
	var results []Result
	b.ResetTimer()
	for _, m := range measure {
		r, err := m()
		if err != nil {
			b.Fatal(err)
		}
		results = append(results, r)
	}
	b.StopTimer()
	if load != nil {
		load.Stop()
	}
	b.Log("\n" + table(p, loaded, results))
	for _, r := range results {
		b.ReportMetric(us(Percentile(r.Lateness, 99)), r.Design+"-p99-µs")
		b.ReportMetric(us(Percentile(r.Lateness, 99.9)), r.Design+"-p99.9-µs")
		b.ReportMetric(us(Percentile(r.Lateness, 100)), r.Design+"-max-µs")
		b.ReportMetric(float64(r.DeviceUnderflows), r.Design+"-dev-underflows")
	}
	if c, g := Percentile(results[0].Lateness, 99), Percentile(results[1].Lateness, 99); c > 0 {
		b.ReportMetric(float64(g)/float64(c), "gocb/cring-p99")
	}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func table(p Params, loaded bool, results []Result) string {
	var t strings.Builder
	cond := "idle"
	if loaded {
		cond = "saturated"
	}
	fmt.Fprintf(&t, "%s, device %q %d Hz x %d ch, period %d frames, suggested latency %v, cring lead %d ms, SCHED_FIFO %d\n",
		cond, p.Dev.Name, p.Rate, p.Ch, p.Period, p.Latency, p.LeadMS, p.Realtime)
	fmt.Fprintf(&t, "%-11s %7s %10s %10s %10s %10s %12s %9s %4s %12s\n", "design", "periods", "p50", "p99", "p99.9", "max", "dev-underfl", "ring-dry", "rt", "dac-jit-p99")
	for _, r := range results {
		if r.Short {
			r.Design += "*"
		}
		fmt.Fprintf(&t, "%-11s %7d %10s %10s %10s %10s %12d %9d %4v %12s\n", r.Design, len(r.Lateness),
			ms(Percentile(r.Lateness, 50)), ms(Percentile(r.Lateness, 99)), ms(Percentile(r.Lateness, 99.9)), ms(Percentile(r.Lateness, 100)),
			r.DeviceUnderflows, r.RingDry, r.RealtimeGranted || (r.Design == "cring" && p.Realtime > 0), ms(Percentile(r.Jitter, 99)))
	}
	fmt.Fprintf(&t, "(* the device side fell behind: fewer periods than asked for in twice their duration)\n")
	return t.String()
}

// BenchmarkHandoffSoak runs the chosen design (the Sink's C ring) under
// saturation for HANDOFF_SOAK (e.g. 10m) and prints the worst lateness,
// device underflows and ring-dry periods of every minute, so a tail
// regression shows. Skipped without HANDOFF_SOAK. HANDOFF_RT=0 turns
// SCHED_FIFO off.
//
//	HANDOFF_SOAK=10m scripts/with-pulse.sh go test -tags portaudio -run '^$' -bench HandoffSoak -benchtime 1x -timeout 1h ./hw/portaudio/handoffbench/
func BenchmarkHandoffSoak(b *testing.B) {
	d, err := time.ParseDuration(os.Getenv("HANDOFF_SOAK"))
	if err != nil || d < time.Minute {
		b.Skip("set HANDOFF_SOAK to a duration of at least 1m")
	}
	rt := 20
	if os.Getenv("HANDOFF_RT") == "0" || !rtGranted(rt) {
		rt = 0
	}
	h, rec, p := setup(b, rt)
	p.Periods = int(d.Seconds() * float64(p.Rate) / float64(p.Period))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	load := StartLoad(ctx)
	var lines []string
	p.Minute = func(i int, r Result) {
		line := fmt.Sprintf("minute %2d: %5d periods, lateness p99 %s p99.9 %s max %s, device underflows %d, ring dry %d",
			i+1, len(r.Lateness), ms(Percentile(r.Lateness, 99)), ms(Percentile(r.Lateness, 99.9)), ms(Percentile(r.Lateness, 100)), r.DeviceUnderflows, r.RingDry)
		lines = append(lines, line)
		fmt.Fprintln(os.Stderr, "handoff soak "+line)
	}
	b.ResetTimer()
	r, err := MeasureCRing(p, openSink(h, p), rec)
	b.StopTimer()
	load.Stop()
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("\nsoak %v saturated, SCHED_FIFO %d:\n%s\n%s", d, rt, strings.Join(lines, "\n"), table(p, true, []Result{r}))
	b.ReportMetric(us(Percentile(r.Lateness, 100)), "cring-max-µs")
	b.ReportMetric(float64(r.DeviceUnderflows), "cring-dev-underflows")
}

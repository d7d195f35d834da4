package playback

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/robot-agent/robot-agent/metrics"
)

// latencyWindow is how many of the most recent measurements Latencies
// computes percentiles over.
const latencyWindow = 4096

// latencyRecorder keeps the last latencyWindow push-to-device latencies in a
// preallocated ring of atomics. One goroutine records (the Fill goroutine);
// any goroutine may read. A reader racing the writer may see a measurement
// replaced by a newer one mid-snapshot, which is harmless for percentiles.
type latencyRecorder struct {
	n    atomic.Uint64
	vals [latencyWindow]atomic.Int64
	// hist, if set, also gets every measurement (metrics.go).
	hist *metrics.Histogram
}

// record stores d. Single writer only; never allocates.
func (l *latencyRecorder) record(d time.Duration) {
	if l.hist != nil {
		l.hist.ObserveDuration(d)
	}
	i := l.n.Load()
	l.vals[i%latencyWindow].Store(int64(d))
	l.n.Store(i + 1)
}

// percentiles returns the nearest-rank p50 and p99 of the recent window,
// the number of measurements in the window, and the total ever recorded.
// It allocates; do not call it on the hot path.
func (l *latencyRecorder) percentiles() (p50, p99 time.Duration, window int, total uint64) {
	total = l.n.Load()
	k := total
	if k > latencyWindow {
		k = latencyWindow
	}
	if k == 0 {
		return 0, 0, 0, 0
	}
	v := make([]int64, k)
	for i := range v {
		v[i] = l.vals[(total-1-uint64(i))%latencyWindow].Load()
	}
	slices.Sort(v)
	return time.Duration(v[rank(len(v), 50)]), time.Duration(v[rank(len(v), 99)]), int(k), total
}

// rank is the nearest-rank index of percentile p in n sorted values.
func rank(n, p int) int {
	i := (n*p + 99) / 100 // ceil(n*p/100)
	if i < 1 {
		i = 1
	}
	return i - 1
}

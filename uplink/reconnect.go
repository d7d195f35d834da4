package uplink

import (
	"math/rand/v2"
	"time"

	"github.com/robot-agent/robot-agent/clock"
)

// reconnectBackoff is the reconnect policy (docs/protocol.md 3.7):
//
//   - A session that reached hello and stayed up at least stable (it did not
//     "fail early") resets the attempt counter, and opens a fast window:
//     for fastWindow after it ended, every delay is capped at fastCap. The
//     first retry is then uniform(0, base) — sub-second — and a gateway
//     that restarts is found again within fastCap of being back.
//   - Failed dials and sessions that end early grow the delay:
//     uniform(0, min(cap, base·2^attempt)) (full jitter).
//   - A gateway's go_away delay, when given, replaces the computed one.
//
// Only the Run goroutine uses it.
type reconnectBackoff struct {
	base, cap  time.Duration
	stable     time.Duration // a session at least this long did not fail early
	fastCap    time.Duration // delay cap inside the fast window
	fastWindow time.Duration // how long after a stable session delays stay fast
	attempt    int
	fastUntil  time.Time
}

// next returns the delay before the next dial. now is the time the last
// attempt ended; established says whether it reached hello, lasted how long
// the session was up (0 for a failed dial); goAwayAfter is the gateway's
// go_away delay (0: none).
func (b *reconnectBackoff) next(now time.Time, established bool, lasted, goAwayAfter time.Duration) time.Duration {
	if established && lasted >= b.stable {
		b.attempt = 0
		b.fastUntil = now.Add(b.fastWindow)
	}
	limit := b.cap
	if now.Before(b.fastUntil) {
		limit = min(limit, b.fastCap)
	}
	d := backoff(b.base, limit, b.attempt)
	b.attempt++
	if goAwayAfter > 0 {
		return goAwayAfter
	}
	return d
}

// monoTime is the clock's monotonic reading as a time.Time: session
// lengths and the fast window are measured on it, so a step of the wall
// clock (NTP, an RTC set after boot) neither makes a short session look
// stable nor a stable one short.
func monoTime(clk clock.Clock) time.Time { return time.Time{}.Add(clk.Mono()) }

// backoff returns a full-jitter delay: uniform in [0, min(cap, base*2^n)].
func backoff(base, cap time.Duration, attempt int) time.Duration {
	d := base
	for i := 0; i < attempt && d < cap; i++ {
		d *= 2
	}
	if d > cap {
		d = cap
	}
	return time.Duration(rand.Int64N(int64(d) + 1))
}

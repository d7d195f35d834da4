package portaudio

import (
	"testing"
	"time"
)

// callbacks builds a stream of 10 ms callbacks at 48 kHz starting at 1 s,
// with start offsets (lateness) and buffer-time offsets per index.
func callbacks(n int, late, dacOff map[int]time.Duration) []CallbackTiming {
	const frames, rate = 480, 48000
	out := make([]CallbackTiming, n)
	for i := range out {
		start := time.Second + time.Duration(i)*10*time.Millisecond
		cur := start.Seconds()
		out[i] = CallbackTiming{
			Start: start + late[i], Frames: frames,
			Current: cur, BufferTime: cur + 0.03 + dacOff[i].Seconds(),
		}
	}
	return out
}

func TestCadenceLateness(t *testing.T) {
	for _, tc := range []struct {
		name     string
		late     map[int]time.Duration
		dac      map[int]time.Duration
		wantMax  time.Duration
		wantAt   int
		wantJit  time.Duration
		slowPPM  float64 // device clock slower than the system clock
		shiftAt  int     // from this callback on, 50 ms later, the first flagged as an underflow
		measured int
	}{
		// An underflow moves the device timeline on: a new anchor, not
		// 50 ms of lateness for ever after.
		{name: "underflow restarts the cadence", shiftAt: 600, wantMax: 0, measured: 974},
		{name: "on time", wantMax: 0, measured: 975},
		{name: "one late callback", late: map[int]time.Duration{500: 3 * time.Millisecond}, wantMax: 3 * time.Millisecond, wantAt: 500, measured: 975},
		// A callback that overruns its period makes the following ones late
		// until the device side catches up.
		{name: "burst", late: map[int]time.Duration{600: 12 * time.Millisecond, 601: 4 * time.Millisecond}, wantMax: 12 * time.Millisecond, wantAt: 600, measured: 975},
		{name: "dac jitter", dac: map[int]time.Duration{700: 2 * time.Millisecond}, wantJit: 2 * time.Millisecond, measured: 975},
		// 500 ppm slow over 10 s drifts 5 ms; the anchor follows it.
		{name: "slow device clock", slowPPM: 500, wantMax: 100 * time.Microsecond, measured: 975},
		// Lateness during the warm-up (PortAudio priming) is not measured.
		{name: "warm-up ignored", late: map[int]time.Duration{3: 30 * time.Millisecond}, wantMax: 0, measured: 975},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cbs := callbacks(1000, tc.late, tc.dac)
			c := NewCadence(48000)
			var maxLate, maxJit time.Duration
			at, n := -1, 0
			for i, cb := range cbs {
				if tc.slowPPM != 0 {
					cb.Start += time.Duration(float64(cb.Start-time.Second) * tc.slowPPM / 1e6)
				}
				if tc.shiftAt > 0 && i >= tc.shiftAt {
					cb.Start += 50 * time.Millisecond
					cb.BufferTime += 0.05
					if i == tc.shiftAt {
						cb.Flags |= FlagOutputUnderflow
					}
				}
				late, jit, _, ok := c.Observe(cb)
				maxJit = max(maxJit, jit)
				if !ok {
					continue
				}
				n++
				if late > maxLate {
					maxLate, at = late, i
				}
			}
			if n != tc.measured {
				t.Errorf("measured %d callbacks, want %d", n, tc.measured)
			}
			if tc.slowPPM != 0 {
				if maxLate > tc.wantMax {
					t.Errorf("max lateness %v with a slow device clock, want <= %v", maxLate, tc.wantMax)
				}
			} else if d := maxLate - tc.wantMax; d < -30*time.Microsecond || d > time.Microsecond { // the anchor creeps by DriftPPM
				t.Errorf("max lateness %v, want %v", maxLate, tc.wantMax)
			}
			if tc.wantMax > 0 && tc.slowPPM == 0 && at != tc.wantAt {
				t.Errorf("max lateness at callback %d, want %d", at, tc.wantAt)
			}
			if tc.shiftAt > 0 {
				tc.wantJit = 50 * time.Millisecond // the gap itself
			}
			if d := maxJit - tc.wantJit; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("max jitter %v, want %v", maxJit, tc.wantJit)
			}
		})
	}
}

func TestCallbackTimingFlagsAndDelay(t *testing.T) {
	cb := CallbackTiming{Current: 10, BufferTime: 10.025, Flags: FlagOutputUnderflow | FlagInputOverflow}
	if d := cb.DeviceDelay(true); d < 24*time.Millisecond || d > 26*time.Millisecond {
		t.Errorf("output device delay %v, want 25ms", d)
	}
	if d := cb.DeviceDelay(false); d != 0 {
		t.Errorf("input device delay of an output-looking record %v, want 0 (implausible)", d)
	}
	if !cb.DeviceUnderflow(true) || cb.DeviceUnderflow(false) || !cb.DeviceOverflow(false) || cb.DeviceOverflow(true) {
		t.Errorf("flags %#x read wrongly", cb.Flags)
	}
	if d := (CallbackTiming{}).DeviceDelay(true); d != 0 {
		t.Errorf("no time info: delay %v, want 0", d)
	}
}

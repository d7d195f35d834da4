package imu

import (
	"math"
	"time"
)

// Event is a derived motion event.
type Event uint8

// Motion events, published as "imu.motion" {"event": name}.
const (
	EventNone     Event = iota
	EventPickedUp       // "picked_up": lifted
	EventShaken         // "shaken": shaken back and forth
	EventFellOver       // "fell_over": lying tilted past fall_tilt_deg
	EventUpright        // "upright": back upright after fell_over
)

var eventNames = [...]string{"", "picked_up", "shaken", "fell_over", "upright"}

func (e Event) String() string {
	if int(e) < len(eventNames) {
		return eventNames[e]
	}
	return "unknown"
}

// gravityTau is the time constant of the low-pass filter that estimates
// the gravity vector from the accelerometer.
const gravityTau = 500 * time.Millisecond

// uprightHysteresis: after fell_over, tilt must come back below
// fall_tilt_deg minus this before "upright".
const uprightHysteresis = 15.0

// Motion derives tilt and motion events from samples. The heuristics:
//
//   - gravity g is the accelerometer low-passed with a 500 ms time constant;
//     linear acceleration is a − g; tilt is the angle between g and the
//     sensor's +Z axis (0° upright, 90° on its side, 180° upside down);
//     pitch = atan2(−gx, √(gy²+gz²)), roll = atan2(gy, gz);
//   - fell_over: tilt > fall_tilt_deg for fall_hold; upright: back below
//     fall_tilt_deg − 15° for fall_hold;
//   - shaken: shake_peaks rises of |a − g| above shake_ms2 within
//     shake_window;
//   - picked_up: the component of a − g along g (upward) above pickup_ms2
//     for pickup_hold, while not fallen and not shaking.
//
// Each kind has a cooldown. A Motion is used by one goroutine.
type Motion struct {
	cfg   MotionConfig
	alpha float64

	g    [3]float64
	init bool
	lin  [3]float64

	tilt, pitch, roll float64

	fallen       bool
	fallSince    time.Duration // when the tilt condition started (-1: not)
	pickSince    time.Duration
	above        bool
	peaks        [100]time.Duration
	npeaks, head int
	last         [5]time.Duration // last event time per kind
	fired        [5]bool
}

// NewMotion returns a detector for samples taken every period.
func NewMotion(cfg MotionConfig, period time.Duration) *Motion {
	dt := period.Seconds()
	return &Motion{cfg: cfg, alpha: dt / (gravityTau.Seconds() + dt), fallSince: -1, pickSince: -1}
}

// Tilt returns pitch, roll and tilt in degrees.
func (d *Motion) Tilt() (pitch, roll, tilt float64) { return d.pitch, d.roll, d.tilt }

// Update feeds one sample captured at at and returns the event it
// completes, if any.
func (d *Motion) Update(s *Sample, at time.Duration) Event {
	if !d.init {
		d.g, d.init = s.Accel, true
	}
	for i := range 3 {
		d.g[i] += d.alpha * (s.Accel[i] - d.g[i])
		d.lin[i] = s.Accel[i] - d.g[i]
	}
	gx, gy, gz := d.g[0], d.g[1], d.g[2]
	gn := math.Sqrt(gx*gx + gy*gy + gz*gz)
	if gn < 1e-6 {
		return EventNone // free fall or a dead sensor: no direction
	}
	const deg = 180 / math.Pi
	d.tilt = math.Acos(max(-1, min(1, gz/gn))) * deg
	d.pitch = math.Atan2(-gx, math.Sqrt(gy*gy+gz*gz)) * deg
	d.roll = math.Atan2(gy, gz) * deg

	// Shake peaks.
	ln := math.Sqrt(d.lin[0]*d.lin[0] + d.lin[1]*d.lin[1] + d.lin[2]*d.lin[2])
	if ln > d.cfg.ShakeMS2 {
		if !d.above {
			d.above = true
			d.addPeak(at)
		}
	} else if ln < d.cfg.ShakeMS2*0.7 {
		d.above = false
	}
	n := d.peaksSince(at - d.cfg.ShakeWindow)
	shaking := n > 0
	if n >= d.cfg.ShakePeaks {
		d.npeaks = 0
		if ev := d.fire(EventShaken, at); ev != EventNone {
			return ev
		}
	}

	// Fall / upright.
	if !d.fallen {
		if d.tilt > d.cfg.FallTiltDeg {
			if d.fallSince < 0 {
				d.fallSince = at
			}
			if at-d.fallSince >= d.cfg.FallHold {
				d.fallen, d.fallSince = true, -1
				if ev := d.fire(EventFellOver, at); ev != EventNone {
					return ev
				}
			}
		} else {
			d.fallSince = -1
		}
	} else {
		if d.tilt < d.cfg.FallTiltDeg-uprightHysteresis {
			if d.fallSince < 0 {
				d.fallSince = at
			}
			if at-d.fallSince >= d.cfg.FallHold {
				d.fallen, d.fallSince = false, -1
				if ev := d.fire(EventUpright, at); ev != EventNone {
					return ev
				}
			}
		} else {
			d.fallSince = -1
		}
	}

	// Pick-up.
	up := (d.lin[0]*gx + d.lin[1]*gy + d.lin[2]*gz) / gn
	if !d.fallen && !shaking && up > d.cfg.PickupMS2 {
		if d.pickSince == -1 {
			d.pickSince = at
		}
		if d.pickSince >= 0 && at-d.pickSince >= d.cfg.PickupHold {
			d.pickSince = -2 // fired for this lift; wait for it to end
			return d.fire(EventPickedUp, at)
		}
	} else if up <= d.cfg.PickupMS2 {
		d.pickSince = -1
	}
	return EventNone
}

func (d *Motion) fire(e Event, at time.Duration) Event {
	if d.fired[e] && at-d.last[e] < d.cfg.Cooldown {
		return EventNone
	}
	d.fired[e], d.last[e] = true, at
	return e
}

func (d *Motion) addPeak(at time.Duration) {
	d.peaks[d.head] = at
	d.head = (d.head + 1) % len(d.peaks)
	if d.npeaks < len(d.peaks) {
		d.npeaks++
	}
}

func (d *Motion) peaksSince(from time.Duration) int {
	n := 0
	for i := 1; i <= d.npeaks; i++ {
		if d.peaks[(d.head-i+len(d.peaks))%len(d.peaks)] < from {
			break
		}
		n++
	}
	return n
}

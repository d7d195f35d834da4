package imu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/i2c/i2ctest"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
	"github.com/robot-agent/robot-agent/state"
	"github.com/robot-agent/robot-agent/state/statetest"
)

// busOf returns an hw.I2C handing out b.
type busOf struct{ b i2c.BusCloser }

func (o busOf) OpenI2C(string) (i2c.BusCloser, error) { return o.b, nil }

func playbackConfig() Config {
	return Config{Enabled: true, SampleHz: RecordingHz, PublishHz: 10, AccelRangeG: RecordingAccelG, GyroRangeDPS: RecordingGyroDPS}
}

type run struct {
	em  *statetest.Emitter
	reg *metrics.Registry
	pb  *i2ctest.Playback
	mod *Module
}

// playRecording feeds every sample of the committed recording through the
// module's sampling step, on the recording's own timeline (5 ms apart).
func playRecording(t *testing.T, cfg Config) *run {
	t.Helper()
	r := &run{em: &statetest.Emitter{}, reg: metrics.NewRegistry()}
	r.pb = &i2ctest.Playback{Ops: DefaultRecording(), DontPanic: true}
	deps := state.Deps{Clock: clock.NewFake(), Metrics: r.reg}
	mod, err := New(cfg, busOf{r.pb}, deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := mod.Open(); err != nil {
		t.Fatal(err)
	}
	r.mod = mod
	mod.start(state.NewPublisher(Name, r.em, deps))
	n := len(r.pb.Ops) - recordingInitOps
	for k := range n {
		if err := mod.step(time.Duration(k) * mod.period); err != nil {
			t.Fatalf("sample %d: %v", k, err)
		}
	}
	// Playback.Close verifies every recorded transaction was consumed, in
	// order, with identical writes: periph's check that our register traffic
	// is exactly the recorded one.
	if err := r.pb.Close(); err != nil {
		t.Fatal(err)
	}
	return r
}

func motionEvents(em *statetest.Emitter) (names []string, ts []time.Duration) {
	for _, s := range em.States("imu.motion") {
		var v struct{ Event string }
		json.Unmarshal(s.StateValue, &v)
		names = append(names, v.Event)
		ts = append(ts, time.Duration(s.TS)*time.Microsecond)
	}
	return
}

func TestPlaybackMotionEvents(t *testing.T) {
	r := playRecording(t, playbackConfig())
	names, ts := motionEvents(r.em)
	want := []struct {
		ev       string
		from, to time.Duration
	}{
		{"picked_up", 2000 * time.Millisecond, 2400 * time.Millisecond},
		{"shaken", 4 * time.Second, 5 * time.Second},
		{"fell_over", 9500 * time.Millisecond, 10500 * time.Millisecond},
		{"upright", 12500 * time.Millisecond, 13500 * time.Millisecond},
	}
	if len(names) != len(want) {
		t.Fatalf("motion events %v at %v, want %d", names, ts, len(want))
	}
	for i, w := range want {
		if names[i] != w.ev || ts[i] < w.from || ts[i] > w.to {
			t.Errorf("event %d: %s at %v, want %s in [%v, %v]", i, names[i], ts[i], w.ev, w.from, w.to)
		}
	}
	if errs := r.em.Invalid(); len(errs) > 0 {
		t.Fatal(errs)
	}
}

func vec(t *testing.T, s *protocol.State) map[string]float64 {
	t.Helper()
	var v map[string]float64
	if err := json.Unmarshal(s.StateValue, &v); err != nil {
		t.Fatalf("%s: %v", s.StateValue, err)
	}
	return v
}

// Coalescing: at most publish_hz values per key per second, nothing after
// the first values while the robot is still, and values in documented units.
func TestPlaybackCoalescedRateAndUnits(t *testing.T) {
	r := playRecording(t, playbackConfig())
	samples := r.reg.Value("robot_agent_imu_samples_total")
	if samples != int64(ProfileLength/(5*time.Millisecond)) {
		t.Fatalf("%d samples", samples)
	}
	for _, key := range []string{"imu.accel", "imu.gyro", "imu.tilt"} {
		ev := r.em.States(key)
		perSec := map[int64]int{}
		for _, s := range ev {
			perSec[s.TS/1e6]++
		}
		for sec, n := range perSec {
			if n > 10 {
				t.Errorf("%s: %d events in second %d, want <= publish_hz 10", key, n, sec)
			}
		}
		// Still from 0 to 2 s: only the first value.
		still := 0
		for _, s := range ev {
			if s.TS < 2e6 {
				still++
			}
		}
		if still != 1 {
			t.Errorf("%s: %d events while still (0-2 s), want 1", key, still)
		}
		if len(ev) >= int(samples)/10 {
			t.Errorf("%s: %d events for %d samples: not coalesced", key, len(ev), samples)
		}
	}
	a := vec(t, r.em.States("imu.accel")[0])
	if math.Abs(a["z"]-Gravity) > 0.1 || math.Abs(a["x"]) > 0.1 {
		t.Errorf("still accel %v, want z≈9.81 m/s²", a)
	}
	tilt := r.em.States("imu.tilt")
	if v := vec(t, tilt[0]); math.Abs(v["tilt"]) > 1 {
		t.Errorf("initial tilt %v, want ≈0°", v)
	}
	// Lying on its side (10-12 s): tilt ≈ 90°, roll ≈ 90°.
	var side map[string]float64
	for _, s := range tilt {
		if s.TS > 9.6e6 && s.TS < 12e6 {
			side = vec(t, s)
		}
	}
	if side == nil || math.Abs(side["tilt"]-90) > 3 || math.Abs(side["roll"]-90) > 3 {
		t.Errorf("tilt on its side: %v, want tilt≈90 roll≈90", side)
	}
	// Shaking (4-5.5 s) shows in gyro z (°/s) up to ~120.
	peak := 0.0
	for _, s := range r.em.States("imu.gyro") {
		if s.TS > 4e6 && s.TS < 5.5e6 {
			peak = max(peak, math.Abs(vec(t, s)["z"]))
		}
	}
	if peak < 60 || peak > 130 {
		t.Errorf("gyro z peak while shaken %.1f °/s, want 60..130", peak)
	}
}

// Through Run on the fake clock: one sample per 5 ms tick, flushes at 10 Hz.
func TestRunSamplesAtConfiguredRate(t *testing.T) {
	em := &statetest.Emitter{}
	reg := metrics.NewRegistry()
	clk := clock.NewFake()
	deps := state.Deps{Clock: clk, Metrics: reg}
	mod, err := New(playbackConfig(), SimI2C{}, deps)
	if err != nil {
		t.Fatal(err)
	}
	armed := make(chan struct{}, 1)
	mod.onArm = func() { armed <- struct{}{} }
	if err := mod.Open(); err != nil {
		t.Fatal(err)
	}
	defer mod.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mod.Run(ctx, state.NewPublisher(Name, em, deps)) }()
	for range 200 {
		<-armed
		clk.Advance(5 * time.Millisecond)
	}
	statetest.WaitUntil(t, "200 samples", func() bool { return reg.Value("robot_agent_imu_samples_total") == 200 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if o := reg.Value("robot_agent_imu_overruns_total"); o != 0 {
		t.Fatalf("%d overruns", o)
	}
	// 1 s of a still robot: exactly the first value of each key.
	for _, k := range []string{"imu.accel", "imu.gyro", "imu.tilt"} {
		if n := len(em.States(k)); n != 1 {
			t.Errorf("%s: %d events in 1 s still, want 1", k, n)
		}
	}
}

func TestOverrunIsCounted(t *testing.T) {
	reg := metrics.NewRegistry()
	clk := clock.NewFake()
	deps := state.Deps{Clock: clk, Metrics: reg}
	mod, _ := New(playbackConfig(), SimI2C{}, deps)
	armed := make(chan struct{}, 2)
	mod.onArm = func() { armed <- struct{}{} }
	if err := mod.Open(); err != nil {
		t.Fatal(err)
	}
	defer mod.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mod.Run(ctx, state.NewPublisher(Name, &statetest.Emitter{}, deps)) }()
	<-armed
	clk.Advance(100 * time.Millisecond) // 20 periods at once
	statetest.WaitUntil(t, "one sample", func() bool { return reg.Value("robot_agent_imu_samples_total") == 1 })
	statetest.WaitUntil(t, "overruns", func() bool { return reg.Value("robot_agent_imu_overruns_total") == 19 })
	cancel()
	<-done
}

func TestReadErrorsFailRun(t *testing.T) {
	reg := metrics.NewRegistry()
	clk := clock.NewFake()
	clk.SetAutoAdvance(true)
	deps := state.Deps{Clock: clk, Metrics: reg}
	// Only the init transactions: every sample read fails.
	pb := &i2ctest.Playback{Ops: DefaultRecording()[:recordingInitOps], DontPanic: true}
	mod, _ := New(playbackConfig(), busOf{pb}, deps)
	if err := mod.Open(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- mod.Run(ctx, state.NewPublisher(Name, &statetest.Emitter{}, deps)) }()
	for {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "10 reads in a row failed") {
				t.Fatalf("Run: %v", err)
			}
			if reg.Value("robot_agent_imu_read_errors_total") != 10 {
				t.Fatalf("read errors %d", reg.Value("robot_agent_imu_read_errors_total"))
			}
			return
		default:
			clk.Advance(5 * time.Millisecond)
			time.Sleep(100 * time.Microsecond)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	rec := DefaultRecording()
	wrongWho := append([]i2ctest.IO{{Addr: 0x68, W: []byte{0x75}, R: []byte{0x12}}}, rec[1:]...)
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
		ops  []i2ctest.IO
		want string
	}{
		{"unknown device", nil, wrongWho, "WHO_AM_I at 0x68 is 0x12"},
		{"model mismatch", func(c *Config) { c.Model = "mpu9250" }, rec, `configured as "mpu9250" but WHO_AM_I 0x68 says "mpu6050"`},
		{"nothing on the bus", nil, nil, "read WHO_AM_I"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := playbackConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			mod, err := New(cfg, busOf{&i2ctest.Playback{Ops: tc.ops, DontPanic: true}}, state.Deps{})
			if err != nil {
				t.Fatal(err)
			}
			err = mod.Open()
			if !errors.Is(err, state.ErrUnavailable) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v, want unavailable with %q", err, tc.want)
			}
		})
	}
	// A configuration that does not read back is caught.
	bad := append([]i2ctest.IO(nil), rec[:recordingInitOps]...)
	bad[4] = i2ctest.IO{Addr: 0x68, W: []byte{0x19}, R: []byte{0, 0, 0, 0}}
	mod, _ := New(playbackConfig(), busOf{&i2ctest.Playback{Ops: bad, DontPanic: true}}, state.Deps{})
	if err := mod.Open(); err == nil || !strings.Contains(err.Error(), "read back") {
		t.Fatalf("read-back mismatch: %v", err)
	}
	// No I2C at all.
	mod, _ = New(playbackConfig(), nil, state.Deps{})
	if err := mod.Open(); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("nil bus: %v", err)
	}
}

func TestLoopPlaybackLoops(t *testing.T) {
	lp := NewLoopPlayback(DefaultRecording(), recordingInitOps)
	mpu, err := NewMPU(lp, 0x68, MPUOptions{SampleHz: 200, AccelRangeG: 4, GyroRangeDPS: 500})
	if err != nil {
		t.Fatal(err)
	}
	var s Sample
	n := int(ProfileLength/(5*time.Millisecond)) + 10
	for i := range n {
		if err := mpu.Read(&s); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
	}
	if math.Abs(s.Accel[2]-Gravity) > 0.2 {
		t.Fatalf("looped sample %v", s)
	}
	if err := lp.Tx(0x68, []byte{0x6b, 0}, nil); err == nil {
		t.Fatal("unexpected write accepted by playback")
	}
}

func TestParseRecordingErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"68\n", "line 1: want"},
		{"zz 3b\n", `address "zz"`},
		{"80 3b\n", `address "80"`},
		{"68 3g\n", `write bytes "3g"`},
		{"# c\n68 3b : xx\n", `line 2: read bytes "xx"`},
		{"68 3b :\n", `read bytes ""`},
	} {
		_, err := ParseRecording(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
}

func FuzzParseRecording(f *testing.F) {
	f.Add([]byte("68 75 : 68\n68 6b01\n"))
	f.Add([]byte("# x\n\n7f 00 : ff\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ops, err := ParseRecording(bytes.NewReader(b))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := WriteRecording(&buf, "", ops); err != nil {
			t.Fatal(err)
		}
		again, err := ParseRecording(&buf)
		if err != nil || len(again) != len(ops) {
			t.Fatalf("round trip: %v (%d vs %d)", err, len(again), len(ops))
		}
	})
}

// A still robot (with sensor noise) produces no motion events, and a second
// shake inside the cooldown is not reported twice.
func TestMotionStillAndCooldown(t *testing.T) {
	cfg := playbackConfig().Defaults().Motion
	d := NewMotion(cfg, 5*time.Millisecond)
	sim := NewSimMPU(0x68, func(time.Duration) (a, g [3]float64) { return [3]float64{0, 0, Gravity}, g })
	mpu, err := NewMPU(sim, 0x68, MPUOptions{SampleHz: 200, AccelRangeG: 4, GyroRangeDPS: 500})
	if err != nil {
		t.Fatal(err)
	}
	var s Sample
	for k := range 200 * 60 {
		mpu.Read(&s)
		if ev := d.Update(&s, time.Duration(k)*5*time.Millisecond); ev != EventNone {
			t.Fatalf("still robot: %v at sample %d", ev, k)
		}
	}
	shake := func(t0 time.Duration, n int) (evs []Event) {
		for k := range n {
			at := t0 + time.Duration(k)*5*time.Millisecond
			s := Sample{Accel: [3]float64{14 * math.Sin(2*math.Pi*4*at.Seconds()), 0, Gravity}}
			if ev := d.Update(&s, at); ev != EventNone {
				evs = append(evs, ev)
			}
		}
		return evs
	}
	// Shaking for 3 s: one event per cooldown (2 s), so two.
	evs := shake(time.Minute, 600)
	if len(evs) != 2 || evs[0] != EventShaken || evs[1] != EventShaken {
		t.Fatalf("3 s of shaking: %v, want [shaken shaken]", evs)
	}
}

package imu

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/i2c/i2ctest"
	"periph.io/x/conn/v3/physic"
)

// Profile gives the true motion at time t since the first sample: specific
// force in m/s² (what an accelerometer reads, gravity included) and angular
// rate in °/s, in sensor axes.
type Profile func(t time.Duration) (accel, gyro [3]float64)

// SimMPU is a register-level model of an MPU-6050 on an I²C bus: it
// answers WHO_AM_I, keeps the configuration registers and serves samples of
// a Profile from the data registers, one sample per burst read, at the
// sample rate its SMPLRT_DIV register says. It is what the committed
// recording was captured from (through i2ctest.Record).
//
// SimMPU is safe for concurrent use.
type SimMPU struct {
	Addr    uint16
	Profile Profile
	// Noise is the standard deviation of simulated sensor noise in LSB.
	Noise float64

	mu   sync.Mutex
	regs [128]byte
	k    int    // samples served
	rng  uint64 // xorshift state
}

// NewSimMPU returns a simulated MPU-6050 at addr following p.
func NewSimMPU(addr uint16, p Profile) *SimMPU {
	s := &SimMPU{Addr: addr, Profile: p, Noise: 3, rng: 0x9e3779b97f4a7c15}
	s.regs[regWhoAmI] = 0x68
	s.regs[regPwrMgmt1] = 0x40 // sleep after reset
	return s
}

// String implements i2c.Bus.
func (s *SimMPU) String() string { return "sim-mpu6050" }

// SetSpeed implements i2c.Bus.
func (s *SimMPU) SetSpeed(physic.Frequency) error { return nil }

// Close implements i2c.BusCloser.
func (s *SimMPU) Close() error { return nil }

// Tx implements i2c.Bus with the MPU's register auto-increment.
func (s *SimMPU) Tx(addr uint16, w, r []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if addr != s.Addr {
		return fmt.Errorf("imu: sim: no device at %#x (NACK)", addr)
	}
	if len(w) == 0 {
		return fmt.Errorf("imu: sim: transaction without a register address")
	}
	reg := int(w[0])
	for i, b := range w[1:] {
		if reg+i < len(s.regs) && reg+i != regWhoAmI {
			s.regs[reg+i] = b
		}
	}
	if len(r) == 0 {
		return nil
	}
	if reg == regAccelXoutH {
		s.fillData()
	}
	for i := range r {
		if reg+i >= len(s.regs) {
			return fmt.Errorf("imu: sim: read past register %#x", len(s.regs)-1)
		}
		r[i] = s.regs[reg+i]
	}
	return nil
}

func (s *SimMPU) noise() float64 {
	// xorshift64 + Irwin-Hall approximation of a normal deviate.
	sum := 0.0
	for range 4 {
		s.rng ^= s.rng << 13
		s.rng ^= s.rng >> 7
		s.rng ^= s.rng << 17
		sum += float64(s.rng>>11) / (1 << 53)
	}
	return (sum - 2) * math.Sqrt(3) * s.Noise
}

func (s *SimMPU) fillData() {
	hz := 1000 / (1 + int(s.regs[regSmplrtDiv]))
	t := time.Duration(s.k) * time.Second / time.Duration(hz)
	s.k++
	a, g := s.Profile(t)
	accelScale := float64(int(2)<<int(s.regs[regAccelConfig]>>3&3)) * Gravity / 32768
	gyroScale := float64(int(250)<<int(s.regs[regGyroConfig]>>3&3)) / 32768
	put := func(off int, v float64) {
		x := math.Round(v + s.noise())
		x = max(-32768, min(32767, x))
		binary.BigEndian.PutUint16(s.regs[off:], uint16(int16(x)))
	}
	for i := range 3 {
		put(regAccelXoutH+2*i, a[i]/accelScale)
		put(regAccelXoutH+8+2*i, g[i]/gyroScale)
	}
	put(regAccelXoutH+6, (31-36.53)*340) // 31 °C
}

// DefaultProfile is the 14 s motion the simulator plays in a loop: still,
// picked up, held tilted, shaken, put down, fell over onto its side, lying,
// set upright, still. Expected events: picked_up ~2.1 s, shaken ~4.3 s,
// fell_over ~10.1 s, upright ~13.1 s.
func DefaultProfile(t time.Duration) (accel, gyro [3]float64) {
	s := t.Seconds()
	const g = Gravity
	up := [3]float64{0, 0, g}
	half := func(t0, dur float64) float64 { return math.Sin(math.Pi * (s - t0) / dur) }
	rotX := func(deg float64) [3]float64 { // gravity seen after rolling about X
		r := deg * math.Pi / 180
		return [3]float64{0, g * math.Sin(r), g * math.Cos(r)}
	}
	switch {
	case s < 2:
		return up, gyro
	case s < 2.6: // lift: up to +3 m/s² upward
		accel = up
		accel[2] += 3 * half(2, 0.6)
	case s < 3.0: // slow down
		accel = up
		accel[2] -= 2 * half(2.6, 0.4)
	case s < 4: // held, tilted 10°
		accel = rotX(10)
		gyro[0] = 2
	case s < 5.5: // shaken sideways at 4 Hz, ±14 m/s²
		accel = rotX(10)
		accel[0] += 14 * math.Sin(2*math.Pi*4*(s-4))
		gyro[2] = 120 * math.Cos(2*math.Pi*4*(s-4))
	case s < 7:
		accel = rotX(10)
	case s < 7.5: // put down: down, then a gentle stop
		accel = up
		accel[2] -= 1.0 * half(7, 0.25)
		if s > 7.25 {
			accel[2] = g + 0.8*half(7.25, 0.25)
		}
	case s < 9:
		return up, gyro
	case s < 9.6: // falls over onto its side: roll 0 → 90°
		f := (s - 9) / 0.6
		accel = rotX(90 * f * f)
		gyro[0] = 300 * f
	case s < 9.65: // impact
		accel = rotX(90)
		accel[1] += 25
	case s < 12:
		accel = rotX(90)
	case s < 12.8: // set upright again
		f := (s - 12) / 0.8
		accel = rotX(90 * (1 - f))
		gyro[0] = -112
	default:
		return up, gyro
	}
	return accel, gyro
}

// ProfileLength is the length of DefaultProfile's loop.
const ProfileLength = 14 * time.Second

// Recording format: one I²C transaction per line, "ADDR WRITE[:READ]" in
// hex, '#' comments. It is what i2ctest.Record captures.
const recordingHeader = "# robot-agent i2c recording v1: addr write-hex [: read-hex]\n"

// WriteRecording writes ops in the recording format.
func WriteRecording(w io.Writer, comment string, ops []i2ctest.IO) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(recordingHeader)
	for _, l := range strings.Split(strings.TrimSpace(comment), "\n") {
		if l != "" {
			bw.WriteString("# " + l + "\n")
		}
	}
	for _, op := range ops {
		fmt.Fprintf(bw, "%02x %s", op.Addr, hex.EncodeToString(op.W))
		if len(op.R) > 0 {
			fmt.Fprintf(bw, " : %s", hex.EncodeToString(op.R))
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// maxRecordingOps bounds ParseRecording.
const maxRecordingOps = 1 << 20

// ParseRecording reads a recording. Errors name the line.
func ParseRecording(r io.Reader) ([]i2ctest.IO, error) {
	var ops []i2ctest.IO
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if len(ops) >= maxRecordingOps {
			return nil, fmt.Errorf("imu: recording line %d: more than %d transactions", n, maxRecordingOps)
		}
		wpart, rpart, hasR := strings.Cut(line, ":")
		f := strings.Fields(wpart)
		if len(f) != 2 {
			return nil, fmt.Errorf("imu: recording line %d: want \"addr write-hex [: read-hex]\", got %q", n, line)
		}
		addr, err := strconv.ParseUint(f[0], 16, 7)
		if err != nil {
			return nil, fmt.Errorf("imu: recording line %d: address %q is not a 7-bit hex number", n, f[0])
		}
		w, err := hex.DecodeString(f[1])
		if err != nil || len(w) == 0 {
			return nil, fmt.Errorf("imu: recording line %d: write bytes %q are not hex", n, f[1])
		}
		op := i2ctest.IO{Addr: uint16(addr), W: w}
		if hasR {
			rs := strings.TrimSpace(rpart)
			rb, err := hex.DecodeString(rs)
			if err != nil || len(rb) == 0 {
				return nil, fmt.Errorf("imu: recording line %d: read bytes %q are not hex", n, rs)
			}
			op.R = rb
		}
		ops = append(ops, op)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("imu: recording: %w", err)
	}
	return ops, nil
}

//go:embed testdata/mpu6050_200hz.rec
var defaultRecording []byte

// Parameters of the embedded recording: the IMU configuration it was
// recorded with.
const (
	RecordingAddr    = 0x68
	RecordingHz      = 200
	RecordingAccelG  = 4
	RecordingGyroDPS = 500
	recordingInitOps = 5 // WHO_AM_I, PWR_MGMT_1, PWR_MGMT_2, config burst, read-back
)

// DefaultRecording returns the embedded recording: an MPU-6050 at 0x68,
// 200 Hz, ±4 g, ±500 °/s, initialisation then ProfileLength of samples.
func DefaultRecording() []i2ctest.IO {
	ops, err := ParseRecording(bytes.NewReader(defaultRecording))
	if err != nil {
		panic("imu: embedded recording is invalid: " + err.Error()) // build-time bug
	}
	return ops
}

// LoopPlayback is an i2ctest.Playback that, once every recorded
// transaction has been played, starts again at transaction loopFrom (the
// first sample read), so a recording can drive the simulator forever.
// Transactions that differ from the recording fail like Playback's.
type LoopPlayback struct {
	p        i2ctest.Playback
	loopFrom int
}

// NewLoopPlayback returns a looping playback of ops.
func NewLoopPlayback(ops []i2ctest.IO, loopFrom int) *LoopPlayback {
	return &LoopPlayback{p: i2ctest.Playback{Ops: ops, DontPanic: true}, loopFrom: loopFrom}
}

// String implements i2c.Bus.
func (l *LoopPlayback) String() string { return "loop-playback" }

// SetSpeed implements i2c.Bus.
func (l *LoopPlayback) SetSpeed(f physic.Frequency) error { return nil }

// Close implements i2c.BusCloser.
func (l *LoopPlayback) Close() error { return nil }

// Tx implements i2c.Bus.
func (l *LoopPlayback) Tx(addr uint16, w, r []byte) error {
	l.p.Lock()
	if l.p.Count == len(l.p.Ops) && l.loopFrom < len(l.p.Ops) {
		l.p.Count = l.loopFrom
	}
	l.p.Unlock()
	return l.p.Tx(addr, w, r)
}

// SimI2C implements hw.I2C for the simulator: every OpenI2C returns a fresh
// looping playback of the embedded recording when the IMU configuration
// matches it, and a live SimMPU otherwise.
type SimI2C struct {
	Live bool // use a live SimMPU following DefaultProfile
	Addr uint16
}

// OpenI2C implements hw.I2C.
func (s SimI2C) OpenI2C(string) (i2c.BusCloser, error) {
	if s.Live {
		return NewSimMPU(s.Addr, DefaultProfile), nil
	}
	return NewLoopPlayback(DefaultRecording(), recordingInitOps), nil
}

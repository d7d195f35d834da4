package imu

import (
	"encoding/binary"
	"fmt"

	"periph.io/x/conn/v3/i2c"
)

// MPU-6050 / MPU-6500 / MPU-9250 register map (the accelerometer and
// gyroscope part is the same on the whole family).
const (
	regSmplrtDiv   = 0x19
	regConfig      = 0x1A
	regGyroConfig  = 0x1B
	regAccelConfig = 0x1C
	regAccelXoutH  = 0x3B // 14 bytes: accel x,y,z, temp, gyro x,y,z (big endian int16)
	regPwrMgmt1    = 0x6B
	regPwrMgmt2    = 0x6C
	regWhoAmI      = 0x75

	pwr1ClockPLLX = 0x01 // wake (SLEEP=0), clock from the X gyro PLL
	pwr2AllAxesOn = 0x00 // no STBY bits: all accel and gyro axes on
	dlpf44Hz      = 0x03 // DLPF_CFG 3: ~44 Hz accel / 42 Hz gyro, 1 kHz internal rate
)

// Gravity is standard gravity in m/s².
const Gravity = 9.80665

// WHO_AM_I values of the supported devices.
var whoAmI = map[byte]string{
	0x68: "mpu6050",
	0x70: "mpu6500",
	0x71: "mpu9250",
	0x73: "mpu9250", // MPU-9255
}

// Sample is one IMU reading in sensor axes.
type Sample struct {
	Accel [3]float64 // m/s², includes gravity (+9.81 on the axis pointing up)
	Gyro  [3]float64 // °/s, right-handed about each axis
	TempC float64    // die temperature, °C
}

// MPUOptions configures NewMPU.
type MPUOptions struct {
	Model        string // "auto" or "mpu6050", "mpu6500", "mpu9250"
	SampleHz     int    // 4..1000
	AccelRangeG  int    // 2, 4, 8, 16
	GyroRangeDPS int    // 250, 500, 1000, 2000
}

// MPU is a small register-level driver for MPU-6050/6500/9250-class IMUs on
// periph's i2c.Bus. periph.io/x/devices has an mpu9250 driver only, and its
// Init puts the Z gyro in standby; this one enables every axis, uses one
// 14-byte burst read per sample and does not allocate per read.
//
// An MPU is used by one goroutine.
type MPU struct {
	dev        i2c.Dev
	model      string
	accelScale float64 // m/s² per LSB
	gyroScale  float64 // °/s per LSB
	tempScale  float64
	tempOffset float64
	w          [1]byte
	r          [14]byte
}

// NewMPU identifies the device at addr, wakes it, enables all axes and sets
// the sample rate, low-pass filter and ranges, then reads the configuration
// back to check it took.
func NewMPU(bus i2c.Bus, addr uint16, o MPUOptions) (*MPU, error) {
	m := &MPU{dev: i2c.Dev{Bus: bus, Addr: addr}}
	var who [1]byte
	if err := m.dev.Tx([]byte{regWhoAmI}, who[:]); err != nil {
		return nil, fmt.Errorf("imu: read WHO_AM_I at %#x: %w", addr, err)
	}
	model, ok := whoAmI[who[0]]
	if !ok {
		return nil, fmt.Errorf("imu: WHO_AM_I at %#x is %#02x, not an MPU-6050/6500/9250", addr, who[0])
	}
	if o.Model != "" && o.Model != "auto" && o.Model != model {
		return nil, fmt.Errorf("imu: model is configured as %q but WHO_AM_I %#02x says %q", o.Model, who[0], model)
	}
	m.model = model
	if model == "mpu6050" {
		m.tempScale, m.tempOffset = 1/340.0, 36.53
	} else {
		m.tempScale, m.tempOffset = 1/333.87, 21
	}
	afs, ok := map[int]byte{2: 0, 4: 1, 8: 2, 16: 3}[o.AccelRangeG]
	if !ok {
		return nil, fmt.Errorf("imu: accel range %d g, want 2, 4, 8 or 16", o.AccelRangeG)
	}
	gfs, ok := map[int]byte{250: 0, 500: 1, 1000: 2, 2000: 3}[o.GyroRangeDPS]
	if !ok {
		return nil, fmt.Errorf("imu: gyro range %d °/s, want 250, 500, 1000 or 2000", o.GyroRangeDPS)
	}
	if o.SampleHz < 4 || o.SampleHz > 1000 {
		return nil, fmt.Errorf("imu: sample rate %d Hz, want 4..1000", o.SampleHz)
	}
	div := byte(1000/o.SampleHz - 1)
	m.accelScale = float64(o.AccelRangeG) * Gravity / 32768
	m.gyroScale = float64(o.GyroRangeDPS) / 32768
	cfg := []byte{regSmplrtDiv, div, dlpf44Hz, gfs << 3, afs << 3}
	for _, w := range [][]byte{{regPwrMgmt1, pwr1ClockPLLX}, {regPwrMgmt2, pwr2AllAxesOn}, cfg} {
		if err := m.dev.Tx(w, nil); err != nil {
			return nil, fmt.Errorf("imu: write register %#02x: %w", w[0], err)
		}
	}
	var back [4]byte
	if err := m.dev.Tx([]byte{regSmplrtDiv}, back[:]); err != nil {
		return nil, fmt.Errorf("imu: read back configuration: %w", err)
	}
	if string(back[:]) != string(cfg[1:]) {
		return nil, fmt.Errorf("imu: configuration read back as % x, wrote % x", back[:], cfg[1:])
	}
	return m, nil
}

// Model returns the identified device ("mpu6050", "mpu6500", "mpu9250").
func (m *MPU) Model() string { return m.model }

// Read takes one sample with a single burst read.
func (m *MPU) Read(s *Sample) error {
	m.w[0] = regAccelXoutH
	if err := m.dev.Tx(m.w[:], m.r[:]); err != nil {
		return fmt.Errorf("imu: read sample: %w", err)
	}
	r := m.r[:]
	for i := range 3 {
		s.Accel[i] = float64(int16(binary.BigEndian.Uint16(r[2*i:]))) * m.accelScale
		s.Gyro[i] = float64(int16(binary.BigEndian.Uint16(r[8+2*i:]))) * m.gyroScale
	}
	s.TempC = float64(int16(binary.BigEndian.Uint16(r[6:])))*m.tempScale + m.tempOffset
	return nil
}

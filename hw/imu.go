package hw

import (
	"fmt"
	"sync"

	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/i2c/i2creg"
	"periph.io/x/host/v3"
)

// I2C opens I²C buses by name (periph's i2creg names such as "/dev/i2c-1"
// or "1"; "" is the first bus). The IMU module reads its sensor through the
// returned bus; tests and the simulator hand in i2ctest buses.
//
// OpenI2C may be called from any goroutine.
type I2C interface {
	OpenI2C(name string) (i2c.BusCloser, error)
}

// HostI2C is the board's I²C through periph.io's host drivers. host.Init
// runs on first use. The zero value is ready to use.
type HostI2C struct {
	once sync.Once
	err  error
}

// NewHostI2C returns the board's I²C buses.
func NewHostI2C() *HostI2C { return &HostI2C{} }

// OpenI2C implements I2C. A missing bus gives an error wrapping ErrNoDevice.
func (h *HostI2C) OpenI2C(name string) (i2c.BusCloser, error) {
	h.once.Do(func() {
		if _, err := host.Init(); err != nil {
			h.err = fmt.Errorf("hw: periph host init: %v: %w", err, ErrNoDevice)
		}
	})
	if h.err != nil {
		return nil, h.err
	}
	b, err := i2creg.Open(name)
	if err != nil {
		return nil, fmt.Errorf("hw: i2c bus %q: %v: %w", name, err, ErrNoDevice)
	}
	return b, nil
}

// Package host is the board's real GPIO and I²C through periph.io's host
// drivers: the implementations of the hw.GPIO and hw.I2C seams. It is the
// only package that runs periph's host.Init (which registers every driver
// periph knows for this board), so hw stays a pure seam package, as
// periph's conn is.
package host

import (
	"fmt"
	"sync"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpioreg"
	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/i2c/i2creg"
	periphhost "periph.io/x/host/v3"

	"github.com/robot-agent/robot-agent/hw"
)

// initOnce runs periph's host.Init once per value.
type initOnce struct {
	once sync.Once
	err  error
}

func (o *initOnce) init() error {
	o.once.Do(func() {
		if _, err := periphhost.Init(); err != nil {
			o.err = fmt.Errorf("host: periph host init: %v: %w", err, hw.ErrNoDevice)
		}
	})
	return o.err
}

// GPIO is the real GPIO of the board (hw.GPIO). host.Init runs on first
// use; a host without GPIO (a laptop, a container) gives hw.ErrNoDevice for
// every pin instead of failing the agent.
//
// The zero value is ready to use; Pin may be called from any goroutine.
type GPIO struct{ initOnce }

// NewGPIO returns the board's GPIO.
func NewGPIO() *GPIO { return &GPIO{} }

// Pin implements hw.GPIO.
func (h *GPIO) Pin(name string) (gpio.PinIO, error) {
	if err := h.init(); err != nil {
		return nil, err
	}
	p := gpioreg.ByName(name)
	if p == nil {
		return nil, fmt.Errorf("host: gpio pin %q not found on this host (%d pins registered): %w", name, len(gpioreg.All()), hw.ErrNoDevice)
	}
	return p, nil
}

// I2C is the board's I²C buses (hw.I2C). host.Init runs on first use.
// The zero value is ready to use; OpenI2C may be called from any goroutine.
type I2C struct{ initOnce }

// NewI2C returns the board's I²C buses.
func NewI2C() *I2C { return &I2C{} }

// OpenI2C implements hw.I2C. A missing bus gives an error wrapping
// hw.ErrNoDevice.
func (h *I2C) OpenI2C(name string) (i2c.BusCloser, error) {
	if err := h.init(); err != nil {
		return nil, err
	}
	b, err := i2creg.Open(name)
	if err != nil {
		return nil, fmt.Errorf("host: i2c bus %q: %v: %w", name, err, hw.ErrNoDevice)
	}
	return b, nil
}

var (
	_ hw.GPIO = (*GPIO)(nil)
	_ hw.I2C  = (*I2C)(nil)
)

package hw

import (
	"fmt"
	"sync"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpioreg"
	"periph.io/x/host/v3"
)

// GPIO resolves pin names from the agent configuration ("GPIO17", a board
// alias such as "P1_11", or a name a simulated board registered) to periph
// pins. Pin names never come from the network: the gateway only ever names
// logical outputs ("led_eyes") that the configuration maps to pins.
//
// Pin may be called from any goroutine.
type GPIO interface {
	// Pin returns the named pin, or an error wrapping ErrNoDevice when the
	// host has no such pin (or no GPIO at all).
	Pin(name string) (gpio.PinIO, error)
}

// HostGPIO is the real GPIO of the board, through periph.io's host drivers.
// host.Init runs on first use; a host without GPIO (a laptop, a container)
// gives ErrNoDevice for every pin instead of failing the agent.
//
// The zero value is ready to use.
type HostGPIO struct {
	once sync.Once
	err  error
}

// NewHostGPIO returns the board's GPIO.
func NewHostGPIO() *HostGPIO { return &HostGPIO{} }

func (h *HostGPIO) init() error {
	h.once.Do(func() {
		if _, err := host.Init(); err != nil {
			h.err = fmt.Errorf("hw: periph host init: %v: %w", err, ErrNoDevice)
		}
	})
	return h.err
}

// Pin implements GPIO.
func (h *HostGPIO) Pin(name string) (gpio.PinIO, error) {
	if err := h.init(); err != nil {
		return nil, err
	}
	p := gpioreg.ByName(name)
	if p == nil {
		return nil, fmt.Errorf("hw: gpio pin %q not found on this host (%d pins registered): %w", name, len(gpioreg.All()), ErrNoDevice)
	}
	return p, nil
}

package hw

import (
	"periph.io/x/conn/v3/gpio"
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

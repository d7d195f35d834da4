package hw

import (
	"periph.io/x/conn/v3/i2c"
)

// I2C opens I²C buses by name (periph's i2creg names such as "/dev/i2c-1"
// or "1"; "" is the first bus). The IMU module reads its sensor through the
// returned bus; the board's implementation is hw/host.I2C, tests and the
// simulator hand in i2ctest buses.
//
// OpenI2C may be called from any goroutine.
type I2C interface {
	OpenI2C(name string) (i2c.BusCloser, error)
}

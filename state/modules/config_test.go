package modules_test

import (
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/robot-agent/robot-agent/state/gpio"
	"github.com/robot-agent/robot-agent/state/modules"
)

// TestConfigYAMLAndValidate: the state section decodes into the modules'
// own options (short forms included) and each module's validation names
// the bad field by its YAML path.
func TestConfigYAMLAndValidate(t *testing.T) {
	src := `
gpio:
  enabled: true
  inputs:
    button_head: GPIO27
    bump_front: {pin: GPIO22, pull: down, active_low: false, debounce: 5ms, function_call: bump}
  outputs:
    led_eyes: GPIO17
    motor_en: {pin: GPIO5, safe: high}
imu: {enabled: true, addr: 0x69, sample_hz: 100, heartbeat: 30s}
battery: {enabled: true, poll: 1m}
thermal: {enabled: true, zones: [cpu-thermal]}
`
	var c modules.Config
	if err := yaml.Unmarshal([]byte(src), &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	d := c.Defaults()
	if in := d.GPIO.Inputs["button_head"]; in.Pin != "GPIO27" || in.Pull != "up" || !*in.ActiveLow || in.Debounce != 20*time.Millisecond {
		t.Fatalf("short input %+v", in)
	}
	if in := d.GPIO.Inputs["bump_front"]; in.Pull != "down" || *in.ActiveLow || in.Debounce != 5*time.Millisecond || in.FunctionCall != "bump" {
		t.Fatalf("input %+v", in)
	}
	if o := d.GPIO.Outputs["led_eyes"]; o.Pin != "GPIO17" || o.Safe != "low" {
		t.Fatalf("short output %+v", o)
	}
	if d.IMU.Addr != 0x69 || d.IMU.SampleHz != 100 || d.IMU.PublishHz != 10 || d.IMU.Heartbeat != 30*time.Second || d.Battery.Poll != time.Minute {
		t.Fatalf("imu/battery %+v %+v", d.IMU, d.Battery)
	}

	bad := []struct {
		mut  func(*modules.Config)
		want string
	}{
		{func(c *modules.Config) { c.GPIO.Outputs["motor_en"] = gpio.OutputConfig{Pin: "GPIO27"} }, `state.gpio.outputs.motor_en.pin: "GPIO27": already used by state.gpio.inputs.button_head`},
		{func(c *modules.Config) { c.GPIO.Outputs["Bad-Name"] = gpio.OutputConfig{Pin: "GPIO6"} }, `state.gpio.outputs.Bad-Name: not a valid output name`},
		{func(c *modules.Config) { c.GPIO.Outputs["x"] = gpio.OutputConfig{Pin: "GPIO6", Safe: "on"} }, `state.gpio.outputs.x.safe: "on": want low or high`},
		{func(c *modules.Config) { c.GPIO.Inputs["b"] = gpio.InputConfig{Pin: "GPIO6", Pull: "sideways"} }, `state.gpio.inputs.b.pull: "sideways": want up, down or none`},
		{func(c *modules.Config) {
			c.GPIO.Inputs["b"] = gpio.InputConfig{Pin: "GPIO6", Debounce: 2 * time.Second}
		}, `state.gpio.inputs.b.debounce: 2s: want 0 < debounce <= 1s`},
		{func(c *modules.Config) { c.GPIO.Inputs["b"] = gpio.InputConfig{Pin: "GPIO 6"} }, `state.gpio.inputs.b.pin: "GPIO 6": want a pin name like GPIO17`},
		{func(c *modules.Config) { c.IMU.SampleHz = 5000 }, "state.imu.sample_hz: 5000: want 1..1000"},
		{func(c *modules.Config) { c.IMU.PublishHz = 500 }, "state.imu.publish_hz: 500: want 1..sample_hz (100)"},
		{func(c *modules.Config) { c.IMU.AccelRangeG = 3 }, "state.imu.accel_range_g: 3: want 2, 4, 8 or 16"},
		{func(c *modules.Config) { c.IMU.Model = "bno055" }, `state.imu.model: "bno055": want auto`},
		{func(c *modules.Config) { c.IMU.Addr = 0x80 }, "state.imu.addr: 0x80: want a 7-bit address"},
		{func(c *modules.Config) { c.Battery.Poll = time.Millisecond }, "state.battery.poll: 1ms: want 100ms..10m"},
		{func(c *modules.Config) { c.Battery.Supply = "../x" }, `state.battery.supply: "../x": want a power_supply name`},
		{func(c *modules.Config) { c.Thermal.Zones = []string{""} }, `state.thermal.zones[0]: "": must not be empty`},
	}
	for _, tc := range bad {
		var c2 modules.Config
		yaml.Unmarshal([]byte(src), &c2)
		tc.mut(&c2)
		if err := c2.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want %q", err, tc.want)
		}
	}
}

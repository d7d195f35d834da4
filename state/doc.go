// Package state is robot-agent's robot-state framework: modules that read
// devices (GPIO inputs, an IMU, sysfs battery and thermal zones) and turn
// what they see into (state_name, state_value) control events for the
// gateway.
//
// A Module has a name, is opened and run by a Manager that starts and stops
// with the agent, and publishes through its Publisher. Two kinds of module
// exist:
//
//   - change-driven modules (GPIO edges, motion events) publish every change
//     as it happens; nothing is coalesced or dropped;
//   - high-rate modules (IMU) sample at a configured rate and publish through
//     a Coalescer: latest value wins per key, and a key is sent only when it
//     moved more than its deadband, so a still robot sends almost nothing.
//
// Every event carries the capture time (the shared clock.Clock's Mono, in
// µs) in ts; the uplink's control-lane outbox assigns its event_id.
//
// A module whose device does not exist (a host without GPIO, no IMU on the
// bus) fails Open with an error wrapping ErrUnavailable: the Manager reports
// it unavailable (a "module.<name>" state event, a metric, Status) and the
// agent keeps running. A module whose Run fails later is closed, reopened
// and rerun with backoff.
//
// Device modules live in sub-packages (state/gpio, state/imu, state/sysfs);
// state/modules builds them from Config with real or simulated devices.
//
// # Concurrency
//
// Manager methods may be called from any goroutine. Each module's Run runs
// on its own goroutine; a Publisher and a Coalescer belong to one module and
// are used from that module's goroutines (Publisher is safe for concurrent
// use; Coalescer is not).
package state

// Package chaos holds the fault-injection scenarios (tests only): a robot —
// the uplink client in process, or the built robot-agent binary — talks to
// an accounting gateway through internal/faultproxy while connections are
// killed, black-holed, throttled and delayed, the gateway restarts, the
// agent is killed with SIGKILL or stopped with SIGTERM, the wall clock
// jumps, and the spool is corrupted. Every scenario accounts for event ids:
// every event the robot counted as raised must reach the gateway
// application exactly once (wire duplicates are counted, loss fails).
//
// `go test ./internal/chaos` runs the short version (part of make test);
// `make chaos` (CHAOS=long) runs the long one and prints a table.
package chaos

// Package layering holds no code: its test states the intended import
// layering of robot-agent and fails when a package imports against it (as
// tailscale's deptest does), run by make lint.
//
// Every package has a rank; a package may import only packages of a lower
// rank. Leaves (clock, metrics, protocol, codec/pcm...) are at the bottom,
// the device seams (hw, device) above them, drivers and pipeline stages
// above those, wiring packages (state/modules) next, and the command at
// the top. A few transitive rules keep heavy or cgo dependencies (periph's
// host drivers, pion, PortAudio) out of the packages that must stay light.
package layering

// Command robot-agent runs on a robot's board and connects its microphone,
// speaker, camera and state sensors to a cloud agent gateway.
//
//	robot-agent run      [flags]   run the agent (--sim: simulated devices)
//	robot-agent gateway  [flags]   run the embedded development gateway
//	robot-agent devices            list audio devices and cameras
//	robot-agent doctor   [flags]   check this machine and the config
//	robot-agent conformance [flags] check a gateway against the protocol
//	robot-agent version            print version and build information
//
// All wiring of real and simulated devices happens in this package.
package main

import (
	"fmt"
	"io"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

// recoverInternal turns a panic on the main goroutine into one line and
// exitInternal instead of a goroutine dump.
func recoverInternal(stderr io.Writer, code *int) {
	if r := recover(); r != nil {
		*code = reportFailure(stderr, fmt.Errorf("internal error: %v", r))
	}
}

const usage = `robot-agent connects a robot's microphone, speaker, camera and sensors to an
agent gateway over one WebSocket (protocol v1, docs/protocol.md).

Usage:
  robot-agent run [flags]        run the agent (see 'robot-agent run -h')
  robot-agent gateway [flags]    run the embedded development gateway
  robot-agent devices            list audio devices and cameras with their modes
  robot-agent doctor [flags]     check devices, permissions, gateway and config
  robot-agent conformance [flags] check a gateway against the wire protocol
  robot-agent jitter-replay TRACE...  replay TTS arrival traces through the jitter buffer
  robot-agent version            print version and build information

Quick start (simulated mic and speaker against an embedded gateway):
  robot-agent run --sim --duration 20s

Exit status: 0 ok; 1 doctor found problems; 2 configuration or usage;
3 device; 4 network (address busy...); 5 internal error (a bug).
`

func runMain(args []string, stdout, stderr io.Writer) (code int) {
	defer recoverInternal(stderr, &code)
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitConfig
	}
	switch args[0] {
	case "run":
		return cmdRun(args[1:], stdout, stderr)
	case "gateway":
		return cmdGateway(args[1:], stdout, stderr)
	case "devices":
		return cmdDevices(args[1:], stdout, stderr)
	case "doctor":
		return cmdDoctor(args[1:], stdout, stderr)
	case "conformance":
		return cmdConformance(args[1:], stdout, stderr)
	case "jitter-replay":
		return cmdJitterReplay(args[1:], stdout, stderr)
	case "duplex-bench":
		return cmdDuplexBench(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, versionString())
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "robot-agent: unknown command %q (fix: see robot-agent help)\n\n%s", args[0], usage)
	return exitConfig
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/robot-agent/robot-agent/conformance"
)

const conformanceUsage = `Usage: robot-agent conformance --gateway URL --token-file FILE [flags]

Plays a scripted robot against a gateway and checks it against the wire
protocol (docs/protocol.md, section 15 "Testing your gateway"): upgrade and
auth, hello, acks, function calls, mic utterances and responses, keepalive
silence, reconnect and resumption, malformed and oversized frames. Prints
one PASS/FAIL row per check with its spec section and evidence.

Exit status: 0 all checks passed, 1 a check failed, 2 the kit could not
start (bad flags, token file unreadable, gateway unreachable or refusing
the token).

Flags:
`

func cmdConformance(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, conformanceUsage); fs.PrintDefaults() }
	gw := fs.String("gateway", "", "gateway URL, ws:// or wss://…/v1/robot (required)")
	tokenFile := fs.String("token-file", "", "file holding a bearer token the gateway accepts for --device-id (required)")
	device := fs.String("device-id", "conformance-robot", "device id the scripted robot presents")
	wait := fs.Duration("wait", 3*time.Second, "how long to wait for each answer the spec requires")
	only := fs.String("only", "", "comma-separated check id prefixes to run (e.g. 5.3,9.1); default all")
	verbose := fs.Bool("v", false, "print each check as it finishes")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "robot-agent conformance: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	if *gw == "" {
		return fail("--gateway is required")
	}
	if *tokenFile == "" {
		return fail("--token-file is required")
	}
	b, err := os.ReadFile(*tokenFile)
	if err != nil {
		return fail("token file: %v", err)
	}
	cfg := conformance.Config{URL: *gw, Token: strings.TrimSpace(string(b)), DeviceID: *device, Wait: *wait}
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
	}
	if *verbose {
		cfg.Progress = stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := conformance.Run(ctx, cfg)
	if err != nil && len(rep.Results) == 0 {
		return fail("%s", strings.TrimPrefix(err.Error(), "conformance: "))
	}
	rep.Write(stdout)
	if err != nil {
		fmt.Fprintln(stderr, "robot-agent conformance: interrupted:", err)
		return 2
	}
	if rep.Failed() > 0 {
		return 1
	}
	return 0
}

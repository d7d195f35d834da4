package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/hw"
)

// Exit codes of robot-agent run (and gateway), one per class of failure so
// that a supervisor or an installer's script can tell them apart. Listed
// in README.md and docs/deploy.md.
const (
	exitOK = 0
	// exitChecks: doctor found a problem (its output says which).
	exitChecks = 1
	// exitConfig: bad command line or configuration (every problem is
	// printed, one per line). Restarting does not help.
	exitConfig = 2
	// exitDevice: a device (mic, speaker, camera, GPIO/I²C) could not be
	// opened or failed.
	exitDevice = 3
	// exitNetwork: a listening address is busy or not allowed, or the
	// network failed in a way the agent does not retry.
	exitNetwork = 4
	// exitInternal: a bug (panic or unexpected error). Please report it.
	exitInternal = 5
)

// failure is a start-up or runtime failure with its exit class and the fix
// to print with it.
type failure struct {
	code int
	err  error
	fix  string
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// deviceFailure classifies err as a device failure. Support missing from
// this build (hw.ErrNotBuiltIn) already says how to get it; fix is then
// not repeated.
func deviceFailure(err error, fix string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, hw.ErrNotBuiltIn) {
		fix = ""
	}
	return &failure{code: exitDevice, err: err, fix: fix}
}

func networkFailure(err error, fix string) error {
	if err == nil {
		return nil
	}
	return &failure{code: exitNetwork, err: err, fix: fix}
}

// exitCode classifies err: a *failure's class, config.ErrInvalid as a
// configuration problem, anything else internal.
func exitCode(err error) int {
	var f *failure
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &f):
		return f.code
	case errors.Is(err, config.ErrInvalid):
		return exitConfig
	}
	return exitInternal
}

// reportFailure prints err for people: one line per problem, each
// "robot-agent: cause (fix: ...)", and returns its exit code.
func reportFailure(w io.Writer, err error) int {
	code := exitCode(err)
	var f *failure
	fix := ""
	if errors.As(err, &f) {
		fix = f.fix
	}
	if code == exitInternal && fix == "" {
		fix = "this is a bug in robot-agent; please report it with this line and the log"
	}
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if fix != "" {
			l += " (fix: " + fix + ")"
		}
		fmt.Fprintln(w, "robot-agent: "+l)
	}
	return code
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"

	"github.com/robot-agent/robot-agent/config"
	"github.com/robot-agent/robot-agent/doctor"
)

const doctorUsage = `Usage: robot-agent doctor [flags]

Checks that this machine can run the agent: the config is valid, the token
is readable, sound capture/playback, camera, GPIO and I2C devices exist and
are openable by the service user, the user is in the right groups, the
clock is synchronised, and the gateway is reachable over TLS. Each problem is
printed with how to fix it; the exit status is 1 if anything failed.

Flags:
`

func cmdDoctor(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, doctorUsage); fs.PrintDefaults() }
	cfgPath := fs.String("config", defaultConfigPath(), "config file to check")
	userName := fs.String("user", defaultServiceUser(), "account the service runs as (empty: the current user)")
	root := fs.String("root", "/", "filesystem root for /dev and /sys (tests)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	checks := doctor.Checks{Root: *root, User: *userName, ConfigPath: *cfgPath}
	cfg := config.Default()
	if *cfgPath != "" {
		// The same validation as run (validate.go).
		checks.ValidateConfig = func(p string) error {
			c, err := config.Load(p, extraSections...)
			if err != nil {
				return err
			}
			c.ApplyEnv(os.Getenv)
			return validateConfig(c, false, os.Getenv)
		}
		if c, err := config.Load(*cfgPath, extraSections...); err == nil {
			cfg = c
		}
	}
	checks.GatewayURL = cfg.Gateway.URL
	if t, err := cfg.Gateway.TLSConfig(); err == nil {
		checks.TLSConfig = t // private CA, client certificate, server name
	}
	// The token file as run decides it (config.TokenPath): a configured
	// gateway.token_file must exist; otherwise the token is optional, and
	// outside systemd doctor looks where the packaged unit loads it from.
	path, explicit := cfg.TokenPath(os.Getenv)
	if path == "" {
		path = packagedTokenFile
	}
	checks.TokenFile, checks.TokenOptional = path, !explicit
	devs := doctor.DefaultDevices()
	cam, _ := loadCameraConfig(cfg)
	for i := range devs {
		// A camera the config does not use is only worth a warning.
		if devs[i].Name == "camera" && !cam.Enabled {
			devs[i].Required = false
		}
	}
	checks.Devices = devs
	fmt.Fprintln(stdout, "audio:", duplexMode())
	if !doctor.Run(context.Background(), checks, stdout) {
		return 1
	}
	return 0
}

// packagedTokenFile is where the packaged unit loads the token from
// (LoadCredential=gateway-token:...).
const packagedTokenFile = "/etc/robot-agent/gateway-token"

func defaultConfigPath() string {
	const p = "/etc/robot-agent/config.yaml"
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

func defaultServiceUser() string {
	if _, err := user.Lookup("robot-agent"); err == nil {
		return "robot-agent"
	}
	return ""
}

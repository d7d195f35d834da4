package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/robot-agent/robot-agent/config"
)

const bundleUsage = `Usage: robot-agent bundle [flags]

Asks the running agent to write a support bundle (a .tar.gz: mic.wav and
tts.wav with the last seconds of microphone and TTS audio, control.jsonl
with the last control messages both ways, config.yaml without secrets,
version.txt, metrics.txt) and prints its path. The agent listens on
<support.dir>/agent.sock; this command looks there for the --dir given, the
support.dir of --config, $STATE_DIRECTORY, /var/lib/robot-agent and
$TMPDIR/robot-agent-<uid>, in that order. On a packaged install:
sudo robot-agent bundle -o /tmp/bundle.tar.gz. Without the socket,
'sudo systemctl kill -s USR1 robot-agent' writes one too (see the journal for
its path).

Flags:
`

func cmdBundle(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bundle", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, bundleUsage); fs.PrintDefaults() }
	cfgPath := fs.String("config", defaultConfigIfPresent(), "the agent's YAML configuration (for support.dir)")
	dir := fs.String("dir", "", "the agent's support.dir (overrides --config)")
	out := fs.String("o", "", "also copy the bundle to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitConfig
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "robot-agent: bundle: "+format+"\n", a...)
		return code
	}
	if fs.NArg() > 0 {
		return fail(exitConfig, "unexpected argument %q", fs.Arg(0))
	}
	var dirs []string
	if *dir != "" {
		dirs = []string{*dir}
	} else {
		if *cfgPath != "" {
			cfg, err := config.Load(*cfgPath, extraSections...)
			if err != nil {
				return fail(exitConfig, "%s", oneLine(err))
			}
			if sc, err := loadSupportConfig(cfg, func(string) string { return "" }); err == nil && cfg.Extra[supportSection].Kind != 0 {
				dirs = append(dirs, sc.Dir)
			}
		}
		if d := os.Getenv("STATE_DIRECTORY"); d != "" {
			dirs = append(dirs, strings.Split(d, ":")[0])
		}
		dirs = append(dirs, "/var/lib/robot-agent", defaultSupportDir(func(string) string { return "" }))
	}
	var tried []string
	for _, d := range dirs {
		sock := filepath.Join(d, "agent.sock")
		tried = append(tried, sock)
		c, err := net.DialTimeout("unix", sock, time.Second)
		if err != nil {
			continue
		}
		c.SetDeadline(time.Now().Add(60 * time.Second))
		fmt.Fprintln(c, "bundle")
		line, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		line = strings.TrimSpace(line)
		switch {
		case err != nil && line == "":
			return fail(exitInternal, "%s: no answer from the agent: %v", sock, err)
		case strings.HasPrefix(line, "ok "):
			path := strings.TrimPrefix(line, "ok ")
			if *out != "" {
				if err := copyFile(path, *out); err != nil {
					return fail(exitInternal, "bundle written to %s, but copying it to %s failed: %v", path, *out, err)
				}
				path = *out
			}
			fmt.Fprintln(stdout, path)
			return 0
		default:
			return fail(exitInternal, "the agent could not write a bundle: %s", strings.TrimPrefix(line, "error "))
		}
	}
	return fail(exitNetwork, "no running agent answered on %s (is it running? a packaged install needs sudo; or: sudo systemctl kill -s USR1 robot-agent)", strings.Join(tried, ", "))
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	o, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(o, in); err != nil {
		o.Close()
		return err
	}
	return o.Close()
}

package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/aec"
	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/reverb"
	"github.com/robot-agent/robot-agent/roomfile"
)

type silentMic struct{}

func (silentMic) Format() hw.AudioFormat { return hw.AudioFormat{SampleRate: 16000, Channels: 1} }
func (silentMic) Read(p []int16) (int, error) {
	clear(p)
	return len(p), nil
}
func (silentMic) Close() error { return nil }

func newKeeperRig(t *testing.T, path string, clk clock.Clock) (*roomKeeper, *aec.Source, *bytes.Buffer) {
	t.Helper()
	ref, err := aec.NewReference(clk, 24000)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := aec.New(aec.Options{Kind: aec.KindNone})
	src := aec.NewSource(silentMic{}, ref, c, clk, aec.SourceConfig{ReverbGuardMS: 256})
	var logs bytes.Buffer
	k := &roomKeeper{path: path, devices: "mic=usb speaker=i2s", src: src, clk: clk, log: slog.New(slog.NewTextHandler(&logs, nil))}
	return k, src, &logs
}

// The room file round trip the agent does: nothing the first time; a model
// saved is restored at the next start (the guard starts from it) and
// saved again only when it moved; a file that cannot be used is logged
// and the room learnt afresh; the periodic save runs on the agent's clock.
func TestRoomKeeperRestoresAndSaves(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "room.json")
	clk := clock.NewFake()

	k, src, logs := newKeeperRig(t, path, clk)
	k.restore()
	if _, ok := src.Room(); ok || !strings.Contains(logs.String(), "no room file yet") {
		t.Fatalf("first start: model %v, log %q", ok, logs)
	}
	k.save() // nothing learnt: nothing written
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("saved without a model: %v", err)
	}

	m := reverb.Model{RT60: 0.7, LevelDB: -5}
	if err := roomfile.Save(path, "mic=usb speaker=i2s", m, time.Now()); err != nil {
		t.Fatal(err)
	}
	k, src, logs = newKeeperRig(t, path, clk)
	k.restore()
	if got, ok := src.Room(); !ok || got != m || !strings.Contains(logs.String(), "room restored") {
		t.Fatalf("restart: model %+v %v (want %+v), log %q", got, ok, m, logs)
	}
	before, _ := os.Stat(path)
	k.save() // unchanged: not rewritten
	if after, _ := os.Stat(path); !after.ModTime().Equal(before.ModTime()) || strings.Contains(logs.String(), "room saved") {
		t.Errorf("an unchanged model was written again (log %q)", logs)
	}

	// The periodic save: a keeper whose file is elsewhere has something
	// new to write at the first period.
	other := filepath.Join(dir, "other.json")
	k.path = other
	k.saved = reverb.Model{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.run(ctx); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		clk.Advance(roomSaveEvery) // until the keeper's timer exists and fires
		if got, err := roomfile.Load(other, "mic=usb speaker=i2s"); err == nil {
			if got != m {
				t.Errorf("periodic save wrote %+v, want %+v", got, m)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing saved after one period")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done

	for name, content := range map[string]string{
		"corrupt":      "{",
		"other device": `{"version":1,"devices":"mic=hdmi speaker=i2s","reverb":{"rt60_s":0.7,"level_db":-5}}`,
		"out of range": `{"version":1,"devices":"mic=usb speaker=i2s","reverb":{"rt60_s":60,"level_db":-5}}`,
	} {
		os.WriteFile(path, []byte(content), 0o644)
		k, src, logs := newKeeperRig(t, path, clk)
		k.restore()
		if _, ok := src.Room(); ok || !strings.Contains(logs.String(), "room file not used") || !strings.Contains(logs.String(), "level=WARN") {
			t.Errorf("%s: model %v, log %q; want a warning and the room learnt afresh", name, ok, logs)
		}
	}
}

// The agent as a user runs it: with duplex.room_file holding a room, the
// reverberation guard starts from it (log and summary say so) and the file
// is still a valid room file after the run; a file from other devices is
// a warning, never a failed start.
func TestRunRestoresTheRoomFile(t *testing.T) {
	if aec.Best() == aec.KindNone {
		t.Skip("no echo canceller built in (tags webrtcapm or speexdsp): the room file is not used")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "room.json")
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("duplex:\n  room_file: "+path+"\n"), 0o644)
	for _, tc := range []struct {
		devices, log, summary string
	}{
		{"simulated devices", "room restored", "restored from duplex.room_file"},
		{"mic=usb speaker=i2s", "room file not used", ""},
	} {
		if err := roomfile.Save(path, tc.devices, reverb.Model{RT60: 0.7, LevelDB: -5}, time.Now()); err != nil {
			t.Fatal(err)
		}
		code, out, errs := runCLI("run", "--sim", "--config", cfg, "--duration", "2s", "--speaker-wav", filepath.Join(dir, "p.wav"), "--log-level", "info")
		if code != 0 || !strings.Contains(errs, tc.log) || (tc.summary != "" && !strings.Contains(out, tc.summary)) {
			t.Errorf("room file of %q: exit %d; want 0, the log saying %q and the summary %q:\n%s\n%s", tc.devices, code, tc.log, tc.summary, out, errs)
		}
		if _, err := roomfile.Load(path, tc.devices); err != nil {
			t.Errorf("after the run: %v", err)
		}
	}
}

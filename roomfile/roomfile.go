// Package roomfile keeps what the echo canceller learnt of the robot's
// room across restarts: the reverberation guard's model (reverb.Model),
// in a small JSON file written atomically (a temporary file in the same
// directory, synced, then renamed over the old one), so that a power cut
// while saving leaves the old file or the new one, never half of one.
//
// A file saved with other audio devices (the robot's mic or speaker
// changed) is refused (ErrDevices): the room it describes is another
// one's. A restored model is only a starting point: the guard learns on
// from the room's pauses, and a model from another room gives way to the
// first long pause in this one.
//
// # Concurrency
//
// Load and Save are safe to call from any goroutine, but two Saves of one
// path must not run at once.
package roomfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/robot-agent/robot-agent/reverb"
)

// Version is the file format's version.
const Version = 1

// ErrFormat reports a file that is not a room file of this Version, and
// ErrDevices one saved with other audio devices.
var (
	ErrFormat  = errors.New("roomfile: not a room file")
	ErrDevices = errors.New("roomfile: saved with other audio devices")
)

// maxSize bounds what Load reads: a room file is a few hundred bytes.
const maxSize = 64 << 10

// File is the file's content.
type File struct {
	Version int `json:"version"`
	// Devices names the mic and speaker the room was learnt with.
	Devices string       `json:"devices"`
	Reverb  reverb.Model `json:"reverb"`
	Saved   time.Time    `json:"saved"`
}

// Decode parses a room file, checking its version and its model's limits.
func Decode(b []byte) (File, error) {
	var f File
	if len(b) > maxSize {
		return File{}, fmt.Errorf("%w: %d bytes (at most %d)", ErrFormat, len(b), maxSize)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return File{}, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if f.Version != Version {
		return File{}, fmt.Errorf("%w: version %d (want %d)", ErrFormat, f.Version, Version)
	}
	if err := f.Reverb.Check(); err != nil {
		return File{}, fmt.Errorf("roomfile: reverb: %w", err)
	}
	return f, nil
}

// Load reads the room model saved at path for devices. A missing file is
// an error satisfying errors.Is(err, os.ErrNotExist) (the first start);
// one saved with other devices ErrDevices.
func Load(path, devices string) (reverb.Model, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return reverb.Model{}, err
	}
	f, err := Decode(b)
	if err != nil {
		return reverb.Model{}, fmt.Errorf("%s: %w", path, err)
	}
	if f.Devices != devices {
		return reverb.Model{}, fmt.Errorf("%s: %w (%q, now %q)", path, ErrDevices, f.Devices, devices)
	}
	return f.Reverb, nil
}

// Save writes the room model for devices to path atomically, stamped now.
func Save(path, devices string, m reverb.Model, now time.Time) error {
	if err := m.Check(); err != nil {
		return fmt.Errorf("roomfile: %w", err)
	}
	b, err := json.MarshalIndent(File{Version: Version, Devices: devices, Reverb: m, Saved: now.UTC()}, "", "  ")
	if err != nil {
		return fmt.Errorf("roomfile: %w", err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("roomfile: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing
	if _, err = tmp.Write(append(b, '\n')); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("roomfile: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // the rename itself survives a power cut
		d.Close()
	}
	return nil
}

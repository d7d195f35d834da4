package roomfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/reverb"
)

func TestSaveLoadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "room.json")
	m := reverb.Model{RT60: 0.79, LevelDB: -6.2}
	if err := Save(path, "mic=usb speaker=i2s", m, time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path, "mic=usb speaker=i2s")
	if err != nil || got != m {
		t.Fatalf("Load: %+v, %v; want %+v", got, err, m)
	}
	// Saved again over the old one; no temporary file left behind.
	m.RT60 = 0.5
	if err := Save(path, "mic=usb speaker=i2s", m, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got, _ := Load(path, "mic=usb speaker=i2s"); got != m {
		t.Errorf("after a second Save: %+v, want %+v", got, m)
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("directory holds %d entries, want the room file alone", len(ents))
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `{"version":1,"devices":"a","reverb":{"rt60_s":0.6,"level_db":-5}}`
	for _, tc := range []struct {
		name, content, devices string
		is                     error
		mentions               string
	}{
		{"missing", "", "a", os.ErrNotExist, ""},
		{"garbage", "not json", "a", ErrFormat, "not a room file"},
		{"version", `{"version":2,"devices":"a","reverb":{"rt60_s":0.6}}`, "a", ErrFormat, "version 2"},
		{"rt60", `{"version":1,"devices":"a","reverb":{"rt60_s":9,"level_db":0}}`, "a", reverb.ErrModel, "rt60_s 9"},
		{"devices", good, "b", ErrDevices, `"a", now "b"`},
	} {
		p := filepath.Join(dir, tc.name)
		if tc.content != "" {
			p = write(tc.name, tc.content)
		}
		_, err := Load(p, tc.devices)
		if !errors.Is(err, tc.is) || !strings.Contains(fmt.Sprint(err), tc.mentions) {
			t.Errorf("%s: %v, want %v mentioning %q", tc.name, err, tc.is, tc.mentions)
		}
	}
	if _, err := Load(write("ok", good), "a"); err != nil {
		t.Errorf("good file: %v", err)
	}
}

func TestSaveRefusesABadModelAndAMissingDirectory(t *testing.T) {
	if err := Save(filepath.Join(t.TempDir(), "r.json"), "", reverb.Model{RT60: 0}, time.Now()); !errors.Is(err, reverb.ErrModel) {
		t.Errorf("RT60 0: %v, want reverb.ErrModel", err)
	}
	if err := Save(filepath.Join(t.TempDir(), "no", "r.json"), "", reverb.Model{RT60: 0.5}, time.Now()); err == nil {
		t.Error("a missing directory: no error")
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"version":1,"devices":"a","reverb":{"rt60_s":0.6,"level_db":-5},"saved":"2026-12-07T10:00:00Z"}`))
	f.Add([]byte(`{"version":1,"reverb":{"rt60_s":1e308,"level_db":-1e308}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Decode(b)
		if err != nil {
			return
		}
		if file.Version != Version {
			t.Fatalf("accepted version %d", file.Version)
		}
		if err := file.Reverb.Check(); err != nil {
			t.Fatalf("accepted a model out of range: %v", err)
		}
	})
}

func ExampleSave() {
	path := filepath.Join(os.TempDir(), "robot-agent-room-example.json")
	defer os.Remove(path)
	_ = Save(path, "mic=hw:1 speaker=hw:0", reverb.Model{RT60: 0.45, LevelDB: -8}, time.Now())
	m, err := Load(path, "mic=hw:1 speaker=hw:0")
	fmt.Println(m.RT60, m.LevelDB, err)
	// Output: 0.45 -8 <nil>
}

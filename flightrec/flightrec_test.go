package flightrec

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/wav"
)

// ramp writes n samples continuing a ramp from *next, in pieces of size
// piece.
func ramp(r *AudioRing, next *int, n, piece int) {
	buf := make([]int16, piece)
	for n > 0 {
		k := min(n, piece)
		for i := range buf[:k] {
			buf[i] = int16(*next)
			*next++
		}
		r.Write(buf[:k])
		n -= k
	}
}

// contiguous checks that s is a stretch of the ramp ending at last.
func contiguous(t *testing.T, s []int16, last int) {
	t.Helper()
	for i := 1; i < len(s); i++ {
		if s[i] != s[i-1]+1 {
			t.Fatalf("sample %d: %d after %d: not contiguous", i, s[i], s[i-1])
		}
	}
	if len(s) > 0 && s[len(s)-1] != int16(last) {
		t.Fatalf("last sample %d, want %d", s[len(s)-1], int16(last))
	}
}

func TestAudioRingKeepsTheLastSeconds(t *testing.T) {
	for _, tc := range []struct {
		name         string
		rate         int
		secs         float64
		write, piece int
	}{
		{"empty", 16000, 1, 0, 320},
		{"less than full", 16000, 1, 5000, 320},
		{"exactly one chunk", 16000, 1, chunkSamples, 320},
		{"wraps many times, frame pieces", 16000, 1, 100_000, 320},
		{"wraps, odd pieces", 24000, 0.5, 77_777, 1001},
		{"pieces larger than a chunk", 24000, 2, 200_000, 9000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewAudioRing(tc.rate, tc.secs, clock.NewReal())
			if got := int(r.cap); got < int(float64(tc.rate)*tc.secs) {
				t.Fatalf("capacity %d < %v s at %d Hz", got, tc.secs, tc.rate)
			}
			next := 0
			ramp(r, &next, tc.write, tc.piece)
			s := r.Snapshot()
			if want := min(tc.write, int(r.cap)); len(s) != want {
				t.Fatalf("kept %d samples, want %d", len(s), want)
			}
			contiguous(t, s, next-1)
			if r.Written() != uint64(tc.write) || r.Lost() != 0 {
				t.Fatalf("written %d lost %d", r.Written(), r.Lost())
			}
		})
	}
}

func TestRecordingDoesNotAllocate(t *testing.T) {
	rec := New(Config{}, clock.NewReal())
	frame := make([]int16, 320)
	msg := []byte(`{"type":"state","event_id":"e1"}`)
	big := bytes.Repeat([]byte("x"), 10000)
	for name, f := range map[string]func(){
		"mic frame":       func() { rec.Mic.Write(frame) },
		"tts chunk":       func() { rec.TTS.Write(make4800) },
		"control message": func() { rec.TapControl(true, msg) },
		"long message":    func() { rec.TapControl(false, big) },
	} {
		if n := testing.AllocsPerRun(500, f); n != 0 {
			t.Errorf("%s: %v allocations per call", name, n)
		}
	}
}

var make4800 = make([]int16, 4800)

// A dump running while the producer writes never blocks it, and what it
// returns is still one contiguous stretch (run with -race).
func TestSnapshotWhileWriting(t *testing.T) {
	r := NewAudioRing(16000, 0.5, clock.NewReal())
	var wg sync.WaitGroup
	wg.Add(1)
	next := 0
	go func() {
		defer wg.Done()
		ramp(r, &next, 2_000_000, 320)
	}()
	for i := 0; i < 50; i++ {
		s := r.Snapshot()
		for k := 1; k < len(s); k++ {
			if s[k] != s[k-1]+1 && r.Lost() == 0 {
				t.Fatalf("snapshot %d: torn at %d (%d after %d) with no samples lost", i, k, s[k], s[k-1])
			}
		}
	}
	wg.Wait()
	t.Logf("%d samples lost to concurrent dumps (skipped, never waited for)", r.Lost())
}

func TestControlRingKeepsTheLastMessagesInOrder(t *testing.T) {
	r := NewControlRing(5, 16, clock.NewReal())
	for i := 1; i <= 12; i++ {
		r.Record(i%2 == 0, []byte(fmt.Sprintf(`{"n":%d,"pad":"0123456789"}`, i)))
	}
	got := r.Snapshot()
	if len(got) != 5 {
		t.Fatalf("%d records, want 5", len(got))
	}
	for i, c := range got {
		if c.Seq != uint64(8+i) || c.Up != ((8+i)%2 == 0) || len(c.Data) != 16 || !c.Truncated() {
			t.Errorf("record %d: seq %d up %v data %q len %d", i, c.Seq, c.Up, c.Data, c.Len)
		}
	}
}

// unpack reads a bundle into name → content.
func unpack(t *testing.T, b []byte) (prefix string, files map[string][]byte) {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files = map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeDir {
			prefix = h.Name
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimPrefix(h.Name, prefix)] = data
	}
	return prefix, files
}

func TestBundleWAVsPlayAndJSONParsesWithoutSecrets(t *testing.T) {
	const token = "tok-SECRET-4f9a"
	rec := New(Config{AudioSeconds: 2, ControlMessages: 50}, clock.NewReal())
	mic := make([]int16, 320)
	for i := 0; i < 200; i++ { // 4 s of mic: the ring keeps the last 2
		for k := range mic {
			mic[k] = int16((i*320 + k) % 3000)
		}
		rec.Mic.Write(mic)
	}
	rec.TTS.Write(make([]int16, 24000))
	rec.TapControl(true, []byte(`{"type":"hello","device_id":"r1"}`))
	rec.TapControl(false, []byte(`{"type":"hello","session_id":"s1"}`))
	rec.TapControl(false, []byte(`{"type":"error","msg":"bad token `+token+`"}`))
	rec.TapControl(true, []byte("not json \xff"))
	rec.TapControl(false, bytes.Repeat([]byte(`{"a":1}`), 1000)) // cut at 4096

	var out bytes.Buffer
	err := rec.WriteBundle(&out, "b1", Meta{
		Version: "robot-agent 1.2.3 (test)",
		Config:  []byte("gateway:\n  url: wss://g.example/v1/robot\n  # token " + token + "\n"),
		Secrets: []string{token},
		Extra:   map[string][]byte{"metrics.txt": []byte("x 1\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out.Bytes(), []byte(token)) {
		t.Fatal("token in the compressed bundle")
	}
	prefix, files := unpack(t, out.Bytes())
	if prefix != "b1/" {
		t.Fatalf("prefix %q", prefix)
	}
	for _, want := range []string{"mic.wav", "tts.wav", "control.jsonl", "config.yaml", "version.txt", "metrics.txt"} {
		if _, ok := files[want]; !ok {
			t.Errorf("bundle lacks %s", want)
		}
	}
	for name, data := range files {
		if bytes.Contains(data, []byte(token)) {
			t.Errorf("%s contains the token", name)
		}
	}
	for name, want := range map[string][2]int{"mic.wav": {16000, 2 * 16000}, "tts.wav": {24000, 24000}} {
		a, err := wav.Decode(bytes.NewReader(files[name]))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if a.SampleRate != want[0] || a.Channels != 1 || a.Frames() < want[1] || a.Frames() > want[1]+chunkSamples {
			t.Errorf("%s: %d Hz, %d ch, %d frames; want %d Hz mono, about %d frames", name, a.SampleRate, a.Channels, a.Frames(), want[0], want[1])
		}
	}
	lines := 0
	sc := bufio.NewScanner(bytes.NewReader(files["control.jsonl"]))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l controlLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("control.jsonl line %d: %v: %s", lines+1, err, sc.Bytes())
		}
		lines++
		if (l.Msg == nil) == (l.Text == "") || (l.Dir != "up" && l.Dir != "down") {
			t.Errorf("line %d: %s", lines, sc.Bytes())
		}
	}
	if lines != 5 {
		t.Fatalf("%d control lines, want 5", lines)
	}
	if !bytes.Contains(files["version.txt"], []byte("robot-agent 1.2.3")) {
		t.Errorf("version.txt: %s", files["version.txt"])
	}

	// sox, where installed, must read the WAVs too.
	if sox, err := exec.LookPath("sox"); err == nil {
		dir := t.TempDir()
		for _, n := range []string{"mic.wav", "tts.wav"} {
			p := filepath.Join(dir, n)
			if err := os.WriteFile(p, files[n], 0o600); err != nil {
				t.Fatal(err)
			}
			if o, err := exec.Command(sox, "--i", p).CombinedOutput(); err != nil || !strings.Contains(string(o), "Channels       : 1") {
				t.Errorf("sox --i %s: %v\n%s", n, err, o)
			}
		}
	}
}

func TestDumpToDirKeepsTheNewest(t *testing.T) {
	clk := clock.NewFake()
	rec := New(Config{AudioSeconds: 1}, clk)
	dir := filepath.Join(t.TempDir(), "bundles")
	var paths []string
	for i := 0; i < 4; i++ {
		p, err := rec.DumpToDir(dir, 2, Meta{Version: "v"})
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
		clk.Advance(1e9)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) != 2 || left[0] != paths[2] || left[1] != paths[3] {
		t.Fatalf("left %v, want the last two of %v", left, paths)
	}
	if st, err := os.Stat(paths[3]); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("bundle mode: %v %v", st.Mode(), err)
	}
}

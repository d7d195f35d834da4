package spool

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
)

func open(t *testing.T, dir string, cfg Config) (*Log, *metrics.Registry) {
	t.Helper()
	cfg.Dir = dir
	reg := metrics.NewRegistry()
	l, err := Open(cfg, clock.NewReal(), reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l, reg
}

func put(t *testing.T, l *Log, id, data string) {
	t.Helper()
	tk, err := l.Append(id, []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(tk); err != nil {
		t.Fatal(err)
	}
}

func loaded(l *Log) []string {
	var out []string
	l.Load(func(id string, data []byte) { out = append(out, id+"="+string(data)) })
	return out
}

func TestRecoverUnsettledInOrder(t *testing.T) {
	dir := t.TempDir()
	l, _ := open(t, dir, Config{})
	for i := 1; i <= 5; i++ {
		put(t, l, fmt.Sprintf("b1-%d", i), fmt.Sprintf(`{"n":%d}`, i))
	}
	l.Settle("b1-2")
	l.Settle("b1-4")
	l.Close()
	// A "crash" without Close: settle records not yet written are lost,
	// which only means a resend.
	l2, _ := open(t, dir, Config{})
	if got, want := loaded(l2), []string{`b1-1={"n":1}`, `b1-3={"n":3}`, `b1-5={"n":5}`}; !slices.Equal(got, want) {
		t.Fatalf("recovered %v, want %v", got, want)
	}
	put(t, l2, "b2-1", "x")
	l2.Settle("b1-1")
	l2.Close()
	l3, _ := open(t, dir, Config{})
	if got, want := loaded(l3), []string{`b1-3={"n":3}`, `b1-5={"n":5}`, `b2-1=x`}; !slices.Equal(got, want) {
		t.Fatalf("after second restart %v, want %v", got, want)
	}
}

func TestUnsyncedSettleMeansResendNotLoss(t *testing.T) {
	dir := t.TempDir()
	l, _ := open(t, dir, Config{})
	put(t, l, "a-1", "x")
	l.Settle("a-1") // queued, not synced: simulate a crash by not closing
	l2, _ := open(t, dir, Config{})
	if got := loaded(l2); len(got) != 1 {
		t.Fatalf("recovered %v, want a-1 again (settle not yet durable)", got)
	}
}

func TestTornAndCorruptRecordsQuarantined(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
		want   []string
	}{
		{"torn tail (last write cut short, zeros after)", func(b []byte) []byte {
			i := bytes.Index(b, []byte("three"))
			clear(b[i+2 : i+5])
			return b
		}, []string{"e-1=one", "e-2=two"}},
		{"torn tail, file cut", func(b []byte) []byte { return b[:bytes.Index(b, []byte("three"))+3] }, []string{"e-1=one", "e-2=two"}},
		{"flipped bit in the middle record", func(b []byte) []byte {
			i := bytes.Index(b, []byte("two"))
			b[i] ^= 0x40
			return b
		}, []string{"e-1=one", "e-3=three"}},
		{"garbage after the records", func(b []byte) []byte {
			i := bytes.Index(b, []byte("three")) + 5
			copy(b[i:], "\x07\x00\x00\x00garbage!")
			return b
		}, []string{"e-1=one", "e-2=two", "e-3=three"}},
		{"bad header", func(b []byte) []byte { copy(b, "XXXXXXXX"); return b }, []string{"e-1=one", "e-2=two", "e-3=three"}},
		{"zeroed block", func(b []byte) []byte {
			i := bytes.Index(b, []byte("one"))
			clear(b[i-10 : i+3])
			return b
		}, []string{"e-2=two", "e-3=three"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, _ := open(t, dir, Config{})
			put(t, l, "e-1", "one")
			put(t, l, "e-2", "two")
			put(t, l, "e-3", "three")
			l.Close()
			p := filepath.Join(dir, FileName)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, tc.damage(b), 0o600)
			l2, reg := open(t, dir, Config{})
			if got := loaded(l2); !slices.Equal(got, tc.want) {
				t.Fatalf("recovered %v, want %v", got, tc.want)
			}
			if reg.Value("robot_agent_spool_quarantined_total") == 0 {
				t.Fatal("damage not counted")
			}
			side, _ := filepath.Glob(p + ".corrupt-*")
			if len(side) == 0 {
				t.Fatal("no quarantine side file")
			}
			// The rewritten file is clean: a third open sees no damage.
			put(t, l2, "e-4", "four")
			l2.Close()
			l3, reg3 := open(t, dir, Config{})
			if reg3.Value("robot_agent_spool_quarantined_total") != 0 {
				t.Fatal("damage seen again after the rewrite")
			}
			if got := loaded(l3); !slices.Equal(got, append(slices.Clone(tc.want), "e-4=four")) {
				t.Fatalf("third open %v", got)
			}
		})
	}
}

func TestCapRefusesNewKeepsOld(t *testing.T) {
	l, reg := open(t, t.TempDir(), Config{MaxBytes: 100})
	n := 0
	for i := 0; ; i++ {
		_, err := l.Append(fmt.Sprintf("c-%d", i), []byte(strings.Repeat("x", 20)))
		if errors.Is(err, ErrFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n == 0 || l.Len() != n {
		t.Fatalf("stored %d, Len %d", n, l.Len())
	}
	if reg.Value("robot_agent_spool_full_total") != 1 {
		t.Fatal("refusal not counted")
	}
	l.Settle("c-0")
	if _, err := l.Append("c-9", []byte(strings.Repeat("x", 20))); err != nil {
		t.Fatalf("after a settle there is room again: %v", err)
	}
}

func TestCompactionKeepsLive(t *testing.T) {
	dir := t.TempDir()
	l, reg := open(t, dir, Config{CompactBytes: 4096})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				put(t, l, id, strings.Repeat("d", 50))
				if i%10 != 0 {
					l.Settle(id)
				}
			}
		}()
	}
	wg.Wait()
	l.Close()
	if reg.Value("robot_agent_spool_compactions_total") < 2 {
		t.Fatalf("compactions %d, want several", reg.Value("robot_agent_spool_compactions_total"))
	}
	st, _ := os.Stat(filepath.Join(dir, FileName))
	l2, _ := open(t, dir, Config{})
	if got := len(loaded(l2)); got != 200 {
		t.Fatalf("recovered %d live events, want 200 (file %d bytes)", got, st.Size())
	}
}

func TestMemorySpoolAcrossRestart(t *testing.T) {
	m := NewMemory()
	for i := 1; i <= 3; i++ {
		if _, err := m.Append(fmt.Sprint(i), []byte("d")); err != nil {
			t.Fatal(err)
		}
	}
	m.Settle("2")
	var got []string
	m.Load(func(id string, _ []byte) { got = append(got, id) })
	if !slices.Equal(got, []string{"1", "3"}) {
		t.Fatalf("memory load %v", got)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(appendPut(nil, "boot-1", []byte(`{"type":"state"}`)))
	f.Add(appendSettle(nil, "boot-1"))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 1})
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, n, err := DecodeRecord(b)
		if err != nil {
			if !errors.Is(err, ErrTorn) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is neither torn nor corrupt", err)
			}
			return
		}
		if n < 10 || n > len(b) {
			t.Fatalf("length %d of %d", n, len(b))
		}
		// A valid record re-encodes to the same bytes.
		var re []byte
		if r.Settle {
			re = appendSettle(nil, r.ID)
		} else {
			re = appendPut(nil, r.ID, r.Data)
		}
		if !bytes.Equal(re, b[:n]) {
			t.Fatalf("re-encoding differs: %x vs %x", re, b[:n])
		}
	})
}

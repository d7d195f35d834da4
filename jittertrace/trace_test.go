package jittertrace

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	tests := []struct {
		name string
		in   string
		want []Frame
	}{
		{"plain", "0,480\n20,480\n", []Frame{{0, 480}, {ms(20), 480}}},
		{"comments, blanks, spaces, decimals", "# a trace\n\n  10.5 , 480 \n# mid\n30.25,960\n", []Frame{{0, 480}, {ms(19.75), 960}}},
		{"comments after the fields", "0,480 # first\n20,480# second\r\n  # indented\n", []Frame{{0, 480}, {ms(20), 480}}},
		{"CRLF and a byte-order mark", "\uFEFF5,480\r\n25,480\r\n", []Frame{{0, 480}, {ms(20), 480}}},
		{"CSV header", "arrival_ms,samples\n0,480\n", []Frame{{0, 480}}},
		{"header after comments, other case", "# from a capture\nArrival_MS, Samples\n0,480\n", []Frame{{0, 480}}},
		{"epoch milliseconds", "1733140000000.000,480\n1733140000020.500,480\n", []Frame{{0, 480}, {ms(20.5), 480}}},
		{"exponent", "1.5e3,480\n1.52e3,480\n", []Frame{{0, 480}, {ms(20), 480}}},
		{"negative origin", "-40,480\n-20,480\n", []Frame{{0, 480}, {ms(20), 480}}},
		{"earlier than the first kept as given", "100,480\n90,480\n", []Frame{{0, 480}, {ms(-10), 480}}},
		{"no newline at the end", "0,240000", []Frame{{0, 240000}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.in), "t")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if d := got[i].Arrival - tt.want[i].Arrival; d < -time.Microsecond || d > time.Microsecond || got[i].Samples != tt.want[i].Samples {
					t.Errorf("frame %d = %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, in, msg string }{
		{"empty", "", "t: no frames"},
		{"only comments", "# x\n\n", "t: no frames"},
		{"header only", "arrival_ms,samples\n", "t: no frames"},
		{"header after a frame", "0,480\narrival_ms,samples\n", `t:2: arrival_ms "arrival_ms" is not a number`},
		{"semicolon", "0;480\n", `t:1: want "arrival_ms,samples", got "0;480"`},
		{"three fields", "0,480,1\n", `t:1: want "arrival_ms,samples"`},
		{"a comment in place of samples", "0,# 480\n", `t:1: samples "" is not an integer`},
		{"NaN", "NaN,480\n", `t:1: arrival_ms "NaN" is not a number`},
		{"Inf", "0,480\n+Inf,480\n", `t:2: arrival_ms "+Inf" is not a number`},
		{"too far", "0,480\n2e9,480\n", "t:2: arrival_ms 2e9 is 2000000000 ms from the first frame's 0; at most 1e9 ms apart"},
		{"too early", "0,480\n-1.5e9,480\n", "t:2: arrival_ms -1.5e9 is -1500000000 ms"},
		{"zero samples", "0,0\n", `t:1: samples "0" is not an integer in [1, 240000]`},
		{"too many samples", "0,240001\n", `t:1: samples "240001"`},
		{"fractional samples", "0,480.5\n", `t:1: samples "480.5"`},
		{"long line clipped", "0," + strings.Repeat("9", 100) + "\n", "…"},
		{"line too long", strings.Repeat("1", 2<<20) + ",480\n", "t:1: bufio.Scanner: token too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tt.in), "t")
			if !errors.Is(err, ErrTrace) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %v, want ErrTrace containing %q", err, tt.msg)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q spans lines", err)
			}
		})
	}
}

// TestWriteParseRoundTrip: a generated trace survives Write and Parse
// (to the microsecond Write prints), relative to its first frame.
func TestWriteParseRoundTrip(t *testing.T) {
	frames, err := Generate(GenConfig{Kind: "lte", Seed: 3, Duration: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, frames, "lte seed 3"); err != nil {
		t.Fatal(err)
	}
	got, err := Parse(&b, "gen")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(frames) {
		t.Fatalf("%d frames, wrote %d", len(got), len(frames))
	}
	for i := range got {
		want := frames[i].Arrival - frames[0].Arrival
		if d := got[i].Arrival - want; d < -2*time.Microsecond || d > 2*time.Microsecond || got[i].Samples != frames[i].Samples {
			t.Fatalf("frame %d = %v, want %v", i, got[i], Frame{want, frames[i].Samples})
		}
	}
}

// TestParseOriginDoesNotChangeTheReplay: the same arrivals written from two
// origins (one of them epoch milliseconds) replay identically.
func TestParseOriginDoesNotChangeTheReplay(t *testing.T) {
	frames, err := Generate(GenConfig{Kind: "busywifi", Seed: 2, Duration: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	shifted := func(origin float64) []Frame {
		var b strings.Builder
		for _, f := range frames {
			fmt.Fprintf(&b, "%.3f,%d\n", origin+float64(f.Arrival)/float64(time.Millisecond), f.Samples)
		}
		got, err := Parse(strings.NewReader(b.String()), "s")
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	a, b := shifted(3.7), shifted(1733140000000)
	replay := func(fr []Frame) Result { return replayAdaptive(t, fr) }
	// Epoch milliseconds printed to 0.001 ms carry float64 rounding of
	// about 0.2 µs, so compare to the microsecond.
	near := func(x, y time.Duration) bool { return (x - y).Abs() < time.Microsecond }
	if ra, rb := replay(a), replay(b); ra.Played == 0 || ra.Played != rb.Played || ra.Underruns != rb.Underruns ||
		!near(ra.P50, rb.P50) || !near(ra.P95, rb.P95) || !near(ra.P99, rb.P99) || !near(ra.Growth, rb.Growth) ||
		math.Abs(ra.ConcealedPct-rb.ConcealedPct) > 1e-9 || math.Abs(ra.StretchedPct-rb.StretchedPct) > 1e-9 {
		t.Errorf("origin changed the replay:\n%v\n%v", ra, rb)
	}
}

func ExampleParse() {
	trace := "# arrival_ms,samples: 20 ms frames of 24 kHz audio\n" +
		"1733140000000.0,480\n" +
		"1733140000021.5,480\n" +
		"1733140000039.0,480\n"
	frames, err := Parse(strings.NewReader(trace), "example.trace")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	for _, f := range frames {
		fmt.Println(f.Arrival, f.Samples)
	}
	// Output:
	// 0s 480
	// 21.5ms 480
	// 39ms 480
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("0,480\n20,480\n"))
	f.Add([]byte("\uFEFFarrival_ms,samples\r\n1e12,480\r\n"))
	f.Add([]byte("# c\n\n 1 , 2 \n"))
	f.Add([]byte("-5,1\n1e9,240000\n"))
	f.Add([]byte("NaN,1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		frames, err := Parse(bytes.NewReader(b), "fuzz")
		if err != nil {
			if !errors.Is(err, ErrTrace) {
				t.Fatalf("error %q is not ErrTrace", err)
			}
			return
		}
		if len(frames) == 0 || frames[0].Arrival != 0 {
			t.Fatalf("accepted %d frames, first at %v", len(frames), frames[0].Arrival)
		}
		for _, fr := range frames {
			if fr.Samples < 1 || fr.Samples > MaxFrameSamples || fr.Arrival > MaxSpanMS*time.Millisecond || fr.Arrival < -MaxSpanMS*time.Millisecond {
				t.Fatalf("accepted frame %v", fr)
			}
		}
	})
}

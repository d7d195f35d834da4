package h264

import (
	"bytes"
	"errors"
	"testing"
)

func TestNALUnits(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want [][]byte
	}{
		{"empty", nil, nil},
		{"no start code", []byte{1, 2, 3, 4}, nil},
		{"3-byte start", []byte{0, 0, 1, 0x67, 1, 2}, [][]byte{{0x67, 1, 2}}},
		{"4-byte start", []byte{0, 0, 0, 1, 0x65, 9}, [][]byte{{0x65, 9}}},
		{"leading garbage", []byte{7, 7, 0, 0, 1, 0x41}, [][]byte{{0x41}}},
		{"two units, 4-byte second", []byte{0, 0, 0, 1, 0x67, 5, 0, 0, 0, 1, 0x68, 6}, [][]byte{{0x67, 5}, {0x68, 6}}},
		{"trailing zeros stripped", []byte{0, 0, 1, 0x06, 8, 0, 0, 0, 0, 1, 0x65, 1}, [][]byte{{0x06, 8}, {0x65, 1}}},
		{"emulation prevention kept", []byte{0, 0, 1, 0x67, 0, 0, 3, 1}, [][]byte{{0x67, 0, 0, 3, 1}}},
		{"empty unit skipped", []byte{0, 0, 1, 0, 0, 1, 0x09, 0xf0}, [][]byte{{0x09, 0xf0}}},
		{"start code at end", []byte{0, 0, 1, 0x41, 2, 0, 0, 1}, [][]byte{{0x41, 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got [][]byte
			for n := range NALUnits(tt.in) {
				got = append(got, n)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d units %x, want %d %x", len(got), got, len(tt.want), tt.want)
			}
			for i := range got {
				if !bytes.Equal(got[i], tt.want[i]) {
					t.Fatalf("unit %d = %x, want %x", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestNALUnitsStopsEarly(t *testing.T) {
	n := 0
	for range NALUnits([]byte{0, 0, 1, 0x67, 0, 0, 1, 0x68, 0, 0, 1, 0x65}) {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("iterated %d units after break", n)
	}
}

// sps640x480 is the SPS this package's x264 encoder writes for 640x480
// baseline at 15 fps (level 2.2).
var sps640x480 = []byte{0x67, 0x42, 0xc0, 0x16, 0xda, 0x02, 0x80, 0xf6, 0x84, 0x00, 0x00, 0x03, 0x00, 0x04, 0x00, 0x00, 0x03, 0x00, 0x7a, 0x3c, 0x58, 0xba, 0x80}

func TestInspectAndSPS(t *testing.T) {
	au := append([]byte{0, 0, 0, 1}, sps640x480...)
	au = append(au, 0, 0, 0, 1, 0x68, 0xce, 0x3c, 0x80)
	au = append(au, 0, 0, 1, 0x65, 0x88, 0x84)
	in := Inspect(au)
	if !in.Key() || in.NALs != 3 || in.Slices != 1 {
		t.Fatalf("Inspect = %+v, want an IDR with SPS and PPS in 3 units", in)
	}
	s, err := FindSPS(au)
	if err != nil {
		t.Fatal(err)
	}
	if s.Width != 640 || s.Height != 480 || s.ProfileIDC != 66 || s.LevelIDC != 22 {
		t.Fatalf("SPS = %+v, want 640x480 baseline (66) level 2.2", s)
	}
	if p := Inspect([]byte{0, 0, 1, 0x41, 0x9a}); p.Key() || p.IDR || p.Slices != 1 {
		t.Fatalf("P slice inspected as %+v", p)
	}
	if p := Inspect([]byte{0, 0, 1, 0x65, 0x88}); p.Key() {
		t.Fatalf("IDR without parameter sets reported as a self-contained key frame")
	}
}

func TestParseSPSErrors(t *testing.T) {
	for name, nal := range map[string][]byte{
		"not sps":   {0x68, 1, 2},
		"empty":     {},
		"truncated": sps640x480[:6],
	} {
		if _, err := ParseSPS(nal); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
	if _, err := FindSPS([]byte{0, 0, 1, 0x41, 1}); !errors.Is(err, ErrMalformed) {
		t.Errorf("FindSPS without SPS: err = %v", err)
	}
}

func FuzzNALUnits(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0x67, 1, 0, 0, 1, 0x68, 2, 0, 0, 1, 0x65, 3})
	f.Add(append([]byte{0, 0, 1}, sps640x480...))
	f.Fuzz(func(t *testing.T, b []byte) {
		total := 0
		for n := range NALUnits(b) {
			if len(n) == 0 || n[len(n)-1] == 0 {
				t.Fatalf("unit %x is empty or ends in a zero byte", n)
			}
			if bytes.Contains(n, []byte{0, 0, 1}) {
				t.Fatalf("unit %x contains a start code", n)
			}
			total += len(n)
		}
		if total > len(b) {
			t.Fatalf("units hold %d bytes of a %d-byte input", total, len(b))
		}
		Inspect(b)
	})
}

func FuzzParseSPS(f *testing.F) {
	f.Add(sps640x480)
	f.Add([]byte{0x67, 100, 0, 40, 0xac, 0xd9, 0x40, 0x50, 0x05, 0xbb, 0x01, 0x10})
	f.Fuzz(func(t *testing.T, nal []byte) {
		s, err := ParseSPS(nal)
		if err == nil && (s.Width <= 0 || s.Height <= 0 || s.Width > 16384 || s.Height > 32768) {
			t.Fatalf("accepted SPS with picture %dx%d", s.Width, s.Height)
		}
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v does not wrap ErrMalformed", err)
		}
	})
}

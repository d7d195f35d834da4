package pcm

import (
	"math"
	"testing"
)

func TestBytesToInt16(t *testing.T) {
	tests := []struct {
		name string
		dst  int
		src  []byte
		want []int16
	}{
		{"empty", 4, nil, []int16{}},
		{"one", 4, []byte{0x34, 0x12}, []int16{0x1234}},
		{"negative and extremes", 4, []byte{0xff, 0xff, 0x00, 0x80, 0xff, 0x7f}, []int16{-1, -32768, 32767}},
		{"odd trailing byte ignored", 4, []byte{1, 0, 2}, []int16{1}},
		{"dst shorter", 1, []byte{1, 0, 2, 0}, []int16{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := make([]int16, tt.dst)
			n := BytesToInt16(dst, tt.src)
			if n != len(tt.want) {
				t.Fatalf("n = %d, want %d", n, len(tt.want))
			}
			for i, w := range tt.want {
				if dst[i] != w {
					t.Errorf("dst[%d] = %d, want %d", i, dst[i], w)
				}
			}
		})
	}
}

func TestInt16ToBytes(t *testing.T) {
	tests := []struct {
		name string
		dst  int
		src  []int16
		want []byte
	}{
		{"empty", 4, nil, []byte{}},
		{"values", 6, []int16{0x1234, -1, -32768}, []byte{0x34, 0x12, 0xff, 0xff, 0x00, 0x80}},
		{"dst shorter", 3, []int16{1, 2}, []byte{1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := make([]byte, tt.dst)
			n := Int16ToBytes(dst, tt.src)
			if 2*n != len(tt.want) {
				t.Fatalf("n = %d, want %d", n, len(tt.want)/2)
			}
			for i, w := range tt.want {
				if dst[i] != w {
					t.Errorf("dst[%d] = %#x, want %#x", i, dst[i], w)
				}
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	src := []int16{0, 1, -1, 32767, -32768, 12345, -12345}
	b := make([]byte, 2*len(src))
	Int16ToBytes(b, src)
	got := make([]int16, len(src))
	BytesToInt16(got, b)
	for i := range src {
		if got[i] != src[i] {
			t.Errorf("sample %d: %d != %d", i, got[i], src[i])
		}
	}
}

func TestLevels(t *testing.T) {
	sine := make([]int16, 1600)
	for i := range sine {
		sine[i] = int16(math.Round(16384 * math.Sin(2*math.Pi*float64(i)/16)))
	}
	tests := []struct {
		name     string
		s        []int16
		rms, dbf float64
		peak     int
	}{
		{"empty", nil, 0, MinDBFS, 0},
		{"silence", make([]int16, 10), 0, MinDBFS, 0},
		{"square full scale", []int16{-32768, -32768}, 32768, 0, 32768},
		{"square half", []int16{16384, -16384}, 16384, -6.0206, 16384},
		{"half sine", sine, 16384 / math.Sqrt2, -9.0309, 16384},
		{"lsb", []int16{1}, 1, -90.309, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RMS(tt.s); math.Abs(got-tt.rms) > 0.5 {
				t.Errorf("RMS = %v, want %v", got, tt.rms)
			}
			if got := DBFS(tt.s); math.Abs(got-tt.dbf) > 0.01 {
				t.Errorf("DBFS = %v, want %v", got, tt.dbf)
			}
			if got := Peak(tt.s); got != tt.peak {
				t.Errorf("Peak = %v, want %v", got, tt.peak)
			}
		})
	}
	if got := RMSToDBFS(DBFSToRMS(-60)); math.Abs(got+60) > 1e-9 {
		t.Errorf("DBFSToRMS/RMSToDBFS round trip of -60 = %v", got)
	}
}

func TestNCC(t *testing.T) {
	n := 1000
	sine, neg, half, other := make([]int16, n), make([]int16, n), make([]int16, n), make([]int16, n)
	for i := range sine {
		sine[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/16000))
		neg[i] = -sine[i]
		half[i] = sine[i] / 2
		other[i] = int16(8000 * math.Cos(2*math.Pi*440*float64(i)/16000)) // quadrature: ~0
	}
	for _, tt := range []struct {
		name string
		a, b []int16
		want float64
		tol  float64
	}{
		{"same", sine, sine, 1, 1e-12},
		{"scaled copy", sine, half, 1, 1e-4},
		{"inverted", sine, neg, -1, 1e-12},
		{"quadrature", sine, other, 0, 0.02},
		{"silent", sine, make([]int16, n), 0, 0},
		{"empty", nil, sine, 0, 0},
		{"common length", sine[:10], append(append([]int16{}, sine[:10]...), neg...), 1, 1e-12},
	} {
		if got := NCC(tt.a, tt.b); math.Abs(got-tt.want) > tt.tol {
			t.Errorf("%s: NCC = %v, want %v ± %v", tt.name, got, tt.want, tt.tol)
		}
	}
}

func TestNoAllocs(t *testing.T) {
	s := make([]int16, 320)
	b := make([]byte, 640)
	allocs := testing.AllocsPerRun(100, func() {
		Int16ToBytes(b, s)
		BytesToInt16(s, b)
		_ = DBFS(s)
		_ = Peak(s)
		_ = NCC(s, s)
	})
	if allocs != 0 {
		t.Errorf("allocs per run = %v, want 0", allocs)
	}
}

func TestZeroRun(t *testing.T) {
	for _, tc := range []struct {
		s    []int16
		want int
	}{
		{nil, 0},
		{[]int16{1, 2, 3}, 0},
		{[]int16{0, 0, 0}, 3},
		{[]int16{0, 1, 0, 0, 2, 0}, 2},
		{[]int16{5, 0, 0, 0}, 3},
	} {
		if got := ZeroRun(tc.s); got != tc.want {
			t.Errorf("ZeroRun(%v) = %d, want %d", tc.s, got, tc.want)
		}
	}
}

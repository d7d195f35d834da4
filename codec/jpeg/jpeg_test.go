package jpeg

import (
	"bytes"
	"errors"
	"image"
	stdjpeg "image/jpeg"
	"testing"
)

func testImage(w, h int) *image.YCbCr {
	img := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	for i := range img.Y {
		img.Y[i] = uint8(i * 7)
	}
	for i := range img.Cb {
		img.Cb[i], img.Cr[i] = uint8(i), uint8(255-i)
	}
	return img
}

func TestEncodeParse(t *testing.T) {
	var e Encoder
	b, err := e.Encode(testImage(320, 240))
	if err != nil {
		t.Fatal(err)
	}
	info, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if info != (Info{Width: 320, Height: 240, Components: 3, HasDHT: true}) {
		t.Fatalf("Parse = %+v", info)
	}
	cfg, err := stdjpeg.DecodeConfig(bytes.NewReader(b))
	if err != nil || cfg.Width != 320 || cfg.Height != 240 {
		t.Fatalf("image/jpeg sees %+v, %v", cfg, err)
	}
	e.Quality = 101
	if _, err := e.Encode(testImage(16, 16)); err == nil {
		t.Fatal("quality 101 accepted")
	}
}

// stripDHT removes every DHT segment, as motion-JPEG cameras send frames.
func stripDHT(t *testing.T, b []byte) []byte {
	t.Helper()
	_, sos, err := walk(b)
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte(nil), b[:2]...)
	for i := 2; i < sos; {
		n := int(b[i+2])<<8 | int(b[i+3])
		if b[i+1] != mDHT {
			out = append(out, b[i:i+2+n]...)
		}
		i += 2 + n
	}
	return append(out, b[sos:]...)
}

func TestNormalize(t *testing.T) {
	var e Encoder
	orig, err := e.Encode(testImage(64, 48))
	if err != nil {
		t.Fatal(err)
	}
	orig = append([]byte(nil), orig...)
	if got, err := Normalize(nil, orig); err != nil || &got[0] != &orig[0] {
		t.Fatalf("Normalize changed a complete JPEG (err %v)", err)
	}
	bare := stripDHT(t, orig)
	if info, _ := Parse(bare); info.HasDHT {
		t.Fatal("stripDHT left tables")
	}
	if _, err := stdjpeg.Decode(bytes.NewReader(bare)); err == nil {
		t.Fatal("image/jpeg decoded a frame without Huffman tables; the test proves nothing")
	}
	fixed, err := Normalize(nil, bare)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := stdjpeg.Decode(bytes.NewReader(orig))
	got, err := stdjpeg.Decode(bytes.NewReader(fixed))
	if err != nil {
		t.Fatalf("normalized frame does not decode: %v", err)
	}
	wy, gy := want.(*image.YCbCr), got.(*image.YCbCr)
	if !bytes.Equal(wy.Y, gy.Y) || !bytes.Equal(wy.Cb, gy.Cb) || !bytes.Equal(wy.Cr, gy.Cr) {
		t.Fatal("normalized frame decodes to a different picture")
	}
}

func TestParseErrors(t *testing.T) {
	var e Encoder
	good, _ := e.Encode(testImage(16, 16))
	good = append([]byte(nil), good...)
	tests := map[string][]byte{
		"empty":          nil,
		"no SOI":         {0x89, 'P', 'N', 'G'},
		"truncated":      good[:20],
		"EOI first":      {0xff, mSOI, 0xff, mEOI},
		"SOS before SOF": {0xff, mSOI, 0xff, mSOS, 0, 2},
		"bad length":     {0xff, mSOI, 0xff, 0xe0, 0xff, 0xff, 0},
		"zero size":      {0xff, mSOI, 0xff, mSOF0, 0, 8, 8, 0, 0, 0, 0, 3},
		"lossless":       {0xff, mSOI, 0xff, 0xc3, 0, 8, 8, 0, 1, 0, 1, 1},
		"garbage byte":   {0xff, mSOI, 0x12},
	}
	for name, b := range tests {
		if _, err := Parse(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
		if _, err := Normalize(nil, b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Normalize err = %v, want ErrMalformed", name, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	var e Encoder
	good, _ := e.Encode(testImage(16, 16))
	f.Add(append([]byte(nil), good...))
	f.Add([]byte{0xff, mSOI, 0xff, mSOF0, 0, 8, 8, 0, 16, 0, 16, 3, 0xff, mSOS, 0, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if info.Width <= 0 || info.Height <= 0 {
			t.Fatalf("accepted %+v", info)
		}
		out, err := Normalize(nil, b)
		if err != nil {
			t.Fatalf("Parse accepted what Normalize refused: %v", err)
		}
		if i2, err := Parse(out); err != nil || !i2.HasDHT || i2.Width != info.Width || i2.Height != info.Height {
			t.Fatalf("normalized: %+v, %v (from %+v)", i2, err, info)
		}
	})
}

func BenchmarkEncode640x480(b *testing.B) {
	img := testImage(640, 480)
	var e Encoder
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		out, err := e.Encode(img)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(out)))
	}
}

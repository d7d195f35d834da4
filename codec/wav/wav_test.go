package wav

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// memFile is an in-memory io.WriteSeeker.
type memFile struct {
	b   []byte
	off int64
}

func (m *memFile) Write(p []byte) (int, error) {
	if need := m.off + int64(len(p)); need > int64(len(m.b)) {
		m.b = append(m.b, make([]byte, need-int64(len(m.b)))...)
	}
	copy(m.b[m.off:], p)
	m.off += int64(len(p))
	return len(p), nil
}

func (m *memFile) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += m.off
	case io.SeekEnd:
		off += int64(len(m.b))
	}
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	m.off = off
	return off, nil
}

// chunk builds a RIFF chunk (with pad byte for odd sizes); size overrides
// the size field when >= 0.
func chunk(id string, body []byte, size int64) []byte {
	b := []byte(id)
	if size < 0 {
		size = int64(len(body))
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(size))
	b = append(b, body...)
	if len(body)%2 == 1 {
		b = append(b, 0)
	}
	return b
}

func fmtBody(tag, channels uint16, rate uint32, bits, align uint16) []byte {
	b := binary.LittleEndian.AppendUint16(nil, tag)
	b = binary.LittleEndian.AppendUint16(b, channels)
	b = binary.LittleEndian.AppendUint32(b, rate)
	b = binary.LittleEndian.AppendUint32(b, rate*uint32(align))
	b = binary.LittleEndian.AppendUint16(b, align)
	return binary.LittleEndian.AppendUint16(b, bits)
}

func extBody(channels uint16, rate uint32, subTag uint16) []byte {
	b := fmtBody(tagExtensible, channels, rate, 16, 2*channels)
	b = binary.LittleEndian.AppendUint16(b, 22)  // cbSize
	b = binary.LittleEndian.AppendUint16(b, 16)  // valid bits
	b = binary.LittleEndian.AppendUint32(b, 0x4) // channel mask
	b = binary.LittleEndian.AppendUint16(b, subTag)
	return append(b, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71)
}

func extBodyBits(channels uint16, rate uint32, subTag, bits uint16) []byte {
	b := fmtBody(tagExtensible, channels, rate, bits, bits/8*channels)
	b = binary.LittleEndian.AppendUint16(b, 22)   // cbSize
	b = binary.LittleEndian.AppendUint16(b, bits) // valid bits
	b = binary.LittleEndian.AppendUint32(b, 0x4)  // channel mask
	b = binary.LittleEndian.AppendUint16(b, subTag)
	return append(b, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71)
}

func le32(v ...int64) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	return b
}

func f32(v ...float32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func f64(v ...float64) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

func samplesBody(s ...int16) []byte {
	var b []byte
	for _, v := range s {
		b = binary.LittleEndian.AppendUint16(b, uint16(v))
	}
	return b
}

func riff(chunks ...[]byte) []byte {
	body := []byte("WAVE")
	for _, c := range chunks {
		body = append(body, c...)
	}
	return append(append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(len(body)))...), body...)
}

var monoFmt = chunk("fmt ", fmtBody(1, 1, 16000, 16, 2), -1)

func TestDecodeValid(t *testing.T) {
	tests := []struct {
		name     string
		file     []byte
		rate, ch int
		want     []int16
	}{
		{"mono", riff(monoFmt, chunk("data", samplesBody(1, -2, 3), -1)), 16000, 1, []int16{1, -2, 3}},
		{"stereo 48k", riff(chunk("fmt ", fmtBody(1, 2, 48000, 16, 4), -1), chunk("data", samplesBody(1, 2, 3, 4), -1)), 48000, 2, []int16{1, 2, 3, 4}},
		{"LIST before fmt and odd chunk after", riff(chunk("LIST", []byte("INFOISFT\x03\x00\x00\x00abc"), -1), monoFmt, chunk("junk", []byte{1, 2, 3}, -1), chunk("data", samplesBody(7), -1)), 16000, 1, []int16{7}},
		{"fmt with cbSize", riff(chunk("fmt ", append(fmtBody(1, 1, 8000, 16, 2), 0, 0), -1), chunk("data", samplesBody(5, 6), -1)), 8000, 1, []int16{5, 6}},
		{"extensible PCM", riff(chunk("fmt ", extBody(1, 16000, 1), -1), chunk("data", samplesBody(9), -1)), 16000, 1, []int16{9}},
		{"chunk after data", riff(monoFmt, chunk("data", samplesBody(1, 2), -1), chunk("LIST", []byte("INFO"), -1)), 16000, 1, []int16{1, 2}},
		{"unknown data size reads to EOF", riff(monoFmt, chunk("data", samplesBody(1, 2, 3), unknownSize)), 16000, 1, []int16{1, 2, 3}},
		{"odd data size ignores last byte", riff(monoFmt, chunk("data", append(samplesBody(4), 9), -1)), 16000, 1, []int16{4}},
		{"empty data", riff(monoFmt, chunk("data", nil, -1)), 16000, 1, []int16{}},
		{"8-bit unsigned", riff(chunk("fmt ", fmtBody(1, 1, 8000, 8, 1), -1), chunk("data", []byte{0, 128, 255, 129}, -1)), 8000, 1, []int16{-32768, 0, 32512, 256}},
		{"24-bit rounds to 16", riff(chunk("fmt ", fmtBody(1, 1, 48000, 24, 3), -1), chunk("data", []byte{
			0x00, 0x01, 0x00, // 256 -> 1
			0x80, 0xFF, 0xFF, // -128 -> -0.5 rounds to 0
			0x7F, 0x00, 0x00, // 127 -> 0.496 -> 0
			0x80, 0x00, 0x00, // 128 -> 0.5 -> 1
			0xFF, 0xFF, 0x7F, // max -> clipped 32767
			0x00, 0x00, 0x80, // min
			0x00, 0xFE, 0xFF, // -512 -> -2
		}, -1)), 48000, 1, []int16{1, 0, 0, 1, 32767, -32768, -2}},
		{"20 valid bits in 24", riff(chunk("fmt ", fmtBody(1, 1, 48000, 20, 3), -1), chunk("data", []byte{0x00, 0x10, 0x00}, -1)), 48000, 1, []int16{16}},
		{"32-bit integer", riff(chunk("fmt ", fmtBody(1, 1, 16000, 32, 4), -1), chunk("data", le32(0x00010000, -0x00020000, 0x7FFFFFFF, -0x80000000, 0x8000), -1)), 16000, 1, []int16{1, -2, 32767, -32768, 1}},
		{"float32", riff(chunk("fmt ", fmtBody(3, 1, 16000, 32, 4), -1), chunk("fact", le32(5), -1), chunk("data", f32(0, 0.5, -1, 1.5, float32(math.NaN()), float32(math.Inf(-1))), -1)), 16000, 1, []int16{0, 16384, -32768, 32767, 0, 0}},
		{"float64 stereo", riff(chunk("fmt ", fmtBody(3, 2, 44100, 64, 16), -1), chunk("data", f64(0.25, -0.25, -2, 1.0/32768), -1)), 44100, 2, []int16{8192, -8192, -32768, 1}},
		{"extensible float", riff(chunk("fmt ", extBodyBits(1, 16000, 3, 32), -1), chunk("data", f32(-0.5), -1)), 16000, 1, []int16{-16384}},
		{"extensible 24-bit", riff(chunk("fmt ", extBodyBits(1, 16000, 1, 24), -1), chunk("data", []byte{0x00, 0x01, 0x00}, -1)), 16000, 1, []int16{1}},
		// G.711 values as sox decodes them.
		{"A-law", riff(chunk("fmt ", fmtBody(6, 1, 8000, 8, 1), -1), chunk("data", []byte{0xD5, 0x55, 0xAA, 0x2A, 0x80}, -1)), 8000, 1, []int16{8, -8, 32256, -32256, 5504}},
		{"mu-law", riff(chunk("fmt ", fmtBody(7, 1, 8000, 8, 1), -1), chunk("data", []byte{0xFF, 0x7F, 0x80, 0x00, 0xFE}, -1)), 8000, 1, []int16{0, 0, 32124, -32124, 8}},
		{"6 channels", riff(chunk("fmt ", fmtBody(1, 6, 48000, 16, 12), -1), chunk("data", samplesBody(1, 2, 3, 4, 5, 6), -1)), 48000, 6, []int16{1, 2, 3, 4, 5, 6}},
		{"partial 24-bit sample ignored", riff(chunk("fmt ", fmtBody(1, 1, 48000, 24, 3), -1), chunk("data", []byte{0x00, 0x02, 0x00, 0x00, 0x03}, -1)), 48000, 1, []int16{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Decode(bytes.NewReader(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if a.SampleRate != tt.rate || a.Channels != tt.ch {
				t.Errorf("format %d Hz x %d, want %d x %d", a.SampleRate, a.Channels, tt.rate, tt.ch)
			}
			if !slices.Equal(a.Samples, tt.want) {
				t.Errorf("samples %v, want %v", a.Samples, tt.want)
			}
		})
	}
}

func TestDecodeFloat(t *testing.T) {
	tests := []struct {
		name string
		file []byte
		want []float32
	}{
		{"float32 beyond full scale and below PCM16's step", riff(chunk("fmt ", fmtBody(3, 1, 16000, 32, 4), -1), chunk("data", f32(0, 1e-6, -4, 2.5, float32(math.NaN()), float32(math.Inf(1))), -1)), []float32{0, 1e-6, -4, 2.5, 0, 0}},
		{"float64", riff(chunk("fmt ", fmtBody(3, 1, 44100, 64, 8), -1), chunk("data", f64(-1e-7, 3), -1)), []float32{-1e-7, 3}},
		{"16-bit", riff(monoFmt, chunk("data", samplesBody(16384, -32768, 1), -1)), []float32{0.5, -1, 1.0 / 32768}},
		{"24-bit keeps its low byte", riff(chunk("fmt ", fmtBody(1, 1, 48000, 24, 3), -1), chunk("data", []byte{0x01, 0x00, 0x00, 0x00, 0x00, 0x80}, -1)), []float32{1.0 / (1 << 23), -1}},
		{"32-bit", riff(chunk("fmt ", fmtBody(1, 1, 16000, 32, 4), -1), chunk("data", le32(-0x80000000, 0x40000000), -1)), []float32{-1, 0.5}},
		{"8-bit", riff(chunk("fmt ", fmtBody(1, 1, 8000, 8, 1), -1), chunk("data", []byte{0, 192}, -1)), []float32{-1, 0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := DecodeFloat(bytes.NewReader(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a.Samples, tt.want) {
				t.Errorf("samples %v, want %v", a.Samples, tt.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	data := chunk("data", samplesBody(1), -1)
	tests := []struct {
		name      string
		file      []byte
		kind      error
		truncated bool
		msg       string
	}{
		{"empty", nil, ErrMalformed, true, "wav: truncated RIFF header: got 0 of 12 bytes"},
		{"truncated RIFF header", []byte("RIFF\x00\x00"), ErrMalformed, true, "truncated RIFF header"},
		{"not RIFF", []byte("OggS\x00\x00\x00\x00WAVE"), ErrMalformed, false, `wav: not a RIFF file (starts with "OggS")`},
		{"not WAVE", []byte("RIFF\x04\x00\x00\x00AVI "), ErrMalformed, false, `RIFF form type "AVI "`},
		{"RIFX", []byte("RIFX\x00\x00\x00\x04WAVE"), ErrUnsupported, false, "RIFX (big-endian)"},
		{"MP3", riff(chunk("fmt ", fmtBody(0x55, 1, 16000, 0, 1), -1), data), ErrUnsupported, false, "wav: format tag 85 (MPEG layer 3) not supported"},
		{"IMA ADPCM", riff(chunk("fmt ", fmtBody(0x11, 1, 8000, 4, 256), -1), data), ErrUnsupported, false, "wav: format tag 17 (IMA ADPCM) not supported"},
		{"extensible ADPCM", riff(chunk("fmt ", extBody(1, 16000, 2), -1), data), ErrUnsupported, false, "wav: format tag 2 (extensible MS ADPCM) not supported"},
		{"16-bit float", riff(chunk("fmt ", fmtBody(3, 1, 16000, 16, 2), -1), data), ErrUnsupported, false, "wav: 16-bit float not supported"},
		{"16-bit mu-law", riff(chunk("fmt ", fmtBody(7, 1, 8000, 16, 2), -1), data), ErrUnsupported, false, "wav: 16-bit mu-law not supported"},
		{"4-bit PCM", riff(chunk("fmt ", fmtBody(1, 1, 8000, 4, 1), -1), data), ErrUnsupported, false, "wav: 4-bit PCM not supported"},
		{"40-bit PCM", riff(chunk("fmt ", fmtBody(1, 1, 8000, 40, 5), -1), data), ErrUnsupported, false, "wav: 40-bit PCM not supported"},
		{"33 channels", riff(chunk("fmt ", fmtBody(1, 33, 48000, 16, 66), -1), data), ErrUnsupported, false, "wav: 33 channels not supported (want 1..32)"},
		{"24-bit block align", riff(chunk("fmt ", fmtBody(1, 2, 48000, 24, 4), -1), data), ErrMalformed, false, "wav: block align 4 does not match 2 channels x 24 bits"},
		{"0 channels", riff(chunk("fmt ", fmtBody(1, 0, 48000, 16, 0), -1), data), ErrUnsupported, false, "wav: 0 channels"},
		{"rate 0", riff(chunk("fmt ", fmtBody(1, 1, 0, 16, 2), -1), data), ErrUnsupported, false, "wav: sample rate 0 Hz not supported"},
		{"block align", riff(chunk("fmt ", fmtBody(1, 2, 16000, 16, 2), -1), data), ErrMalformed, false, "wav: block align 2 does not match 2 channels x 16 bits"},
		{"short fmt", riff(chunk("fmt ", make([]byte, 12), -1), data), ErrMalformed, false, `wav: "fmt " chunk of 12 bytes is shorter than 16`},
		{"short extensible", riff(chunk("fmt ", fmtBody(tagExtensible, 1, 16000, 16, 2), -1), data), ErrMalformed, false, "extensible"},
		{"data before fmt", riff(data, monoFmt), ErrMalformed, false, `wav: "data" chunk before "fmt " chunk`},
		{"two fmt", riff(monoFmt, monoFmt, data), ErrMalformed, false, `second "fmt "`},
		{"no chunks", riff(), ErrMalformed, true, `no "fmt " or "data" chunk`},
		{"no data", riff(monoFmt), ErrMalformed, true, `wav: no "data" chunk`},
		{"truncated chunk header", append(riff(monoFmt), 'L', 'I'), ErrMalformed, true, "truncated chunk header"},
		{"huge LIST", riff(chunk("LIST", []byte("INFO"), 0xFFFFFFF0), monoFmt, data), ErrMalformed, true, `truncated "LIST" chunk: declared 4294967280 bytes`},
		{"huge fmt", riff(chunk("fmt ", fmtBody(1, 1, 16000, 16, 2), 0xFFFFFFF0), data), ErrMalformed, true, `truncated "fmt " chunk`},
		{"truncated fmt", riff(chunk("fmt ", fmtBody(1, 1, 16000, 16, 2)[:10], 16)), ErrMalformed, true, `truncated "fmt " chunk`},
		{"truncated data", riff(monoFmt, chunk("data", samplesBody(1, 2), 1000)), ErrMalformed, true, `wav: truncated "data" chunk: declared 1000 bytes, 996 missing`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(bytes.NewReader(tt.file))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("error %q is not %v", err, tt.kind)
			}
			if got := errors.Is(err, io.ErrUnexpectedEOF); got != tt.truncated {
				t.Errorf("errors.Is(%q, io.ErrUnexpectedEOF) = %v, want %v", err, got, tt.truncated)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
		})
	}
}

func TestReaderTruncatedDataReturnsSamples(t *testing.T) {
	rd, err := NewReader(bytes.NewReader(riff(monoFmt, chunk("data", samplesBody(1, 2, 3), 100))))
	if err != nil {
		t.Fatal(err)
	}
	if rd.DataBytes() != 100 {
		t.Errorf("DataBytes = %d, want 100", rd.DataBytes())
	}
	dst := make([]int16, 10)
	n, err := rd.Read(dst)
	if n != 3 || !slices.Equal(dst[:3], []int16{1, 2, 3}) {
		t.Errorf("Read = %d %v, want the 3 samples present", n, dst[:n])
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("err = %v, want io.ErrUnexpectedEOF", err)
	}
	if n, err := rd.Read(dst); n != 0 || err != io.EOF {
		t.Errorf("Read after truncation = %d, %v; want 0, EOF", n, err)
	}
}

func roundTrip(t *testing.T, rate, channels int, samples []int16, chunkLen int) []byte {
	t.Helper()
	f := &memFile{}
	w, err := NewWriter(f, rate, channels)
	if err != nil {
		t.Fatal(err)
	}
	for s := samples; len(s) > 0; {
		n := min(chunkLen, len(s))
		if err := w.Write(s[:n]); err != nil {
			t.Fatal(err)
		}
		s = s[n:]
	}
	if got := w.Frames(); got != int64(len(samples)/channels) {
		t.Errorf("Frames = %d, want %d", got, len(samples)/channels)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := w.Write(samples[:channels]); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
	return f.b
}

func TestWriterRoundTrip(t *testing.T) {
	samples := make([]int16, 10000) // larger than the internal buffer
	for i := range samples {
		samples[i] = int16(i*37 - 5000)
	}
	for _, ch := range []int{1, 2} {
		b := roundTrip(t, 24000, ch, samples, 2*1234)
		if got, want := len(b), headerSize+2*len(samples); got != want {
			t.Errorf("%d ch: file is %d bytes, want %d", ch, got, want)
		}
		if got := binary.LittleEndian.Uint32(b[4:]); got != uint32(len(b)-8) {
			t.Errorf("%d ch: RIFF size %d, want %d", ch, got, len(b)-8)
		}
		if got := binary.LittleEndian.Uint32(b[40:]); got != uint32(2*len(samples)) {
			t.Errorf("%d ch: data size %d, want %d", ch, got, 2*len(samples))
		}
		a, err := Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if a.SampleRate != 24000 || a.Channels != ch || !slices.Equal(a.Samples, samples) {
			t.Errorf("%d ch: round trip mismatch: %d Hz x %d, %d samples", ch, a.SampleRate, a.Channels, len(a.Samples))
		}
		if a.Frames() != len(samples)/ch {
			t.Errorf("Frames = %d", a.Frames())
		}
	}
}

// WriteFile writes a file ReadFile reads back; a path it cannot create
// and a channel count NewWriter refuses are errors.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.wav")
	samples := []int16{1, -2, 3, -4, 5, -6}
	if err := WriteFile(p, 48000, 2, samples); err != nil {
		t.Fatal(err)
	}
	a, err := ReadFile(p)
	if err != nil || a.SampleRate != 48000 || a.Channels != 2 || !slices.Equal(a.Samples, samples) {
		t.Fatalf("read back %+v, %v", a, err)
	}
	if err := WriteFile(filepath.Join(dir, "no", "x.wav"), 16000, 1, samples); err == nil {
		t.Error("a file in a missing directory was written")
	}
	if err := WriteFile(p, 16000, 3, samples); err == nil {
		t.Error("3 channels accepted")
	}
}

func TestWriterUnclosedIsReadable(t *testing.T) {
	f := &memFile{}
	w, err := NewWriter(f, 16000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]int16{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	a, err := Decode(bytes.NewReader(f.b))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Samples, []int16{1, 2, 3}) {
		t.Errorf("samples %v", a.Samples)
	}
}

func TestWriterAtOffset(t *testing.T) {
	f := &memFile{}
	f.Write([]byte("prefix"))
	w, err := NewWriter(f, 16000, 1)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]int16{42})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	a, err := Decode(bytes.NewReader(f.b[6:]))
	if err != nil || !slices.Equal(a.Samples, []int16{42}) {
		t.Errorf("Decode = %v, %v", a.Samples, err)
	}
}

func TestWriterErrors(t *testing.T) {
	if _, err := NewWriter(&memFile{}, 16000, 3); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "3 channels") {
		t.Errorf("3 channels: %v", err)
	}
	if _, err := NewWriter(&memFile{}, 0, 1); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "sample rate 0") {
		t.Errorf("rate 0: %v", err)
	}
	w, _ := NewWriter(&memFile{}, 16000, 2)
	if err := w.Write([]int16{1, 2, 3}); err == nil || !strings.Contains(err.Error(), "not whole 2-channel frames") {
		t.Errorf("odd stereo write: %v", err)
	}
}

// discardSeeker accepts writes and seeks without storing anything.
type discardSeeker struct{ off int64 }

func (d *discardSeeker) Write(p []byte) (int, error) { d.off += int64(len(p)); return len(p), nil }
func (d *discardSeeker) Seek(off int64, whence int) (int64, error) {
	if whence == io.SeekCurrent {
		off += d.off
	}
	d.off = off
	return off, nil
}

func TestWriterNoAllocs(t *testing.T) {
	w, _ := NewWriter(&discardSeeker{}, 16000, 1)
	p := make([]int16, 320)
	allocs := testing.AllocsPerRun(100, func() {
		if err := w.Write(p); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("allocs per Write = %v, want 0", allocs)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.wav")
	if err := os.WriteFile(p, riff(chunk("fmt ", fmtBody(0x55, 1, 16000, 0, 1), -1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(p)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), p) {
		t.Errorf("ReadFile error %v should be ErrUnsupported and name the file", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.wav")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func FuzzRead(f *testing.F) {
	good := riff(monoFmt, chunk("data", samplesBody(1, 2, 3), -1))
	f.Add(good)
	f.Add(good[:11])
	f.Add(good[:20])
	f.Add(good[:len(good)-1])
	f.Add(riff(chunk("fmt ", fmtBody(1, 2, 44100, 16, 4), -1), chunk("LIST", []byte("INFOabcd"), -1), chunk("data", samplesBody(1, 2), -1)))
	f.Add(riff(chunk("fmt ", fmtBody(3, 1, 16000, 32, 4), -1), chunk("data", samplesBody(1), -1)))
	f.Add(riff(chunk("fmt ", extBody(2, 16000, 1), -1), chunk("data", samplesBody(1, 2), -1)))
	f.Add(riff(chunk("fmt ", extBody(1, 16000, 3), -1), chunk("data", samplesBody(1), -1)))
	f.Add(riff(chunk("fmt ", fmtBody(1, 1, 48000, 24, 3), -1), chunk("data", []byte{1, 2, 3, 4, 5, 6, 7}, -1)))
	f.Add(riff(chunk("fmt ", fmtBody(3, 3, 48000, 64, 24), -1), chunk("data", f64(0.5, -3, 1e300), -1)))
	f.Add(riff(chunk("fmt ", fmtBody(7, 1, 8000, 8, 1), -1), chunk("data", []byte{0, 0x80, 0xFF}, -1)))
	f.Add(riff(chunk("fmt ", extBodyBits(6, 48000, 1, 32), -1), chunk("data", le32(1, 2, 3, 4, 5, 6), -1)))
	f.Add(riff(chunk("LIST", nil, 0xFFFFFFFF), monoFmt))
	f.Add(riff(monoFmt, chunk("data", samplesBody(1), 0x7FFFFFFF)))
	f.Add(riff(monoFmt, chunk("data", samplesBody(1), unknownSize)))
	f.Add(riff(chunk("fmt ", fmtBody(1, 1, 16000, 16, 2), 0xFFFFFFFF)))
	f.Add([]byte("RIFX\x00\x00\x00\x00WAVE"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := Decode(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("error %q is neither ErrMalformed nor ErrUnsupported", err)
			}
			return
		}
		if a.Channels < 1 || a.Channels > MaxReadChannels || a.SampleRate < MinSampleRate || a.SampleRate > MaxSampleRate {
			t.Fatalf("accepted format %d Hz x %d", a.SampleRate, a.Channels)
		}
		if len(a.Samples) > len(b) {
			t.Fatalf("%d samples from %d bytes", len(a.Samples), len(b))
		}
		// The float path reads the same samples, each within PCM16's
		// rounding of the PCM16 one (or beyond full scale where that
		// clipped).
		fa, err := DecodeFloat(bytes.NewReader(b))
		if err != nil || len(fa.Samples) != len(a.Samples) || fa.SampleRate != a.SampleRate || fa.Channels != a.Channels {
			t.Fatalf("DecodeFloat: %d samples, %v; Decode: %d", len(fa.Samples), err, len(a.Samples))
		}
		for i, v := range fa.Samples {
			x := float64(v) * 32768
			if d := math.Abs(max(-32768, min(32767, x)) - float64(a.Samples[i])); d > 1 || v != v {
				t.Fatalf("sample %d: float %g, PCM16 %d", i, v, a.Samples[i])
			}
		}
		if a.Channels > MaxChannels {
			return // the Writer writes mono or stereo only
		}
		// Whole frames survive a write/read round trip.
		whole := a.Samples[:len(a.Samples)-len(a.Samples)%a.Channels]
		out := &memFile{}
		w, err := NewWriter(out, a.SampleRate, a.Channels)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(whole); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		a2, err := Decode(bytes.NewReader(out.b))
		if err != nil || !slices.Equal(a2.Samples, whole) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func TestAudioMono(t *testing.T) {
	a := Audio{SampleRate: 16000, Channels: 3, Samples: []int16{3, 6, 9, -1, -2, -3, 32767, 32767, 32767, 7}}
	if got, want := a.Mono(), []int16{6, -2, 32767}; !slices.Equal(got, want) {
		t.Errorf("Mono() = %v, want %v (a trailing partial frame is dropped)", got, want)
	}
	m := Audio{SampleRate: 16000, Channels: 1, Samples: []int16{1, 2}}
	got := m.Mono()
	got[0] = 9
	if m.Samples[0] != 1 {
		t.Error("Mono() of mono audio shares the caller's samples")
	}
}

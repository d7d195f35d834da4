package wav

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// Reader streams interleaved PCM16 samples out of a WAVE file, converting
// from the file's sample encoding (see the package documentation).
type Reader struct {
	r         io.Reader
	rate      int
	channels  int
	enc       encoding
	width     int   // bytes per sample in the file
	declared  int64 // data chunk size in bytes, -1 if unknown
	remaining int64 // bytes of the data chunk not yet read, -1 if unknown
	eof       bool
	buf       [4096]byte
}

// NewReader parses the RIFF header and chunks of r up to the start of the
// sample data and returns a Reader positioned there. Chunks other than
// "fmt " and "data" are skipped.
func NewReader(r io.Reader) (*Reader, error) {
	rd := &Reader{r: r}
	if err := rd.parseHeader(); err != nil {
		return nil, err
	}
	return rd, nil
}

// readFull wraps io.ReadFull, turning a short read into a malformed error
// that names what was being read.
func (rd *Reader) readFull(b []byte, what string) error {
	n, err := io.ReadFull(rd.r, b)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return malformed(io.ErrUnexpectedEOF, "truncated %s: got %d of %d bytes", what, n, len(b))
	default:
		return fmt.Errorf("wav: reading %s: %w", what, err)
	}
}

func (rd *Reader) skip(n int64, id string) error {
	m, err := io.CopyN(io.Discard, rd.r, n)
	if err == nil {
		return nil
	}
	if errors.Is(err, io.EOF) {
		return malformed(io.ErrUnexpectedEOF, "truncated %q chunk: declared %d bytes, got %d", id, n, m)
	}
	return fmt.Errorf("wav: skipping %q chunk: %w", id, err)
}

func (rd *Reader) parseHeader() error {
	var hdr [12]byte
	if err := rd.readFull(hdr[:], "RIFF header"); err != nil {
		return err
	}
	switch string(hdr[0:4]) {
	case "RIFF":
	case "RIFX":
		return unsupported("RIFX (big-endian) files not supported")
	case "RF64":
		return unsupported("RF64 files not supported")
	default:
		return malformed(nil, "not a RIFF file (starts with %q)", hdr[0:4])
	}
	if string(hdr[8:12]) != "WAVE" {
		return malformed(nil, "RIFF form type %q, want \"WAVE\"", hdr[8:12])
	}
	haveFmt := false
	for {
		var ch [8]byte
		n, err := io.ReadFull(rd.r, ch[:])
		if err != nil {
			if n == 0 && errors.Is(err, io.EOF) {
				if !haveFmt {
					return malformed(io.ErrUnexpectedEOF, "no \"fmt \" or \"data\" chunk")
				}
				return malformed(io.ErrUnexpectedEOF, "no \"data\" chunk")
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return malformed(io.ErrUnexpectedEOF, "truncated chunk header: got %d of 8 bytes", n)
			}
			return fmt.Errorf("wav: reading chunk header: %w", err)
		}
		id := string(ch[0:4])
		size := int64(binary.LittleEndian.Uint32(ch[4:8]))
		switch id {
		case "fmt ":
			if haveFmt {
				return malformed(nil, "second \"fmt \" chunk")
			}
			if err := rd.parseFmt(size); err != nil {
				return err
			}
			haveFmt = true
		case "data":
			if !haveFmt {
				return malformed(nil, "\"data\" chunk before \"fmt \" chunk")
			}
			if size == unknownSize {
				rd.declared, rd.remaining = -1, -1
			} else {
				rd.declared, rd.remaining = size, size
			}
			return nil
		default:
			if err := rd.skip(size+size&1, id); err != nil {
				return err
			}
		}
	}
}

func (rd *Reader) parseFmt(size int64) error {
	if size < 16 {
		return malformed(nil, "\"fmt \" chunk of %d bytes is shorter than 16", size)
	}
	var f [40]byte
	n := min(size, int64(len(f)))
	if err := rd.readFull(f[:n], "\"fmt \" chunk"); err != nil {
		return err
	}
	if rest := size + size&1 - n; rest > 0 {
		if err := rd.skip(rest, "fmt "); err != nil {
			return err
		}
	}
	tag := binary.LittleEndian.Uint16(f[0:])
	channels := int(binary.LittleEndian.Uint16(f[2:]))
	rate := int64(binary.LittleEndian.Uint32(f[4:]))
	blockAlign := int(binary.LittleEndian.Uint16(f[12:]))
	bits := int(binary.LittleEndian.Uint16(f[14:]))
	effTag, ext := tag, ""
	if tag == tagExtensible {
		if n < 40 {
			return malformed(nil, "extensible \"fmt \" chunk of %d bytes is shorter than 40", size)
		}
		// The subformat GUID starts with the plain format tag.
		effTag, ext = binary.LittleEndian.Uint16(f[24:]), "extensible "
	}
	enc, err := encodingOf(effTag, bits, ext)
	if err != nil {
		return err
	}
	width := enc.width()
	if channels < 1 || channels > MaxReadChannels {
		return unsupported("%d channels not supported (want 1..%d)", channels, MaxReadChannels)
	}
	if rate < MinSampleRate || rate > MaxSampleRate {
		return unsupported("sample rate %d Hz not supported (want %d..%d)", rate, MinSampleRate, MaxSampleRate)
	}
	if blockAlign != width*channels {
		return malformed(nil, "block align %d does not match %d channels x %d bits", blockAlign, channels, 8*width)
	}
	rd.enc, rd.width = enc, width
	rd.rate, rd.channels = int(rate), channels
	return nil
}

// SampleRate returns the file's frames per second.
func (rd *Reader) SampleRate() int { return rd.rate }

// Channels returns the number of interleaved channels (1..MaxReadChannels).
func (rd *Reader) Channels() int { return rd.channels }

// DataBytes returns the size of the data chunk as declared in the file, or
// -1 if the file says "until end of file".
func (rd *Reader) DataBytes() int64 { return rd.declared }

// Read decodes up to len(dst) interleaved samples into dst, converted to
// PCM16 (rounded, and clipped for float input beyond full scale). It returns
// io.EOF after the last sample. If the file ends before the declared data
// size, Read returns the samples it got together with an error wrapping
// ErrMalformed and io.ErrUnexpectedEOF. A trailing partial sample is
// ignored. Read does not allocate.
func (rd *Reader) Read(dst []int16) (int, error) {
	return read(rd, dst, rd.enc.decode)
}

// ReadFloat is Read with samples as float32 at full scale ±1.0, neither
// rounded nor clipped: float files keep values beyond full scale and
// below PCM16's step (an impulse response stored at a low level keeps its
// tail). NaN and infinities become 0. A Reader may mix Read and ReadFloat.
func (rd *Reader) ReadFloat(dst []float32) (int, error) {
	return read(rd, dst, rd.enc.decodeFloat)
}

// read is Read and ReadFloat with the sample decoder decode.
func read[T int16 | float32](rd *Reader, dst []T, decode func([]T, []byte) int) (int, error) {
	if rd.eof || rd.remaining == 0 {
		rd.eof = true
		return 0, io.EOF
	}
	w := int64(rd.width)
	total := 0
	for total < len(dst) && rd.remaining != 0 {
		want := min(w*int64(len(dst)-total), int64(len(rd.buf))/w*w)
		if rd.remaining > 0 {
			want = min(want, rd.remaining/w*w)
		}
		if want < w { // a partial sample left in the chunk
			rd.remaining = 0
			break
		}
		n, err := io.ReadFull(rd.r, rd.buf[:want])
		total += decode(dst[total:], rd.buf[:n])
		if rd.remaining > 0 {
			rd.remaining -= int64(n)
		}
		if err != nil {
			rd.eof = true
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				return total, fmt.Errorf("wav: reading data: %w", err)
			}
			if rd.remaining > 0 {
				return total, malformed(io.ErrUnexpectedEOF, "truncated \"data\" chunk: declared %d bytes, %d missing", rd.declared, rd.remaining)
			}
			rd.remaining = 0 // unknown size: end of file ends the data
			if total == 0 {
				return 0, io.EOF
			}
			return total, nil
		}
	}
	return total, nil
}

// Audio is a whole decoded file.
type Audio struct {
	SampleRate int
	Channels   int
	Samples    []int16 // interleaved
}

// Frames returns the number of sample frames (samples per channel).
func (a Audio) Frames() int { return len(a.Samples) / max(a.Channels, 1) }

// Mono returns the channels averaged into one, in a new slice.
func (a Audio) Mono() []int16 {
	ch := max(a.Channels, 1)
	mono := make([]int16, a.Frames())
	for i := range mono {
		var s int
		for _, v := range a.Samples[i*ch : (i+1)*ch] {
			s += int(v)
		}
		mono[i] = int16(s / ch)
	}
	return mono
}

// maxPrealloc bounds the buffer Decode reserves from the declared data size
// before any data has been read.
const maxPrealloc = 1 << 20

// Decode reads a whole WAVE file from r.
func Decode(r io.Reader) (Audio, error) {
	rd, err := NewReader(r)
	if err != nil {
		return Audio{}, err
	}
	buf, err := readAll(rd, rd.Read)
	if err != nil {
		return Audio{}, err
	}
	return Audio{SampleRate: rd.rate, Channels: rd.channels, Samples: buf}, nil
}

// FloatAudio is a whole decoded file as float32 samples (ReadFloat).
type FloatAudio struct {
	SampleRate int
	Channels   int
	Samples    []float32 // interleaved, full scale ±1.0
}

// DecodeFloat reads a whole WAVE file from r as float32 samples
// (Reader.ReadFloat: not rounded to PCM16, not clipped).
func DecodeFloat(r io.Reader) (FloatAudio, error) {
	rd, err := NewReader(r)
	if err != nil {
		return FloatAudio{}, err
	}
	buf, err := readAll(rd, rd.ReadFloat)
	if err != nil {
		return FloatAudio{}, err
	}
	return FloatAudio{SampleRate: rd.rate, Channels: rd.channels, Samples: buf}, nil
}

// readAll reads the rest of rd's data with read.
func readAll[T int16 | float32](rd *Reader, read func([]T) (int, error)) ([]T, error) {
	capHint := int64(maxPrealloc)
	if rd.declared >= 0 {
		capHint = min(rd.declared/int64(rd.width), maxPrealloc)
	}
	buf := make([]T, 0, capHint)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// ReadFile decodes the WAVE file at path.
func ReadFile(path string) (Audio, error) { return readFile(path, Decode) }

// ReadFileFloat decodes the WAVE file at path as float32 samples
// (DecodeFloat).
func ReadFileFloat(path string) (FloatAudio, error) { return readFile(path, DecodeFloat) }

// readFile is ReadFile and ReadFileFloat with the decoder decode.
func readFile[A Audio | FloatAudio](path string, decode func(io.Reader) (A, error)) (A, error) {
	var zero A
	f, err := os.Open(path)
	if err != nil {
		return zero, fmt.Errorf("wav: %w", err)
	}
	defer f.Close()
	a, err := decode(f)
	if err != nil {
		return zero, fmt.Errorf("%w (file %s)", err, path)
	}
	return a, nil
}

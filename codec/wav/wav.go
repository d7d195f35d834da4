// Package wav reads RIFF/WAVE files as 16-bit PCM and writes 16-bit PCM
// files, mono or stereo.
//
// The Reader streams samples from any io.Reader and skips chunks it does
// not need (LIST, fact, cue, ...). It reads what recorders, editors and
// impulse-response collections write: integer PCM of 8 (unsigned), 16, 24
// or 32 bits (or fewer valid bits in such a container), IEEE float of 32 or
// 64 bits, and G.711 A-law and µ-law, plain or as WAVE_FORMAT_EXTENSIBLE,
// with 1 to MaxReadChannels channels, and converts every sample to PCM16
// (rounded; float beyond full scale is clipped), or with ReadFloat to
// float32 at full scale ±1.0, neither rounded nor clipped (an impulse
// response stored at a low or high level keeps its shape). It rejects everything else
// with an error naming what it found (for example "wav: format tag 85
// (MPEG layer 3) not supported"). It never panics and never allocates in
// proportion to a size field it has not yet seen bytes for.
//
// The Writer streams samples to an io.WriteSeeker and fixes up the RIFF and
// data sizes on Close. Until then the sizes hold 0xFFFFFFFF, which the
// Reader (and most tools) read as "until end of file", so a recording cut
// short by a crash stays readable.
//
// # Concurrency
//
// A Reader or Writer is used by one goroutine at a time.
package wav

import (
	"errors"
	"fmt"
)

// Errors returned by this package; test with errors.Is. Truncated input
// additionally wraps io.ErrUnexpectedEOF.
var (
	// ErrMalformed reports a file that is not a well-formed WAVE file.
	ErrMalformed = errors.New("wav: malformed file")
	// ErrUnsupported reports a well-formed file in a format this package
	// does not handle (compressed, more than MaxReadChannels channels, ...).
	ErrUnsupported = errors.New("wav: unsupported format")
)

// Limits accepted by the Reader and Writer: the Writer writes up to
// MaxChannels, the Reader reads up to MaxReadChannels (a microphone array's
// recording, for example).
const (
	MaxChannels     = 2
	MaxReadChannels = 32
	MinSampleRate   = 1000
	MaxSampleRate   = 384000
)

// unknownSize in a RIFF or data size field means "until end of file".
const unknownSize = 0xFFFFFFFF

// headerSize is the size of the canonical header the Writer emits.
const headerSize = 44

// wavError carries a precise message and the sentinel it matches.
type wavError struct {
	msg  string
	kind error // ErrMalformed or ErrUnsupported
	wrap error // optional cause (io.ErrUnexpectedEOF, an I/O error)
}

func (e *wavError) Error() string { return e.msg }

func (e *wavError) Is(target error) bool { return target == e.kind }

func (e *wavError) Unwrap() error { return e.wrap }

func malformed(wrap error, format string, a ...any) error {
	return &wavError{msg: "wav: " + fmt.Sprintf(format, a...), kind: ErrMalformed, wrap: wrap}
}

func unsupported(format string, a ...any) error {
	return &wavError{msg: "wav: " + fmt.Sprintf(format, a...), kind: ErrUnsupported}
}

// Format tags (wFormatTag) with names used in error messages.
const (
	tagPCM        = 0x0001
	tagExtensible = 0xFFFE
)

func tagName(tag uint16) string {
	switch tag {
	case 0x0001:
		return "PCM"
	case 0x0002:
		return "MS ADPCM"
	case 0x0003:
		return "float"
	case 0x0006:
		return "A-law"
	case 0x0007:
		return "mu-law"
	case 0x0011:
		return "IMA ADPCM"
	case 0x0031:
		return "GSM 6.10"
	case 0x0055:
		return "MPEG layer 3"
	case 0x00FF, 0x1600, 0x1610:
		return "AAC"
	case 0xFFFE:
		return "extensible"
	}
	return "unknown"
}

// Package jpeg encodes still images for the image stream and inspects JPEG
// images from cameras (size, Huffman tables) without decoding them.
//
// Encoding uses the standard library's image/jpeg, which costs several
// times what libjpeg-turbo does (see BenchmarkEncode640x480): fine for an
// image stream of a few images per second, not for MJPEG at camera rate.
// Where the camera delivers MJPEG the video pipeline passes it through
// instead, after Normalize has added the Huffman tables many UVC cameras
// leave out.
//
// # Concurrency
//
// An Encoder is used by one goroutine at a time. Functions are pure.
package jpeg

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	stdjpeg "image/jpeg"
	"sync"
)

// ErrMalformed wraps errors about malformed JPEG data.
var ErrMalformed = errors.New("jpeg: malformed image")

// Encoder encodes pictures to JPEG, reusing its output buffer.
type Encoder struct {
	Quality int // 1..100; 0 means 80
	buf     bytes.Buffer
}

// Encode encodes img. The returned bytes are valid until the next call.
func (e *Encoder) Encode(img image.Image) ([]byte, error) {
	q := e.Quality
	if q == 0 {
		q = 80
	}
	if q < 1 || q > 100 {
		return nil, fmt.Errorf("jpeg: quality %d, want 1..100", q)
	}
	e.buf.Reset()
	if err := stdjpeg.Encode(&e.buf, img, &stdjpeg.Options{Quality: q}); err != nil {
		return nil, fmt.Errorf("jpeg: encode: %w", err)
	}
	return e.buf.Bytes(), nil
}

// Info is what the headers of a JPEG image say.
type Info struct {
	Width, Height int
	Components    int
	Progressive   bool
	HasDHT        bool // Huffman tables present before the scan
}

// Markers.
const (
	mSOI  = 0xd8
	mEOI  = 0xd9
	mSOS  = 0xda
	mDHT  = 0xc4
	mSOF0 = 0xc0
	mSOF1 = 0xc1
	mSOF2 = 0xc2
	mTEM  = 0x01
	mRST0 = 0xd0
	mRST7 = 0xd7
)

// Parse reads the headers of the JPEG image b up to its first scan.
func Parse(b []byte) (Info, error) {
	info, _, err := walk(b)
	return info, err
}

// walk parses headers and returns the offset of the SOS marker.
func walk(b []byte) (Info, int, error) {
	var info Info
	if len(b) < 4 || b[0] != 0xff || b[1] != mSOI {
		return info, 0, fmt.Errorf("%w: no SOI marker at the start", ErrMalformed)
	}
	sof := false
	i := 2
	for {
		if i >= len(b) {
			return info, 0, fmt.Errorf("%w: no scan (SOS) in %d bytes", ErrMalformed, len(b))
		}
		if b[i] != 0xff {
			return info, 0, fmt.Errorf("%w: byte %#x at offset %d, want a marker", ErrMalformed, b[i], i)
		}
		start := i
		for i < len(b) && b[i] == 0xff { // fill bytes
			i++
		}
		if i >= len(b) {
			return info, 0, fmt.Errorf("%w: truncated marker at offset %d", ErrMalformed, start)
		}
		m := b[i]
		i++
		switch {
		case m == mSOS:
			if !sof {
				return info, 0, fmt.Errorf("%w: scan before any frame header (SOF)", ErrMalformed)
			}
			return info, start, nil
		case m == mEOI:
			return info, 0, fmt.Errorf("%w: end of image before any scan", ErrMalformed)
		case m == mTEM || (m >= mRST0 && m <= mRST7) || m == 0:
			return info, 0, fmt.Errorf("%w: marker %#x outside a scan at offset %d", ErrMalformed, m, start)
		}
		if i+2 > len(b) {
			return info, 0, fmt.Errorf("%w: truncated segment %#x at offset %d", ErrMalformed, m, start)
		}
		n := int(b[i])<<8 | int(b[i+1])
		if n < 2 || i+n > len(b) {
			return info, 0, fmt.Errorf("%w: segment %#x length %d overruns the data at offset %d", ErrMalformed, m, n, start)
		}
		seg := b[i+2 : i+n]
		switch m {
		case mDHT:
			info.HasDHT = true
		case mSOF0, mSOF1, mSOF2:
			if len(seg) < 6 {
				return info, 0, fmt.Errorf("%w: frame header of %d bytes", ErrMalformed, len(seg))
			}
			info.Height = int(seg[1])<<8 | int(seg[2])
			info.Width = int(seg[3])<<8 | int(seg[4])
			info.Components = int(seg[5])
			info.Progressive = m == mSOF2
			if info.Width == 0 || info.Height == 0 || (info.Components != 1 && info.Components != 3) {
				return info, 0, fmt.Errorf("%w: frame header %dx%d with %d components", ErrMalformed, info.Width, info.Height, info.Components)
			}
			sof = true
		case 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf:
			return info, 0, fmt.Errorf("%w: unsupported JPEG process (SOF marker %#x)", ErrMalformed, m)
		}
		i += n
	}
}

// Normalize returns b with the standard Huffman tables (ITU T.81 annex
// K.3) inserted before the scan when b has none, as motion-JPEG frames
// from many UVC cameras do (they rely on the AVI1 convention). Standard
// decoders reject such frames. When b already has tables, Normalize
// returns b itself; otherwise the result is appended to dst[:0].
func Normalize(dst, b []byte) ([]byte, error) {
	info, sos, err := walk(b)
	if err != nil {
		return nil, err
	}
	if info.HasDHT {
		return b, nil
	}
	dht := standardDHT()
	if dht == nil {
		return nil, errors.New("jpeg: no standard Huffman tables (image/jpeg wrote none)")
	}
	dst = append(dst[:0], b[:sos]...)
	dst = append(dst, dht...)
	return append(dst, b[sos:]...), nil
}

var dhtOnce struct {
	sync.Once
	seg []byte
}

// standardDHT returns the DHT segment (marker included) of the annex K
// tables, taken from what image/jpeg writes (it always uses them), or
// nil if it wrote none.
func standardDHT() []byte {
	dhtOnce.Do(func() {
		var buf bytes.Buffer
		stdjpeg.Encode(&buf, image.NewYCbCr(image.Rect(0, 0, 8, 8), image.YCbCrSubsampleRatio420), nil)
		b := buf.Bytes()
		for i := 2; i+4 <= len(b); {
			n := int(b[i+2])<<8 | int(b[i+3])
			if b[i+1] == mDHT {
				dhtOnce.seg = append([]byte(nil), b[i:i+2+n]...)
				return
			}
			i += 2 + n
		}
	})
	return dhtOnce.seg
}

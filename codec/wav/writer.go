package wav

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/robot-agent/robot-agent/codec/pcm"
)

// ErrClosed is returned by Writer.Write after Close.
var ErrClosed = errors.New("wav: writer closed")

// maxData is the largest data chunk a RIFF file can describe.
const maxData = 0xFFFFFFFF - (headerSize - 8) - 1

// Writer streams interleaved PCM16 samples into a WAVE file.
type Writer struct {
	w        io.WriteSeeker
	start    int64 // offset of the RIFF header in w
	rate     int
	channels int
	data     int64 // bytes of sample data written
	err      error // sticky I/O error
	closed   bool
	buf      [4096]byte
}

// NewWriter writes a PCM16 WAVE header for rate and channels at the current
// offset of w and returns a Writer appending samples after it. Close fixes
// up the sizes; it does not close w.
func NewWriter(w io.WriteSeeker, rate, channels int) (*Writer, error) {
	if channels < 1 || channels > MaxChannels {
		return nil, unsupported("%d channels not supported (want 1 or 2)", channels)
	}
	if rate < MinSampleRate || rate > MaxSampleRate {
		return nil, unsupported("sample rate %d Hz not supported (want %d..%d)", rate, MinSampleRate, MaxSampleRate)
	}
	start, err := w.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("wav: writer: %w", err)
	}
	wr := &Writer{w: w, start: start, rate: rate, channels: channels}
	h := wr.buf[:headerSize]
	copy(h[0:], "RIFF")
	binary.LittleEndian.PutUint32(h[4:], unknownSize)
	copy(h[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(h[16:], 16)
	binary.LittleEndian.PutUint16(h[20:], tagPCM)
	binary.LittleEndian.PutUint16(h[22:], uint16(channels))
	binary.LittleEndian.PutUint32(h[24:], uint32(rate))
	binary.LittleEndian.PutUint32(h[28:], uint32(rate*2*channels))
	binary.LittleEndian.PutUint16(h[32:], uint16(2*channels))
	binary.LittleEndian.PutUint16(h[34:], 16)
	copy(h[36:], "data")
	binary.LittleEndian.PutUint32(h[40:], unknownSize)
	if _, err := w.Write(h); err != nil {
		return nil, fmt.Errorf("wav: writing header: %w", err)
	}
	return wr, nil
}

// Write appends interleaved samples; len(p) must be a whole number of
// frames. It does not allocate. After an I/O error every call returns that
// error.
func (wr *Writer) Write(p []int16) error {
	if wr.closed {
		return ErrClosed
	}
	if wr.err != nil {
		return wr.err
	}
	if len(p)%wr.channels != 0 {
		return fmt.Errorf("wav: write of %d samples is not whole %d-channel frames", len(p), wr.channels)
	}
	if wr.data+2*int64(len(p)) > maxData {
		wr.err = fmt.Errorf("wav: data would exceed the %d-byte RIFF limit", int64(maxData))
		return wr.err
	}
	for len(p) > 0 {
		n := pcm.Int16ToBytes(wr.buf[:], p)
		if _, err := wr.w.Write(wr.buf[:2*n]); err != nil {
			wr.err = fmt.Errorf("wav: writing data: %w", err)
			return wr.err
		}
		wr.data += 2 * int64(n)
		p = p[n:]
	}
	return nil
}

// Frames returns the number of sample frames written so far.
func (wr *Writer) Frames() int64 { return wr.data / int64(2*wr.channels) }

// Close writes the final RIFF and data sizes and leaves w positioned at the
// end of the file. It does not close w. Calling Close again returns nil.
func (wr *Writer) Close() error {
	if wr.closed {
		return nil
	}
	wr.closed = true
	if wr.err != nil {
		return wr.err
	}
	var b [4]byte
	put := func(off int64, v uint32) error {
		if _, err := wr.w.Seek(wr.start+off, io.SeekStart); err != nil {
			return err
		}
		binary.LittleEndian.PutUint32(b[:], v)
		_, err := wr.w.Write(b[:])
		return err
	}
	if err := put(4, uint32(headerSize-8+wr.data)); err != nil {
		return fmt.Errorf("wav: fixing up RIFF size: %w", err)
	}
	if err := put(40, uint32(wr.data)); err != nil {
		return fmt.Errorf("wav: fixing up data size: %w", err)
	}
	if _, err := wr.w.Seek(wr.start+headerSize+wr.data, io.SeekStart); err != nil {
		return fmt.Errorf("wav: writer: %w", err)
	}
	return nil
}

// WriteFile writes interleaved PCM16 samples (channels per frame) as a
// WAVE file at path, replacing it.
func WriteFile(path string, rate, channels int, samples []int16) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w, err := NewWriter(f, rate, channels)
	if err == nil {
		err = w.Write(samples)
	}
	if err == nil {
		err = w.Close()
	}
	return errors.Join(err, f.Close())
}

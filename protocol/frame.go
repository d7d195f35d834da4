// Package protocol implements the robot-agent gateway wire protocol v1
// (see docs/protocol.md): the fixed binary media header and the JSON control
// messages.
//
// Decoders never panic on any input; they return errors wrapping ErrMalformed
// (or ErrTooLarge / ErrUnsupported) that name the offending field and value.
//
// # Concurrency
//
// All functions are pure; Header values are plain data.
package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Version is the protocol version this package speaks.
const Version = 1

// Subprotocol is the WebSocket subprotocol token for Version.
const Subprotocol = "robot-agent.v1"

// HeaderSize is the size in bytes of the binary media frame header.
const HeaderSize = 24

// Kind identifies the media class of a binary frame (header byte 1).
type Kind uint8

// Media kinds.
const (
	KindMicAudio Kind = 1 // robot → gateway, PCM16LE 16 kHz mono
	KindVideo    Kind = 2 // robot → gateway, H264 access unit or JPEG
	KindTTSAudio Kind = 3 // gateway → robot, PCM16LE 24 kHz mono
)

func (k Kind) String() string {
	switch k {
	case KindMicAudio:
		return "mic_audio"
	case KindVideo:
		return "video"
	case KindTTSAudio:
		return "tts_audio"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Flag is header byte 2; its meaning depends on Kind.
type Flag uint8

// Mic audio utterance flags.
const (
	FlagStart    Flag = 0 // first frame of an utterance
	FlagContinue Flag = 1 // frame inside an utterance
	FlagEnd      Flag = 2 // last frame of an utterance (may be empty)
)

// Video flags (values fixed by the gateway API).
const (
	FlagH264  Flag = 2 // H264 Annex-B access unit
	FlagImage Flag = 3 // still image, JPEG
)

// TTS audio flags.
const (
	FlagTTSChunk Flag = 0 // a chunk of a response
	FlagTTSLast  Flag = 1 // last chunk of a response (may be empty)
)

// Mark bits, header byte 3.
const (
	MarkKeyFrame uint8 = 1 << 0 // video: access unit is an IDR with SPS/PPS
)

// Errors returned by decoders. Use errors.Is.
var (
	ErrMalformed   = errors.New("protocol: malformed message")
	ErrTooLarge    = errors.New("protocol: message too large")
	ErrUnsupported = errors.New("protocol: unsupported")
	// ErrUnknownType wraps ErrUnsupported for control types the receiver
	// does not know; the message is skipped, the session continues.
	ErrUnknownType = fmt.Errorf("%w control type", ErrUnsupported)
	// ErrVersionMismatch wraps ErrUnsupported for a hello whose "protocol"
	// is not Version; the receiver answers version_mismatch and closes.
	ErrVersionMismatch = fmt.Errorf("%w protocol version", ErrUnsupported)
)

// Size limits per message class (bytes, whole WebSocket message).
const (
	MaxMicFrame   = HeaderSize + 16000*2     // 1 s of 16 kHz PCM16
	MaxTTSFrame   = HeaderSize + 24000*2*2   // 2 s of 24 kHz PCM16
	MaxVideoFrame = HeaderSize + 4<<20       // 4 MiB access unit or image
	MaxControl    = 64 << 10                 // JSON control message
	MaxTTSJSON    = 4*(24000*2*2+2)/3 + 1024 // base64 of MaxTTSFrame payload + envelope
	MaxUplink     = MaxVideoFrame            // read limit the gateway applies
	MaxDownlink   = MaxTTSJSON               // largest valid gateway → robot message
	// MaxDownlinkHard is the robot's WebSocket read limit. A message between
	// MaxDownlink and this is rejected with an error and the session goes
	// on; a larger one makes the robot close the connection (1009).
	MaxDownlinkHard = 1 << 20
)

// Header is the fixed 24-byte header of every binary WebSocket message.
// All multi-byte fields are little-endian.
//
//	off size field
//	0   1    version (=1)
//	1   1    kind
//	2   1    flag
//	3   1    mark bits
//	4   4    stream id (u32): utterance id (mic), response id (tts), 0 (video)
//	8   4    sequence number (u32, per kind, wraps)
//	12  8    timestamp (i64, µs on the sender's monotonic clock)
//	20  4    payload length (u32)
type Header struct {
	Version   uint8
	Kind      Kind
	Flag      Flag
	Mark      uint8
	Stream    uint32
	Seq       uint32
	Timestamp int64 // microseconds, sender's monotonic clock
	Length    uint32
}

// KeyFrame reports whether the key-frame mark is set.
func (h Header) KeyFrame() bool { return h.Mark&MarkKeyFrame != 0 }

// PutHeader writes h into b[:HeaderSize]. It does not allocate.
// b must be at least HeaderSize long.
func PutHeader(b []byte, h Header) {
	_ = b[HeaderSize-1]
	b[0] = h.Version
	b[1] = byte(h.Kind)
	b[2] = byte(h.Flag)
	b[3] = h.Mark
	binary.LittleEndian.PutUint32(b[4:], h.Stream)
	binary.LittleEndian.PutUint32(b[8:], h.Seq)
	binary.LittleEndian.PutUint64(b[12:], uint64(h.Timestamp))
	binary.LittleEndian.PutUint32(b[20:], h.Length)
}

// AppendFrame appends header and payload to dst, setting h.Length and
// h.Version.
func AppendFrame(dst []byte, h Header, payload []byte) []byte {
	h.Version = Version
	h.Length = uint32(len(payload))
	n := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	PutHeader(dst[n:], h)
	return append(dst, payload...)
}

// ParseHeader decodes and validates the header of a complete binary message
// msg and returns the header and the payload (a sub-slice of msg, not a
// copy). It checks the version, the kind, the flag for the kind, that the
// length field equals the bytes present, and the per-kind size limit.
func ParseHeader(msg []byte) (Header, []byte, error) {
	return parseHeader(msg, true, true)
}

// parseHeader is ParseHeader; micPCM and ttsPCM say whether that kind's
// payload must be whole PCM16 samples (false when Opus was negotiated,
// SessionAudio.ParseFrame).
func parseHeader(msg []byte, micPCM, ttsPCM bool) (Header, []byte, error) {
	var h Header
	if len(msg) < HeaderSize {
		return h, nil, fmt.Errorf("%w: binary frame of %d bytes is shorter than the %d-byte header", ErrMalformed, len(msg), HeaderSize)
	}
	h.Version = msg[0]
	h.Kind = Kind(msg[1])
	h.Flag = Flag(msg[2])
	h.Mark = msg[3]
	h.Stream = binary.LittleEndian.Uint32(msg[4:])
	h.Seq = binary.LittleEndian.Uint32(msg[8:])
	h.Timestamp = int64(binary.LittleEndian.Uint64(msg[12:]))
	h.Length = binary.LittleEndian.Uint32(msg[20:])
	if h.Version != Version {
		return h, nil, fmt.Errorf("%w: header version %d, want %d", ErrUnsupported, h.Version, Version)
	}
	var limit int
	switch h.Kind {
	case KindMicAudio:
		limit = MaxMicFrame
		if h.Flag > FlagEnd {
			return h, nil, fmt.Errorf("%w: mic_audio flag %d, want 0 (start), 1 (continue) or 2 (end)", ErrMalformed, h.Flag)
		}
	case KindTTSAudio:
		limit = MaxTTSFrame
		if h.Flag > FlagTTSLast {
			return h, nil, fmt.Errorf("%w: tts_audio flag %d, want 0 (chunk) or 1 (last)", ErrMalformed, h.Flag)
		}
	case KindVideo:
		limit = MaxVideoFrame
		if h.Flag != FlagH264 && h.Flag != FlagImage {
			return h, nil, fmt.Errorf("%w: video flag %d, want 2 (h264) or 3 (image)", ErrMalformed, h.Flag)
		}
	default:
		return h, nil, fmt.Errorf("%w: header kind %d is unknown", ErrUnsupported, uint8(h.Kind))
	}
	if len(msg) > limit {
		return h, nil, fmt.Errorf("%w: %s frame of %d bytes exceeds the limit of %d", ErrTooLarge, h.Kind, len(msg), limit)
	}
	if uint64(h.Length) != uint64(len(msg)-HeaderSize) {
		return h, nil, fmt.Errorf("%w: header length field %d, but %d payload bytes follow", ErrMalformed, h.Length, len(msg)-HeaderSize)
	}
	if (h.Kind == KindMicAudio || h.Kind == KindTTSAudio) && h.Stream == 0 {
		return h, nil, fmt.Errorf("%w: %s frame with stream id 0 (utterance and response ids start at 1)", ErrMalformed, h.Kind)
	}
	if ((h.Kind == KindMicAudio && micPCM) || (h.Kind == KindTTSAudio && ttsPCM)) && h.Length%2 != 0 {
		return h, nil, fmt.Errorf("%w: %s payload of %d bytes is not whole PCM16 samples", ErrMalformed, h.Kind, h.Length)
	}
	return h, msg[HeaderSize:], nil
}

// FrameErrorCode maps a ParseHeader error to the protocol error code to send
// back (ErrorCode is its counterpart for control messages).
func FrameErrorCode(err error) string {
	switch {
	case errors.Is(err, ErrTooLarge):
		return CodeTooLarge
	case errors.Is(err, ErrUnsupported):
		return CodeUnsupported
	default:
		return CodeBadFrame
	}
}

package protocol

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	headers := []Header{
		{Version: Version, Kind: KindMicAudio, Flag: FlagStart, Stream: 1, Seq: 0, Timestamp: 0},
		{Version: Version, Kind: KindMicAudio, Flag: FlagContinue, Stream: 7, Seq: 42, Timestamp: 1234567890},
		{Version: Version, Kind: KindMicAudio, Flag: FlagEnd, Stream: 1<<32 - 1, Seq: 1<<32 - 1, Timestamp: 1<<63 - 1},
		{Version: Version, Kind: KindVideo, Flag: FlagH264, Mark: MarkKeyFrame, Seq: 3, Timestamp: 99},
		{Version: Version, Kind: KindVideo, Flag: FlagH264, Mark: 0, Seq: 4, Timestamp: 33366},
		{Version: Version, Kind: KindVideo, Flag: FlagImage, Mark: MarkKeyFrame | 0x80, Timestamp: -5},
		{Version: Version, Kind: KindTTSAudio, Flag: FlagTTSChunk, Stream: 12, Seq: 9},
		{Version: Version, Kind: KindTTSAudio, Flag: FlagTTSLast, Stream: 12, Seq: 10, Timestamp: -1 << 63},
	}
	for _, h := range headers {
		for _, n := range []int{0, 2, 640} {
			payload := make([]byte, n)
			for i := range payload {
				payload[i] = byte(i * 7)
			}
			msg := AppendFrame([]byte{}, h, payload)
			if len(msg) != HeaderSize+n {
				t.Fatalf("%+v: AppendFrame produced %d bytes, want %d", h, len(msg), HeaderSize+n)
			}
			got, p, err := ParseHeader(msg)
			if err != nil {
				t.Fatalf("%+v len %d: ParseHeader: %v", h, n, err)
			}
			want := h
			want.Length = uint32(n)
			if got != want {
				t.Errorf("ParseHeader = %+v, want %+v", got, want)
			}
			if !bytes.Equal(p, payload) {
				t.Errorf("%+v: payload mismatch", h)
			}
			if n > 0 && &p[0] != &msg[HeaderSize] {
				t.Errorf("payload is a copy, want a sub-slice of msg")
			}
			if got.KeyFrame() != (h.Mark&MarkKeyFrame != 0) {
				t.Errorf("KeyFrame() = %v for mark %#x", got.KeyFrame(), h.Mark)
			}
			// PutHeader writes the same bytes AppendFrame did.
			var b [HeaderSize]byte
			PutHeader(b[:], want)
			if !bytes.Equal(b[:], msg[:HeaderSize]) {
				t.Errorf("PutHeader % x, AppendFrame % x", b, msg[:HeaderSize])
			}
		}
	}
}

// TestHeaderGolden pins the byte layout; docs/protocol.md shows the same
// example.
func TestHeaderGolden(t *testing.T) {
	h := Header{Version: 1, Kind: KindMicAudio, Flag: FlagContinue, Stream: 7, Seq: 42, Timestamp: 1234567890, Length: 640}
	var b [HeaderSize]byte
	PutHeader(b[:], h)
	const want = "01010100" + "07000000" + "2a000000" + "d202964900000000" + "80020000"
	if got := hex.EncodeToString(b[:]); got != want {
		t.Fatalf("header = %s, want %s", got, want)
	}
	v := Header{Version: 1, Kind: KindVideo, Flag: FlagH264, Mark: MarkKeyFrame, Seq: 1, Timestamp: -2, Length: 0x010203}
	PutHeader(b[:], v)
	const wantV = "01020201" + "00000000" + "01000000" + "feffffffffffffff" + "03020100"
	if got := hex.EncodeToString(b[:]); got != wantV {
		t.Fatalf("video header = %s, want %s", got, wantV)
	}
}

func TestAppendFrameOverridesVersionAndLength(t *testing.T) {
	msg := AppendFrame(nil, Header{Version: 9, Kind: KindTTSAudio, Stream: 1, Length: 1000}, []byte{1, 2})
	h, _, err := ParseHeader(msg)
	if err != nil {
		t.Fatal(err)
	}
	if h.Version != Version || h.Length != 2 {
		t.Fatalf("version %d length %d, want %d and 2", h.Version, h.Length, Version)
	}
	prefix := []byte("xyz")
	msg = AppendFrame(prefix, Header{Kind: KindMicAudio}, nil)
	if !bytes.Equal(msg[:3], prefix) || len(msg) != 3+HeaderSize {
		t.Fatalf("AppendFrame did not append after the existing bytes: % x", msg)
	}
}

// frame builds a raw message with an arbitrary length field.
func frame(version uint8, k Kind, f Flag, length uint32, payload int) []byte {
	b := make([]byte, HeaderSize+payload)
	h := Header{Version: version, Kind: k, Flag: f, Length: length}
	if k != KindVideo {
		h.Stream = 1 // utterance / response ids start at 1
	}
	PutHeader(b, h)
	return b
}

func TestParseHeaderErrors(t *testing.T) {
	tests := []struct {
		name    string
		msg     []byte
		want    error
		code    string
		wantSub string
	}{
		{"empty", nil, ErrMalformed, CodeBadFrame, "0 bytes"},
		{"truncated header", frame(1, KindMicAudio, FlagStart, 0, 0)[:23], ErrMalformed, CodeBadFrame, "23 bytes"},
		{"version 0", frame(0, KindMicAudio, FlagStart, 0, 0), ErrUnsupported, CodeUnsupported, "version 0"},
		{"version 2", frame(2, KindMicAudio, FlagStart, 0, 0), ErrUnsupported, CodeUnsupported, "version 2"},
		{"kind 0", frame(1, 0, 0, 0, 0), ErrUnsupported, CodeUnsupported, "kind 0"},
		{"kind 4", frame(1, 4, 0, 0, 0), ErrUnsupported, CodeUnsupported, "kind 4"},
		{"kind 255", frame(1, 255, 0, 0, 0), ErrUnsupported, CodeUnsupported, "kind 255"},
		{"mic flag 3", frame(1, KindMicAudio, 3, 0, 0), ErrMalformed, CodeBadFrame, "mic_audio flag 3"},
		{"tts flag 2", frame(1, KindTTSAudio, 2, 0, 0), ErrMalformed, CodeBadFrame, "tts_audio flag 2"},
		{"video flag 0", frame(1, KindVideo, 0, 0, 0), ErrMalformed, CodeBadFrame, "video flag 0"},
		{"video flag 4", frame(1, KindVideo, 4, 0, 0), ErrMalformed, CodeBadFrame, "video flag 4"},
		{"length larger than frame", frame(1, KindMicAudio, FlagContinue, 642, 640), ErrMalformed, CodeBadFrame, "length field 642"},
		{"length smaller than frame", frame(1, KindMicAudio, FlagContinue, 2, 640), ErrMalformed, CodeBadFrame, "length field 2"},
		{"length max u32", frame(1, KindVideo, FlagH264, 1<<32-1, 10), ErrMalformed, CodeBadFrame, "4294967295"},
		{"length set, no payload", frame(1, KindTTSAudio, FlagTTSChunk, 4, 0), ErrMalformed, CodeBadFrame, "length field 4"},
		{"odd mic pcm", frame(1, KindMicAudio, FlagContinue, 641, 641), ErrMalformed, CodeBadFrame, "641 bytes is not whole PCM16"},
		{"odd tts pcm", frame(1, KindTTSAudio, FlagTTSLast, 1, 1), ErrMalformed, CodeBadFrame, "not whole PCM16"},
		{"mic stream 0", func() []byte { b := frame(1, KindMicAudio, FlagStart, 2, 2); b[4] = 0; return b }(), ErrMalformed, CodeBadFrame, "stream id 0"},
		{"tts stream 0", func() []byte { b := frame(1, KindTTSAudio, FlagTTSChunk, 2, 2); b[4] = 0; return b }(), ErrMalformed, CodeBadFrame, "stream id 0"},
		{"mic too large", frame(1, KindMicAudio, FlagContinue, MaxMicFrame-HeaderSize+2, MaxMicFrame-HeaderSize+2), ErrTooLarge, CodeTooLarge, "exceeds the limit"},
		{"tts too large", frame(1, KindTTSAudio, FlagTTSChunk, MaxTTSFrame-HeaderSize+2, MaxTTSFrame-HeaderSize+2), ErrTooLarge, CodeTooLarge, "tts_audio frame"},
		{"video too large", frame(1, KindVideo, FlagImage, MaxVideoFrame-HeaderSize+1, MaxVideoFrame-HeaderSize+1), ErrTooLarge, CodeTooLarge, "video frame"},
	}
	sentinels := []error{ErrMalformed, ErrTooLarge, ErrUnsupported}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, p, err := ParseHeader(tt.msg)
			if err == nil {
				t.Fatal("ParseHeader succeeded, want an error")
			}
			if p != nil {
				t.Errorf("payload %d bytes returned with an error", len(p))
			}
			for _, s := range sentinels {
				if errors.Is(err, s) != (s == tt.want) {
					t.Errorf("errors.Is(%v, %v) = %v", err, s, !(s == tt.want))
				}
			}
			if !strings.Contains(err.Error(), tt.wantSub) {
				t.Errorf("error %q does not mention %q", err, tt.wantSub)
			}
			if c := FrameErrorCode(err); c != tt.code {
				t.Errorf("FrameErrorCode = %q, want %q", c, tt.code)
			}
		})
	}
}

func TestParseHeaderLimitsInclusive(t *testing.T) {
	for _, tt := range []struct {
		k     Kind
		f     Flag
		limit int
	}{
		{KindMicAudio, FlagContinue, MaxMicFrame},
		{KindTTSAudio, FlagTTSChunk, MaxTTSFrame},
		{KindVideo, FlagH264, MaxVideoFrame},
	} {
		n := tt.limit - HeaderSize
		if _, _, err := ParseHeader(frame(1, tt.k, tt.f, uint32(n), n)); err != nil {
			t.Errorf("%s frame of exactly the limit %d: %v", tt.k, tt.limit, err)
		}
	}
}

func TestEmptyEndFrames(t *testing.T) {
	for _, h := range []Header{{Kind: KindMicAudio, Flag: FlagEnd, Stream: 3}, {Kind: KindTTSAudio, Flag: FlagTTSLast, Stream: 4}} {
		got, p, err := ParseHeader(AppendFrame(nil, h, nil))
		if err != nil || len(p) != 0 || got.Flag != h.Flag || got.Stream != h.Stream {
			t.Errorf("empty %s end frame: %+v, %d bytes, %v", h.Kind, got, len(p), err)
		}
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindMicAudio: "mic_audio", KindVideo: "video", KindTTSAudio: "tts_audio", 9: "kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", uint8(k), got, want)
		}
	}
}

func TestFrameHotPathDoesNotAllocate(t *testing.T) {
	payload := make([]byte, 640)
	buf := make([]byte, 0, HeaderSize+len(payload))
	h := Header{Kind: KindMicAudio, Flag: FlagContinue, Stream: 1}
	var msg []byte
	if n := testing.AllocsPerRun(100, func() { msg = AppendFrame(buf[:0], h, payload) }); n != 0 {
		t.Errorf("AppendFrame into a buffer with capacity: %v allocs, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, _, err := ParseHeader(msg); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("ParseHeader of a valid frame: %v allocs, want 0", n)
	}
	var b [HeaderSize]byte
	if n := testing.AllocsPerRun(100, func() { PutHeader(b[:], h) }); n != 0 {
		t.Errorf("PutHeader: %v allocs, want 0", n)
	}
}

func BenchmarkParseHeader(b *testing.B) {
	msg := AppendFrame(nil, Header{Kind: KindMicAudio, Flag: FlagContinue, Stream: 1}, make([]byte, 640))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseHeader(msg); err != nil {
			b.Fatal(err)
		}
	}
}

package protocol

import (
	"bytes"
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// checkClass fails unless err wraps exactly one of the decoder error classes.
func checkClass(t *testing.T, err error) {
	t.Helper()
	n := 0
	for _, c := range []error{ErrMalformed, ErrTooLarge, ErrUnsupported} {
		if errors.Is(err, c) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("error %q wraps %d decoder error classes, want exactly 1", err, n)
	}
}

func FuzzParseHeader(f *testing.F) {
	valid := AppendFrame(nil, Header{Kind: KindMicAudio, Flag: FlagContinue, Stream: 7, Seq: 42, Timestamp: 1234567890}, make([]byte, 64))
	f.Add(valid)
	f.Add(valid[:HeaderSize-1])                  // truncated header
	f.Add(valid[:HeaderSize+10])                 // length field larger than the frame
	f.Add(append(append([]byte{}, valid...), 0)) // trailing byte, odd PCM
	f.Add(AppendFrame(nil, Header{Kind: KindVideo, Flag: FlagH264, Mark: MarkKeyFrame}, []byte{0, 0, 0, 1, 0x67}))
	f.Add(AppendFrame(nil, Header{Kind: KindVideo, Flag: FlagImage}, []byte{0xff, 0xd8, 0xff}))
	f.Add(AppendFrame(nil, Header{Kind: KindTTSAudio, Flag: FlagTTSLast, Stream: 3}, nil))
	f.Add(AppendFrame(nil, Header{Kind: 9}, nil))                     // unknown kind
	f.Add(AppendFrame(nil, Header{Kind: KindTTSAudio, Flag: 7}, nil)) // bad flag
	f.Add(frame(2, KindMicAudio, FlagStart, 0, 0))                    // version 2
	f.Add(frame(1, KindVideo, FlagH264, 1<<32-1, 4))                  // huge length field
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, msg []byte) {
		h, payload, err := ParseHeader(msg)
		if err != nil {
			checkClass(t, err)
			if payload != nil {
				t.Fatalf("payload returned with error %v", err)
			}
			if c := FrameErrorCode(err); c != CodeBadFrame && c != CodeTooLarge && c != CodeUnsupported {
				t.Fatalf("FrameErrorCode(%v) = %q", err, c)
			}
			return
		}
		if int(h.Length) != len(payload) || len(payload)+HeaderSize != len(msg) {
			t.Fatalf("length field %d, payload %d, message %d", h.Length, len(payload), len(msg))
		}
		// Re-encoding gives the identical bytes, and parsing them again the
		// identical header.
		again := AppendFrame(nil, h, payload)
		if !bytes.Equal(again, msg) {
			t.Fatalf("re-encoded\n% x\nwant\n% x", again, msg)
		}
		h2, p2, err := ParseHeader(again)
		if err != nil || h2 != h || !bytes.Equal(p2, payload) {
			t.Fatalf("second parse: %+v %v, want %+v", h2, err, h)
		}
	})
}

// fuzzDecode checks the decoder invariants: no panic; errors are classified;
// a decoded message re-encodes and decodes to an equal message.
func fuzzDecode(t *testing.T, decode func([]byte) (Message, error), limit func(Message) int, data []byte) {
	m1, err := decode(data)
	if err != nil {
		checkClass(t, err)
		if m1 != nil {
			t.Fatalf("message returned with error %v", err)
		}
		return
	}
	e1, err := Marshal(m1)
	if err != nil {
		t.Fatalf("Marshal(decoded %#v): %v", m1, err)
	}
	m2, err := decode(e1)
	if err != nil {
		// Re-encoding may grow a message near its size limit (Marshal
		// escapes <, >, &, U+2028 and U+2029); that is the only accepted
		// reason for the second decode to fail.
		if len(e1) > limit(m1) && errors.Is(err, ErrTooLarge) {
			return
		}
		t.Fatalf("decode(Marshal(m)) of %s: %v\n(original %q)", e1, err, data)
	}
	e2, err := Marshal(m2)
	if err != nil {
		t.Fatal(err)
	}
	// json.RawMessage fields are compacted by Marshal, so the first decode
	// is compared through its encoding, later ones structurally.
	if !bytes.Equal(e1, e2) {
		t.Fatalf("re-encoding changed the message:\n%s\n%s", e1, e2)
	}
	m3, err := decode(e2)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m2, m3) {
		t.Fatalf("decode not stable:\n%#v\n%#v", m2, m3)
	}
	if m1.Envelope().Type != m2.Envelope().Type {
		t.Fatalf("type changed from %q to %q", m1.Envelope().Type, m2.Envelope().Type)
	}
}

// badControlSeeds are malformed or borderline control messages shared by the
// control decoders' fuzz targets.
func badControlSeeds() []string {
	return []string{
		``, `null`, `[]`, `"x"`, `{}`, `{"type":5}`, `{"type":null}`, `{"event_id":"x"}`,
		`{"type":"ack","event_id":"x"`, `{"type":"ack","event_id":"x"}{}`,
		"{\"type\":\"ack\",\"event_id\":\"\xff\"}",
		`{"type":"ack","event_id":"\ud800"}`,
		`{"type":"ack","event_id":"<\u2028>&"}`,
		`{"TYPE":"ack","Event_ID":"x"}`,
		`{"type":"ack","type":"error","event_id":"x","code":"c"}`,
		// Deep but small: inputs of many kB make the fuzzer's minimiser
		// stall; nesting beyond encoding/json's depth limit of 10000 is
		// covered by the table tests.
		`{"type":"error","code":"x","msg":` + nested(300) + `}`,
		`{"type":"error","code":"x","msg":` + strings.Repeat(`{"a":`, 300),
		`{"type":"error","code":"x","ts":1e30}`,
		`{"type":"error","code":"x","ts":-9223372036854775809}`,
	}
}

func FuzzDecodeFromRobot(f *testing.F) {
	for _, m := range robotMessages() {
		b, err := Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range badControlSeeds() {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"type":"playback_progress","response_id":1e30,"samples_played":1}`,
		`{"type":"playback_progress","response_id":-1,"samples_played":1}`,
		`{"type":"playback_progress","response_id":4294967296,"samples_played":1}`,
		`{"type":"playback_progress","response_id":4294967295,"samples_played":9223372036854775807}`,
		`{"type":"state","event_id":"b-1","state_name":"x","state_value":  { "a" : [ 1 , 2 ] , "b":"<>" } }`,
		`{"type":"state","event_id":"b-1","state_name":"x","state_value":null}`,
		`{"type":"face_info","event_id":"b","identities":[{"uid":"a","kind":"face","confidence":-0}]}`,
		`{"type":"face_info","event_id":"b","identities":[{"uid":"a","kind":"face","confidence":1e308}]}`,
		`{"type":"hello","protocol":1,"device_id":"d","audio_up":{"format":"pcm16le","sample_rate":16000,"channels":1},"capabilities":null,"audio_down":[]}`,
		`{"type":"hello","protocol":1.0,"device_id":"d"}`,
		`{"type":"skill_result","event_id":"b","ref":"g","ok":false,"error":{"code":"bad_argument","msg":"x"},"result":{}}`,
		`{"type":"function_call","event_id":"b","function_call":{"type":"t","param":"not an object"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecode(t, DecodeFromRobot, func(Message) int { return MaxControl }, data)
	})
}

func FuzzDecodeFromGateway(f *testing.F) {
	for _, m := range gatewayMessages() {
		b, err := Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range badControlSeeds() {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"type":"tts","response_id":1e30,"audio":""}`,
		`{"type":"tts","response_id":-1,"audio":""}`,
		`{"type":"tts","response_id":4294967296,"audio":""}`,
		`{"type":"tts","response_id":1,"audio":"AA=="}`,
		`{"type":"tts","response_id":1,"audio":"!!!!"}`,
		`{"type":"tts","response_id":1,"audio":"AAAA\nAAAA"}`,
		`{"type":"tts","response_id":1,"audio":"\u0041\u0041\u0041\u0041"}`,
		`{"type":"tts","response_id":1,"audio":5}`,
		`{"type":"interrupt","response_id":0}`,
		`{"type":"interrupt","response_id":"all"}`,
		`{"type":"function_call_arbiter","ref":"b","decision":"override","param":[1, 2 ,3]}`,
		`{"type":"skill","event_id":"g","skill":"nod","args":{"times":1e400}}`,
		`{"type":"hello","protocol":1,"session_id":"s","audio_down":{"format":"pcm16le","sample_rate":24000,"channels":1},"keepalive":{"interval_ms":-1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecode(t, DecodeFromGateway, func(m Message) int {
			if _, ok := m.(*TTS); ok {
				return MaxDownlink
			}
			return MaxControl
		}, data)
	})
}

// FuzzTTSBase64 fuzzes the audio field of a tts message. The field text is
// inserted unquoted, so the fuzzer can also produce escapes, quotes and
// broken JSON.
func FuzzTTSBase64(f *testing.F) {
	for _, s := range []string{
		"", "AAAA", "AAAAAA==", "AA==", "AAA=", "A", "AAA", "A===", "====", "!!!!", "-_-_", "AA AA",
		"AAAA\\nAAAA", "\\u0041\\u0041AA", `AA", "audio":"AAAA`, "\xff\xfe", "AQIDBA==",
		base64.StdEncoding.EncodeToString(make([]byte, 481)), // odd PCM
		// Size limits are covered by the table tests; seeds of ~128 kB
		// would make the fuzzer's minimiser stall.
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, audio string) {
		data := []byte(`{"type":"tts","response_id":1,"audio":"` + audio + `"}`)
		m, err := DecodeFromGateway(data)
		plain := strings.Trim(audio, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") == ""
		if plain {
			// Oracle: for text that needs no JSON unescaping the outcome
			// is fully determined by the base64 decoding.
			b, derr := base64.StdEncoding.DecodeString(audio)
			switch {
			case derr != nil || len(b)%2 != 0:
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("audio %q: error %v, want ErrMalformed", audio, err)
				}
			case len(b) > MaxTTSFrame-HeaderSize || len(data) > MaxDownlink:
				if !errors.Is(err, ErrTooLarge) {
					t.Fatalf("audio of %d bytes: error %v, want ErrTooLarge", len(b), err)
				}
			default:
				if err != nil {
					t.Fatalf("audio %q: %v", audio, err)
				}
				if got := m.(*TTS).Audio; !bytes.Equal(got, b) {
					t.Fatalf("Audio = % x, want % x", got, b)
				}
			}
		}
		if err != nil {
			checkClass(t, err)
			return
		}
		tts, ok := m.(*TTS)
		if !ok {
			t.Fatalf("decoded %T", m)
		}
		b, derr := base64.StdEncoding.DecodeString(tts.AudioB64)
		if derr != nil || !bytes.Equal(b, tts.Audio) || len(b)%2 != 0 || len(b) > MaxTTSFrame-HeaderSize {
			t.Fatalf("accepted audio %q: decoded %d bytes (%v), Audio %d bytes", tts.AudioB64, len(b), derr, len(tts.Audio))
		}
		fuzzDecode(t, DecodeFromGateway, func(Message) int { return MaxDownlink }, data)
	})
}

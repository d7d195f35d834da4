package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestSpec_4_1_LengthField: the length field equals the message size − 24
// when written, and any other value is rejected when read.
func TestSpec_4_1_LengthField(t *testing.T) {
	for _, n := range []int{0, 2, 640, 32000} {
		f := AppendFrame(nil, Header{Kind: KindMicAudio, Stream: 1}, make([]byte, n))
		h, p, err := ParseHeader(f)
		if err != nil || int(h.Length) != len(f)-HeaderSize || len(p) != n {
			t.Fatalf("%d-byte payload: header %+v, %v", n, h, err)
		}
		for _, lie := range []uint32{uint32(n) + 2, uint32(n) + 1000} {
			g := append([]byte(nil), f...)
			g[20], g[21], g[22], g[23] = byte(lie), byte(lie>>8), byte(lie>>16), byte(lie>>24)
			if _, _, err := ParseHeader(g); !errors.Is(err, ErrMalformed) {
				t.Fatalf("length %d for %d bytes: err %v, want ErrMalformed", lie, n, err)
			}
		}
	}
}

// TestSpec_5_1_RobotMessagesEncoding: every message the robot sends uses
// snake_case field names exactly as specified, repeats no field, and
// writes integers as plain JSON integers.
func TestSpec_5_1_RobotMessagesEncoding(t *testing.T) {
	msgs := []Message{
		&RobotHello{Protocol: 1, Minor: 1, DeviceID: "d", AgentVersion: "v", BootID: "b", Capabilities: []string{CapState},
			AudioUp: AudioParams{Format: FormatPCM16LE, SampleRate: 16000, Channels: 1, FrameMS: 20}, AudioDown: []AudioParams{{Format: FormatPCM16LE, SampleRate: 24000, Channels: 1}},
			Audio: &AudioOffer{Up: []AudioParams{{Format: FormatPCM16LE, SampleRate: 16000, Channels: 1}}, Down: []AudioParams{{Format: FormatPCM16LE, SampleRate: 24000, Channels: 1}}}, ResumeSession: "s"},
		&State{Meta: Meta{EventID: "b-1", TS: 1 << 40}, StateName: "pose", StateValue: json.RawMessage(`"standing"`)},
		&FaceInfo{Meta: Meta{EventID: "b-2", TS: 5}, Identities: []Identity{{UID: "u", Kind: "face", Confidence: 0.5}}},
		&GreetSignal{Meta: Meta{EventID: "b-3", TS: 6}, UID: "u"},
		&FunctionCall{Meta: Meta{EventID: "b-4", TS: 7}, FunctionCall: FunctionCallInfo{Source: "s", Policy: "p", Type: "t", Value: "v"}},
		&SkillResult{Meta: Meta{EventID: "b-5", TS: 8}, Ref: "g-1", OK: false, Error: &ErrorBody{Code: CodeUnknownSkill, Msg: "m"}},
		&PlaybackProgress{Meta: Meta{EventID: "b-6", TS: 9}, ResponseID: 4294967295, SamplesPlayed: 1 << 40, Interrupted: true, SessionID: "gw-1"},
		&Error{Meta: Meta{TS: 10}, Code: CodeStaleResponse, Msg: "m"},
		&Ack{Meta: Meta{EventID: "g-2"}},
	}
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if !snake.MatchString(k) {
					t.Errorf("%s: field %q is not snake_case", path, k)
				}
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		case json.Number:
			// Every number field is an integer but confidence (0..1).
			if !strings.HasSuffix(path, ".confidence") && strings.ContainsAny(string(x), ".eE") {
				t.Errorf("%s: number %s is not a plain integer", path, x)
			}
		}
	}
	for _, m := range msgs {
		b, err := Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeFromRobot(b); err != nil {
			t.Errorf("%s does not decode: %v", b, err)
		}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.UseNumber()
		var v map[string]any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		walk(m.Envelope().Type, v)
		// No repeated field: count "key": occurrences at the top level by
		// re-encoding the map (which cannot hold duplicates) and comparing
		// the number of keys with a token scan.
		tokens := json.NewDecoder(strings.NewReader(string(b)))
		depth, keys := 0, 0
		expectKey := false
		for {
			tok, err := tokens.Token()
			if err != nil {
				break
			}
			switch tok {
			case json.Delim('{'), json.Delim('['):
				depth++
				expectKey = tok == json.Delim('{') && depth == 1
				continue
			case json.Delim('}'), json.Delim(']'):
				depth--
				expectKey = depth == 1
				continue
			}
			if depth == 1 && expectKey {
				keys++
				expectKey = false
			} else if depth == 1 {
				expectKey = true
			}
		}
		if keys != len(v) {
			t.Errorf("%s: %d keys written, %d distinct: a field is repeated", b, keys, len(v))
		}
	}
}

// TestSpec_9_1_ErrorCodes: each decoder error class maps to the code of
// the table in 9.1, for control messages and binary frames.
func TestSpec_9_1_ErrorCodes(t *testing.T) {
	ctl := map[string]string{
		`{"type":"teleport"}`: CodeUnknownType,
		`{"type":"hello","protocol":2,"device_id":"d","audio_up":{"format":"pcm16le","sample_rate":16000,"channels":1}}`: CodeVersionMismatch,
		`{"type":"hello","protocol":1,"device_id":"d","audio_up":{"format":"opus","sample_rate":16000,"channels":1}}`:    CodeUnsupported,
		`{"type":"state","event_id":"e","state_name":"x","state_value":"` + strings.Repeat("x", MaxControl) + `"}`:       CodeTooLarge,
		`{"type":"state","event_id":"e"}`: CodeBadMessage,
		`{"event_id":"e"}`:                CodeBadMessage,
	}
	for in, want := range ctl {
		_, err := DecodeFromRobot([]byte(in))
		if got := ErrorCode(err); got != want {
			t.Errorf("%.80s: code %s (%v), want %s", in, got, err, want)
		}
	}
	mic := func(n int) []byte { return AppendFrame(nil, Header{Kind: KindMicAudio, Stream: 1}, make([]byte, n)) }
	v2 := mic(2)
	v2[0] = 2
	k9 := mic(2)
	k9[1] = 9
	frames := map[string]struct {
		b    []byte
		want string
	}{
		"short":      {mic(2)[:10], CodeBadFrame},
		"version 2":  {v2, CodeUnsupported},
		"kind 9":     {k9, CodeUnsupported},
		"too large":  {mic(MaxMicFrame - HeaderSize + 2), CodeTooLarge},
		"odd length": {mic(3), CodeBadFrame},
	}
	for name, f := range frames {
		_, _, err := ParseHeader(f.b)
		if got := FrameErrorCode(err); got != f.want {
			t.Errorf("%s: code %s (%v), want %s", name, got, err, f.want)
		}
	}
}

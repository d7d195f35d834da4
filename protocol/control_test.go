package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func robotHello() *RobotHello {
	return &RobotHello{
		Meta:            Meta{TS: 1},
		Protocol:        Version,
		DeviceID:        "rb-0042",
		Model:           "rk3588-biped",
		AgentVersion:    "1.0.0",
		FirmwareVersion: "fw-2.3",
		BootID:          "7f3c9a",
		Capabilities:    []string{CapMicAudio, CapTTSAudio, CapTTSBase64, CapVideoH264, CapVideoImage, CapState, CapFaceInfo, CapGreet, CapFunctionCall, CapSkill, CapPlaybackProgress},
		AudioUp:         AudioParams{Format: "pcm16le", SampleRate: 16000, Channels: 1, FrameMS: 20},
		AudioDown:       []AudioParams{{Format: "pcm16le", SampleRate: 24000, Channels: 1}},
		ResumeSession:   "s-1",
	}
}

func gatewayHello() *GatewayHello {
	return &GatewayHello{
		Meta:      Meta{TS: 5},
		Protocol:  Version,
		SessionID: "s-2",
		Resumed:   true,
		AudioUp:   AudioParams{Format: "pcm16le", SampleRate: 16000, Channels: 1, FrameMS: 20},
		AudioDown: AudioParams{Format: "pcm16le", SampleRate: 24000, Channels: 1},
		Keepalive: Keepalive{IntervalMS: 5000, TimeoutMS: 15000},
	}
}

// robotMessages holds one populated message of every type the robot sends.
func robotMessages() []Message {
	return []Message{
		robotHello(),
		&Ack{Meta{EventID: "s-2-7"}},
		&Error{Meta: Meta{TS: 9}, Code: CodeStaleResponse, Msg: "audio for interrupted response 3", Ref: "s-2-8"},
		&FaceInfo{Meta: Meta{EventID: "7f3c9a-1", TS: 100}, Identities: []Identity{{UID: "u1", Kind: "face", Confidence: 0.93}, {UID: "v9", Kind: "voiceprint"}}, Param: json.RawMessage(`{"bbox":[1,2,3,4]}`)},
		&GreetSignal{Meta: Meta{EventID: "7f3c9a-2", TS: 101}, UID: "u1", Param: json.RawMessage(`{"distance_m":1.2}`)},
		&State{Meta: Meta{EventID: "7f3c9a-3", TS: 102}, StateName: "battery", StateValue: json.RawMessage(`{"percent":81,"charging":false}`)},
		&State{Meta: Meta{EventID: "7f3c9a-4", TS: 103}, StateName: "pose", StateValue: json.RawMessage(`"standing"`)},
		&FunctionCall{Meta: Meta{EventID: "7f3c9a-5", TS: 104}, FunctionCall: FunctionCallInfo{Source: "local_nlu", Policy: "arbiter", Type: "motion", Value: "wave", Param: json.RawMessage(`{"hand":"left"}`)}},
		&SkillResult{Meta: Meta{EventID: "7f3c9a-6", TS: 105}, Ref: "s-2-9", OK: true, Result: json.RawMessage(`{"took_ms":1500}`)},
		&SkillResult{Meta: Meta{EventID: "7f3c9a-7", TS: 106}, Ref: "s-2-10", Error: &ErrorBody{Code: CodeUnknownSkill, Msg: `skill "fly" is not on the allowlist`}},
		&PlaybackProgress{Meta: Meta{TS: 107}, ResponseID: 3, SamplesPlayed: 4800},
		&PlaybackProgress{Meta: Meta{EventID: "7f3c9a-8", TS: 108}, ResponseID: 3, SamplesPlayed: 9600, Interrupted: true},
		&PlaybackProgress{Meta: Meta{EventID: "7f3c9a-9", TS: 109}, ResponseID: 4, SamplesPlayed: 24000, Done: true},
	}
}

// gatewayMessages holds one populated message of every type the gateway
// sends.
func gatewayMessages() []Message {
	pcm := []byte{1, 0, 2, 0, 0xff, 0x7f, 0, 0x80}
	return []Message{
		gatewayHello(),
		&Ack{Meta{EventID: "7f3c9a-3"}},
		&Error{Meta: Meta{TS: 9}, Code: CodeBadMessage, Msg: `state: field "state_name" is missing or empty`, Ref: "7f3c9a-3"},
		&ASR{Meta: Meta{TS: 10}, UtteranceID: 5, ResponseID: 3, Text: "what time is it", Final: true},
		&ASR{Meta: Meta{TS: 11}, Text: "what ti"},
		&Text{Meta: Meta{Type: TypeLLMDelta, TS: 12}, ResponseID: 3, Text: "It is "},
		&Text{Meta: Meta{Type: TypeLLMDone, TS: 13}, ResponseID: 3},
		&Text{Meta: Meta{Type: TypeVLMDelta, TS: 14}, ResponseID: 3, Text: "I see a cup"},
		&Text{Meta: Meta{Type: TypeVLMDone, TS: 15}, ResponseID: 3},
		&Text{Meta: Meta{Type: TypeGreetVLMDelta, TS: 16}, ResponseID: 4, Text: "Hello Ana"},
		&Text{Meta: Meta{Type: TypeGreetVLMDone, TS: 17}, ResponseID: 4},
		&TTS{Meta: Meta{TS: 18}, ResponseID: 3, AudioB64: base64.StdEncoding.EncodeToString(pcm), Audio: pcm},
		&TTS{Meta: Meta{TS: 19}, ResponseID: 3, AudioB64: "", Audio: []byte{}, Last: true, SampleRate: 24000},
		&TTS{Meta: Meta{Type: TypeGreetTTS, TS: 20}, ResponseID: 4, AudioB64: base64.StdEncoding.EncodeToString(pcm), Audio: pcm},
		&TTSDone{Meta: Meta{TS: 21}, ResponseID: 3},
		&TTSDone{Meta: Meta{Type: TypeGreetTTSDone, TS: 22}, ResponseID: 4},
		&Interrupt{Meta: Meta{EventID: "s-2-11", TS: 23}, ResponseID: 3, Reason: "barge_in"},
		&Interrupt{Meta: Meta{EventID: "s-2-12", TS: 24}},
		&Arbiter{Meta: Meta{EventID: "s-2-13", TS: 25}, Ref: "7f3c9a-5", Decision: DecisionDelegate},
		&Arbiter{Meta: Meta{EventID: "s-2-14"}, Ref: "7f3c9a-5", Decision: DecisionOverride, Param: json.RawMessage(`{"why":"app"}`)},
		&Arbiter{Meta: Meta{EventID: "s-2-15"}, Ref: "7f3c9a-5", Decision: DecisionIllegal},
		&Skill{Meta: Meta{EventID: "s-2-9", TS: 26}, Skill: "nod", Args: json.RawMessage(`{"times":2}`)},
		&Skill{Meta: Meta{EventID: "s-2-10"}, Skill: "fly"},
		&KeyframeRequest{Meta{EventID: "s-2-16", TS: 27}},
		&GoAway{Meta: Meta{EventID: "s-2-17", TS: 28}, Reason: "deploy", ReconnectAfterMS: 2000},
	}
}

// roundTrip checks decode(Marshal(m)) == m, and returns the decoded message.
func roundTrip(t *testing.T, decode func([]byte) (Message, error), m Message) Message {
	t.Helper()
	b, err := Marshal(m)
	if err != nil {
		t.Fatalf("Marshal(%T): %v", m, err)
	}
	got, err := decode(b)
	if err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip of %s:\n got %#v\nwant %#v", b, got, m)
	}
	return got
}

func TestRoundTripFromRobot(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range robotMessages() {
		roundTrip(t, DecodeFromRobot, m)
		seen[m.Envelope().Type] = true
	}
	want := []string{TypeHello, TypeAck, TypeError, TypeFaceInfo, TypeGreetSignal, TypeState, TypeFunctionCall, TypeSkillResult, TypePlaybackProgress}
	checkCovered(t, seen, want)
}

func TestRoundTripFromGateway(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range gatewayMessages() {
		roundTrip(t, DecodeFromGateway, m)
		seen[m.Envelope().Type] = true
	}
	want := []string{TypeHello, TypeAck, TypeError, TypeASR, TypeLLMDelta, TypeLLMDone, TypeVLMDelta, TypeVLMDone,
		TypeTTS, TypeTTSDone, TypeGreetVLMDelta, TypeGreetVLMDone, TypeGreetTTS, TypeGreetTTSDone, TypeInterrupt,
		TypeArbiter, TypeSkill, TypeKeyframeRequest, TypeGoAway}
	checkCovered(t, seen, want)
}

func checkCovered(t *testing.T, seen map[string]bool, want []string) {
	t.Helper()
	var missing []string
	for _, w := range want {
		if !seen[w] {
			missing = append(missing, w)
		}
		delete(seen, w)
	}
	var extra []string
	for k := range seen {
		extra = append(extra, k)
	}
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("round-trip table: missing types %v, unexpected types %v", missing, extra)
	}
}

func TestMarshalInfersType(t *testing.T) {
	for _, tt := range []struct {
		m    Message
		want string
	}{
		{&RobotHello{}, TypeHello}, {&GatewayHello{}, TypeHello}, {&Ack{}, TypeAck}, {&Error{}, TypeError},
		{&FaceInfo{}, TypeFaceInfo}, {&GreetSignal{}, TypeGreetSignal}, {&State{}, TypeState},
		{&FunctionCall{}, TypeFunctionCall}, {&SkillResult{}, TypeSkillResult}, {&PlaybackProgress{}, TypePlaybackProgress},
		{&ASR{}, TypeASR}, {&TTS{}, TypeTTS}, {&TTSDone{}, TypeTTSDone}, {&Interrupt{}, TypeInterrupt},
		{&Arbiter{}, TypeArbiter}, {&Skill{}, TypeSkill}, {&KeyframeRequest{}, TypeKeyframeRequest}, {&GoAway{}, TypeGoAway},
		{&TTS{Meta: Meta{Type: TypeGreetTTS}}, TypeGreetTTS},
	} {
		b, err := Marshal(tt.m)
		if err != nil {
			t.Fatalf("Marshal(%T): %v", tt.m, err)
		}
		meta, err := PeekType(b, MaxControl)
		if err != nil || meta.Type != tt.want {
			t.Errorf("Marshal(%T) type = %q (%v), want %q", tt.m, meta.Type, err, tt.want)
		}
	}
	if b, err := Marshal(&Text{ResponseID: 1, Text: "x"}); err == nil {
		t.Errorf("Marshal(Text without type) = %s, want an error", b)
	}
}

func TestPeekType(t *testing.T) {
	m, err := PeekType([]byte(`{"type":"state","event_id":"b-1","ts":12,"state_name":"x","extra":[1,2]}`), MaxControl)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Meta{Type: TypeState, EventID: "b-1", TS: 12}); m != want {
		t.Errorf("PeekType = %+v, want %+v", m, want)
	}
	if _, err := PeekType([]byte(`{"type":"ack","event_id":"x"}`), 10); !errors.Is(err, ErrTooLarge) {
		t.Errorf("PeekType over limit: %v, want ErrTooLarge", err)
	}
}

func TestUnknownFieldsIgnored(t *testing.T) {
	m, err := DecodeFromRobot([]byte(`{"type":"state","event_id":"b-1","state_name":"x","state_value":1,"future_field":{"a":[1]},"v2":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if s := m.(*State); s.StateName != "x" || string(s.StateValue) != "1" {
		t.Errorf("decoded %+v", s)
	}
	if _, err := DecodeFromGateway([]byte(`{"type":"tts_done","response_id":3,"new":"x"}`)); err != nil {
		t.Errorf("unknown field in tts_done: %v", err)
	}
}

func TestTTSAudioDecoded(t *testing.T) {
	pcm := make([]byte, 960)
	for i := range pcm {
		pcm[i] = byte(i)
	}
	b := []byte(`{"type":"tts","response_id":7,"audio":"` + base64.StdEncoding.EncodeToString(pcm) + `"}`)
	m, err := DecodeFromGateway(b)
	if err != nil {
		t.Fatal(err)
	}
	tts := m.(*TTS)
	if !bytes.Equal(tts.Audio, pcm) || tts.ResponseID != 7 || tts.Last {
		t.Errorf("decoded %d bytes, id %d, last %v", len(tts.Audio), tts.ResponseID, tts.Last)
	}
	// The largest legal chunk: 2 s of 24 kHz PCM16.
	big := make([]byte, MaxTTSFrame-HeaderSize)
	b = []byte(`{"type":"greet_tts_delta","response_id":8,"audio":"` + base64.StdEncoding.EncodeToString(big) + `","last":true}`)
	if len(b) > MaxTTSJSON {
		t.Fatalf("largest legal tts message is %d bytes, over MaxTTSJSON %d", len(b), MaxTTSJSON)
	}
	if _, err := DecodeFromGateway(b); err != nil {
		t.Errorf("largest legal tts message: %v", err)
	}
}

func TestErrorCode(t *testing.T) {
	for _, tt := range []struct {
		in   string
		code string
	}{
		{`{"type":"nope"}`, CodeUnknownType},
		{`{"type":"hello","protocol":2,"device_id":"d","audio_up":{"format":"pcm16le","sample_rate":16000,"channels":1}}`, CodeVersionMismatch},
		{`{"type":"hello","protocol":1,"device_id":"d","audio_up":{"format":"opus","sample_rate":16000,"channels":1}}`, CodeUnsupported},
		{`{"type":"state"`, CodeBadMessage},
		{`{"type":"state","event_id":"a","state_name":"x","state_value":"` + strings.Repeat("a", MaxControl) + `"}`, CodeTooLarge},
	} {
		_, err := DecodeFromRobot([]byte(tt.in))
		if got := ErrorCode(err); got != tt.code {
			t.Errorf("ErrorCode(%v) = %q, want %q", err, got, tt.code)
		}
	}
}

func nested(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

type badCase struct {
	name    string
	in      string
	want    error // ErrMalformed, ErrTooLarge, ErrUnsupported or ErrUnknownType
	wantSub string
}

var commonBad = []badCase{
	{"empty", ``, ErrMalformed, "invalid JSON"},
	{"whitespace", "  \n", ErrMalformed, "invalid JSON"},
	{"null", `null`, ErrMalformed, `"type" is missing`},
	{"array", `[{"type":"ack","event_id":"x"}]`, ErrMalformed, "JSON array, want an object"},
	{"string", `"ack"`, ErrMalformed, "JSON string, want an object"},
	{"number", `42`, ErrMalformed, "want an object"},
	{"missing type", `{"event_id":"x"}`, ErrMalformed, `"type" is missing`},
	{"empty type", `{"type":"","event_id":"x"}`, ErrMalformed, `"type" is missing`},
	{"type is a number", `{"type":3}`, ErrMalformed, `field "type"`},
	{"type is null", `{"type":null}`, ErrMalformed, `"type" is missing`},
	{"type is an object", `{"type":{"a":1}}`, ErrMalformed, `field "type"`},
	{"unknown type", `{"type":"teleport"}`, ErrUnknownType, `"teleport"`},
	{"truncated", `{"type":"ack","event_id":"x"`, ErrMalformed, "invalid JSON"},
	{"trailing garbage", `{"type":"ack","event_id":"x"} {}`, ErrMalformed, "invalid JSON"},
	{"invalid utf-8 in value", "{\"type\":\"ack\",\"event_id\":\"\xff\xfe\"}", ErrMalformed, "UTF-8"},
	{"invalid utf-8 overlong", "{\"type\":\"ack\",\"event_id\":\"\xc0\xaf\"}", ErrMalformed, "UTF-8"},
	{"invalid utf-8 surrogate", "{\"type\":\"ack\",\"event_id\":\"\xed\xa0\x80\"}", ErrMalformed, "UTF-8"},
	{"event_id is a number", `{"type":"ack","event_id":17}`, ErrMalformed, `field "event_id"`},
	{"ts is a string", `{"type":"ack","event_id":"x","ts":"now"}`, ErrMalformed, `field "ts"`},
	{"ts is fractional", `{"type":"ack","event_id":"x","ts":1.5}`, ErrMalformed, `field "ts"`},
	{"ts 1e30", `{"type":"ack","event_id":"x","ts":1e30}`, ErrMalformed, `field "ts"`},
	{"ack without event_id", `{"type":"ack"}`, ErrMalformed, `"event_id" is missing`},
	{"error without code", `{"type":"error","msg":"x"}`, ErrMalformed, `"code" is missing`},
	{"error code is a number", `{"type":"error","code":400}`, ErrMalformed, `field "code"`},
	{"deeply nested", `{"type":"error","code":"x","msg":` + nested(20000) + `}`, ErrMalformed, "depth"},
	{"unterminated nesting", `{"type":"error","code":"x","msg":` + strings.Repeat("[", 20000), ErrMalformed, "invalid JSON"},
}

func TestDecodeFromRobotErrors(t *testing.T) {
	st := `{"type":"state","event_id":"b-1","state_name":"x","state_value":`
	pp := `{"type":"playback_progress","event_id":"b-2","samples_played":10,"response_id":`
	hello := func(s string) string {
		return `{"type":"hello","protocol":1,"device_id":"d","agent_version":"1",` + s + `}`
	}
	tests := append([]badCase{
		{"gateway type sent by robot", `{"type":"tts_done","response_id":1}`, ErrUnknownType, `"tts_done" from the robot`},
		{"too large", st + `"` + strings.Repeat("x", MaxControl) + `"}`, ErrTooLarge, "exceeds the limit of 65536"},
		{"hello protocol 2", hello(`"protocol":2,"audio_up":{"format":"pcm16le","sample_rate":16000,"channels":1}`), ErrVersionMismatch, `"protocol" is 2`},
		{"hello protocol missing", `{"type":"hello","device_id":"d","audio_up":{"format":"pcm16le","sample_rate":16000,"channels":1}}`, ErrVersionMismatch, `"protocol" is 0`},
		{"hello protocol string", hello(`"protocol":"1"`), ErrMalformed, `field "protocol"`},
		{"hello without device_id", `{"type":"hello","protocol":1,"audio_up":{"format":"pcm16le","sample_rate":16000,"channels":1}}`, ErrMalformed, `"device_id"`},
		{"hello audio_up 48k", hello(`"audio_up":{"format":"pcm16le","sample_rate":48000,"channels":1}`), ErrUnsupported, "48000 Hz"},
		{"hello audio_up stereo", hello(`"audio_up":{"format":"pcm16le","sample_rate":16000,"channels":2}`), ErrUnsupported, "2 channels"},
		{"hello audio_up opus", hello(`"audio_up":{"format":"opus","sample_rate":16000,"channels":1}`), ErrUnsupported, `"opus"`},
		{"hello audio_up missing", hello(`"capabilities":[]`), ErrUnsupported, `"audio_up"`},
		{"hello sample_rate 1e30", hello(`"audio_up":{"format":"pcm16le","sample_rate":1e30,"channels":1}`), ErrMalformed, `audio_up.sample_rate`},
		{"hello capabilities not strings", hello(`"capabilities":[1,2]`), ErrMalformed, `capabilities`},
		{"hello capabilities object", hello(`"capabilities":{"a":1}`), ErrMalformed, `capabilities`},
		{"state without event_id", `{"type":"state","state_name":"x","state_value":1}`, ErrMalformed, `"event_id"`},
		{"state without name", `{"type":"state","event_id":"b-1","state_value":1}`, ErrMalformed, `"state_name"`},
		{"state without value", `{"type":"state","event_id":"b-1","state_name":"x"}`, ErrMalformed, `"state_value" is missing`},
		{"state name is a number", `{"type":"state","event_id":"b-1","state_name":5,"state_value":1}`, ErrMalformed, `"state_name"`},
		{"state value invalid", st + `tru}`, ErrMalformed, "invalid JSON"},
		{"face_info no identities", `{"type":"face_info","event_id":"b-1","identities":[]}`, ErrMalformed, `"identities" is empty`},
		{"face_info identities null", `{"type":"face_info","event_id":"b-1","identities":null}`, ErrMalformed, `"identities" is empty`},
		{"face_info empty uid", `{"type":"face_info","event_id":"b-1","identities":[{"uid":"","kind":"face"}]}`, ErrMalformed, `identities[0].uid`},
		{"face_info bad kind", `{"type":"face_info","event_id":"b-1","identities":[{"uid":"a","kind":"face"},{"uid":"b","kind":"iris"}]}`, ErrMalformed, `identities[1].kind`},
		{"face_info confidence string", `{"type":"face_info","event_id":"b-1","identities":[{"uid":"a","kind":"face","confidence":"high"}]}`, ErrMalformed, `confidence`},
		{"face_info without event_id", `{"type":"face_info","identities":[{"uid":"a","kind":"face"}]}`, ErrMalformed, `"event_id"`},
		{"greet without event_id", `{"type":"greet_signal","uid":"a"}`, ErrMalformed, `"event_id"`},
		{"function_call without type", `{"type":"function_call","event_id":"b-1","function_call":{"value":"x"}}`, ErrMalformed, `"function_call.type"`},
		{"function_call not object", `{"type":"function_call","event_id":"b-1","function_call":"wave"}`, ErrMalformed, `field "function_call"`},
		{"function_call without event_id", `{"type":"function_call","function_call":{"type":"x"}}`, ErrMalformed, `"event_id"`},
		{"skill_result without ref", `{"type":"skill_result","event_id":"b-1","ok":true}`, ErrMalformed, `"ref"`},
		{"skill_result failed without error", `{"type":"skill_result","event_id":"b-1","ref":"g-1","ok":false}`, ErrMalformed, `"error" is required`},
		{"skill_result ok is a string", `{"type":"skill_result","event_id":"b-1","ref":"g-1","ok":"yes"}`, ErrMalformed, `field "ok"`},
		{"skill_result error is a string", `{"type":"skill_result","event_id":"b-1","ref":"g-1","error":"x"}`, ErrMalformed, `field "error"`},
		{"progress response_id 0", pp + `0}`, ErrMalformed, `"response_id" must be a response id > 0`},
		{"progress response_id missing", `{"type":"playback_progress","samples_played":1}`, ErrMalformed, `"response_id"`},
		{"progress response_id 1e30", pp + `1e30}`, ErrMalformed, `field "response_id"`},
		{"progress response_id -1", pp + `-1}`, ErrMalformed, `field "response_id"`},
		{"progress response_id 4294967296", pp + `4294967296}`, ErrMalformed, `4294967296`},
		{"progress response_id 1.5", pp + `1.5}`, ErrMalformed, `field "response_id"`},
		{"progress response_id string", pp + `"3"}`, ErrMalformed, `field "response_id"`},
		{"progress negative samples", `{"type":"playback_progress","response_id":1,"samples_played":-5}`, ErrMalformed, `"samples_played" is -5`},
		{"progress samples 1e19", `{"type":"playback_progress","response_id":1,"samples_played":10000000000000000000}`, ErrMalformed, `samples_played`},
		{"progress done string", `{"type":"playback_progress","response_id":1,"samples_played":1,"done":"true"}`, ErrMalformed, `field "done"`},
	}, commonBad...)
	runBad(t, DecodeFromRobot, tests)
}

func TestDecodeFromGatewayErrors(t *testing.T) {
	tts := func(audio string) string { return `{"type":"tts","response_id":1,"audio":"` + audio + `"}` }
	ghello := func(s string) string {
		return `{"type":"hello","protocol":1,"session_id":"s","audio_down":{"format":"pcm16le","sample_rate":24000,"channels":1}` + s + `}`
	}
	tests := append([]badCase{
		{"robot type sent by gateway", `{"type":"state","event_id":"b-1","state_name":"x","state_value":1}`, ErrUnknownType, `"state" from the gateway`},
		{"control too large", `{"type":"llm_delta","response_id":1,"text":"` + strings.Repeat("x", MaxControl) + `"}`, ErrTooLarge, "limit of 65536"},
		{"tts over downlink limit", tts(strings.Repeat("A", MaxDownlink)), ErrTooLarge, "exceeds the limit"},
		{"tts audio too large", tts(base64.StdEncoding.EncodeToString(make([]byte, MaxTTSFrame-HeaderSize+2))), ErrTooLarge, `"audio" decodes to 96002 bytes`},
		{"tts invalid base64", tts("!!!!"), ErrMalformed, `"audio" is not valid base64`},
		{"tts base64url", tts("-_-_"), ErrMalformed, `"audio" is not valid base64`},
		{"tts missing padding", tts("AAA"), ErrMalformed, `"audio" is not valid base64`},
		{"tts odd pcm", tts("AA=="), ErrMalformed, "decodes to 1 bytes, not whole PCM16"},
		{"tts sample_rate 16000", `{"type":"tts","response_id":1,"audio":"","sample_rate":16000}`, ErrUnsupported, `"sample_rate" is 16000`},
		{"tts sample_rate string", `{"type":"tts","response_id":1,"audio":"","sample_rate":"24000"}`, ErrMalformed, `field "sample_rate"`},
		{"tts odd pcm 3 bytes", tts("AAAA"), ErrMalformed, "decodes to 3 bytes"},
		{"tts audio number", `{"type":"tts","response_id":1,"audio":1234}`, ErrMalformed, `field "audio"`},
		{"tts without response_id", `{"type":"tts","audio":"AAAA"}`, ErrMalformed, `"response_id"`},
		{"tts response_id 1e30", `{"type":"tts","response_id":1e30,"audio":""}`, ErrMalformed, `field "response_id"`},
		{"tts response_id negative", `{"type":"tts","response_id":-3,"audio":""}`, ErrMalformed, `field "response_id"`},
		{"tts response_id 4294967296", `{"type":"tts","response_id":4294967296,"audio":""}`, ErrMalformed, `4294967296`},
		{"greet_tts_delta invalid base64", `{"type":"greet_tts_delta","response_id":1,"audio":"A==="}`, ErrMalformed, `greet_tts_delta: `},
		{"tts last string", `{"type":"tts","response_id":1,"audio":"","last":"yes"}`, ErrMalformed, `field "last"`},
		{"tts_done response_id 0", `{"type":"tts_done","response_id":0}`, ErrMalformed, `"response_id"`},
		{"greet_tts_done missing id", `{"type":"greet_tts_done"}`, ErrMalformed, `"response_id"`},
		{"llm_delta missing id", `{"type":"llm_delta","text":"x"}`, ErrMalformed, `llm_delta: `},
		{"vlm_done id string", `{"type":"vlm_done","response_id":"1"}`, ErrMalformed, `field "response_id"`},
		{"asr text number", `{"type":"asr","text":5}`, ErrMalformed, `field "text"`},
		{"asr utterance_id negative", `{"type":"asr","text":"x","utterance_id":-1}`, ErrMalformed, `field "utterance_id"`},
		{"interrupt id 4294967296", `{"type":"interrupt","response_id":4294967296}`, ErrMalformed, `field "response_id"`},
		{"arbiter bad decision", `{"type":"function_call_arbiter","ref":"b-1","decision":"maybe"}`, ErrMalformed, `"decision" is "maybe"`},
		{"arbiter decision case", `{"type":"function_call_arbiter","ref":"b-1","decision":"DELEGATE"}`, ErrMalformed, `"decision"`},
		{"arbiter without ref", `{"type":"function_call_arbiter","decision":"delegate"}`, ErrMalformed, `"ref"`},
		{"skill without event_id", `{"type":"skill","skill":"nod"}`, ErrMalformed, `"event_id"`},
		{"skill without name", `{"type":"skill","event_id":"g-1"}`, ErrMalformed, `"skill"`},
		{"skill args invalid", `{"type":"skill","event_id":"g-1","skill":"nod","args":{"a":}}`, ErrMalformed, "invalid JSON"},
		{"go_away reconnect string", `{"type":"go_away","reconnect_after_ms":"soon"}`, ErrMalformed, `field "reconnect_after_ms"`},
		{"hello protocol 2", `{"type":"hello","protocol":2,"session_id":"s"}`, ErrVersionMismatch, `"protocol" is 2`},
		{"hello without session", `{"type":"hello","protocol":1,"audio_down":{"format":"pcm16le","sample_rate":24000,"channels":1}}`, ErrMalformed, `"session_id"`},
		{"hello negative keepalive", ghello(`,"keepalive":{"interval_ms":-1,"timeout_ms":100}`), ErrMalformed, `"keepalive"`},
		{"hello keepalive 1e30", ghello(`,"keepalive":{"interval_ms":1e30}`), ErrMalformed, `keepalive.interval_ms`},
		{"hello audio_down 16k", `{"type":"hello","protocol":1,"session_id":"s","audio_down":{"format":"pcm16le","sample_rate":16000,"channels":1}}`, ErrUnsupported, "16000 Hz"},
		{"hello audio_down missing", `{"type":"hello","protocol":1,"session_id":"s"}`, ErrUnsupported, `"audio_down"`},
		{"hello resumed string", ghello(`,"resumed":"true"`), ErrMalformed, `field "resumed"`},
	}, commonBad...)
	runBad(t, DecodeFromGateway, tests)
}

func runBad(t *testing.T, decode func([]byte) (Message, error), tests []badCase) {
	t.Helper()
	classes := []error{ErrMalformed, ErrTooLarge, ErrUnsupported}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := decode([]byte(tt.in))
			if err == nil {
				t.Fatalf("decoded %#v, want an error", m)
			}
			if m != nil {
				t.Errorf("message %#v returned with error", m)
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("error %q is not %q", err, tt.want)
			}
			// Exactly one class.
			n := 0
			for _, c := range classes {
				if errors.Is(err, c) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("error %q matches %d of ErrMalformed/ErrTooLarge/ErrUnsupported, want 1", err, n)
			}
			if errors.Is(err, ErrUnknownType) != (tt.want == ErrUnknownType) {
				t.Errorf("errors.Is(%q, ErrUnknownType) = %v", err, !(tt.want == ErrUnknownType))
			}
			if !strings.Contains(err.Error(), tt.wantSub) {
				t.Errorf("error %q does not mention %q", err, tt.wantSub)
			}
			if !strings.HasPrefix(err.Error(), "protocol: ") && !strings.Contains(err.Error(), ": protocol: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

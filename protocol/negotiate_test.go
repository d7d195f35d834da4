package protocol

import (
	"encoding/json"
	"errors"
	"testing"
)

func pcmUp() AudioParams {
	return AudioParams{Format: FormatPCM16LE, SampleRate: 16000, Channels: 1, FrameMS: 20}
}
func pcmDown() AudioParams { return AudioParams{Format: FormatPCM16LE, SampleRate: 24000, Channels: 1} }

// TestSpec_3_9_Negotiate covers the v1.1 hello negotiation rules: minor
// version = min of both, v1.0 gateways (no "audio") get PCM, a choice must
// come from the offer, keepalive fields default one by one.
func TestSpec_3_9_Negotiate(t *testing.T) {
	opus := AudioParams{Format: "opus", SampleRate: 24000, Channels: 1}
	robot := &RobotHello{Minor: 1, AudioUp: pcmUp(), AudioDown: []AudioParams{pcmDown()},
		Audio: &AudioOffer{Up: []AudioParams{pcmUp()}, Down: []AudioParams{opus, pcmDown()}}}
	def := Keepalive{IntervalMS: 5000, TimeoutMS: 15000}
	tests := []struct {
		name    string
		gw      GatewayHello
		want    Negotiated
		wantErr bool
	}{
		{"v1.0 gateway", GatewayHello{AudioDown: pcmDown()},
			Negotiated{Minor: 0, AudioUp: pcmUp(), AudioDown: pcmDown(), Keepalive: def}, false},
		{"v1.1 gateway picks opus down", GatewayHello{Minor: 1, Audio: &AudioChoice{Up: pcmUp(), Down: opus}},
			Negotiated{Minor: 1, AudioUp: pcmUp(), AudioDown: opus, Keepalive: def}, false},
		{"newer gateway minor", GatewayHello{Minor: 7, Resumed: true},
			Negotiated{Minor: 1, AudioUp: pcmUp(), AudioDown: pcmDown(), Keepalive: def, Resumed: true}, false},
		{"interval only", GatewayHello{Keepalive: Keepalive{IntervalMS: 700}},
			Negotiated{AudioUp: pcmUp(), AudioDown: pcmDown(), Keepalive: Keepalive{IntervalMS: 700, TimeoutMS: 15000}}, false},
		{"timeout only", GatewayHello{Keepalive: Keepalive{TimeoutMS: 3000}},
			Negotiated{AudioUp: pcmUp(), AudioDown: pcmDown(), Keepalive: Keepalive{IntervalMS: 5000, TimeoutMS: 3000}}, false},
		{"choice not offered", GatewayHello{Minor: 1, Audio: &AudioChoice{Up: opus, Down: pcmDown()}}, Negotiated{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Negotiate(robot, &tc.gw, def)
			if tc.wantErr {
				if !errors.Is(err, ErrUnsupported) {
					t.Fatalf("err = %v, want ErrUnsupported", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestSpec_3_9_HelloExtensionsDecode: the v1.1 hello fields decode in both
// directions and a v1.0 decoder's view (unknown fields ignored) is
// unchanged.
func TestSpec_3_9_HelloExtensionsDecode(t *testing.T) {
	r := `{"type":"hello","protocol":1,"protocol_minor":1,"device_id":"d","audio_up":{"format":"pcm16le","sample_rate":16000,"channels":1},"audio":{"up":[{"format":"pcm16le","sample_rate":16000,"channels":1}],"down":[{"format":"pcm16le","sample_rate":24000,"channels":1}]}}`
	m, err := DecodeFromRobot([]byte(r))
	if err != nil {
		t.Fatal(err)
	}
	if h := m.(*RobotHello); h.Minor != 1 || h.Audio == nil || len(h.Audio.Down) != 1 {
		t.Fatalf("robot hello %+v", h)
	}
	g := `{"type":"hello","protocol":1,"protocol_minor":1,"session_id":"s","capabilities":["resume","future_thing"],"audio":{"up":{"format":"pcm16le","sample_rate":16000,"channels":1},"down":{"format":"pcm16le","sample_rate":24000,"channels":1}}}`
	gm, err := DecodeFromGateway([]byte(g))
	if err != nil {
		t.Fatal(err)
	}
	if h := gm.(*GatewayHello); h.Minor != 1 || h.Audio == nil || len(h.Capabilities) != 2 {
		t.Fatalf("gateway hello %+v", h)
	}
	bad := `{"type":"hello","protocol":1,"session_id":"s","audio":{"up":{"format":"","sample_rate":16000,"channels":1},"down":{"format":"pcm16le","sample_rate":24000,"channels":1}}}`
	if _, err := DecodeFromGateway([]byte(bad)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("empty audio.up format: err = %v", err)
	}
}

// TestSpec_9_1_RefOf: the ref of an error is the message's string
// event_id whatever else is wrong with it.
func TestSpec_9_1_RefOf(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"event_id":"e-1"}`, "e-1"},
		{`{"type":"","event_id":"e-2"}`, "e-2"},
		{`{"type":7,"event_id":"e-3"}`, "e-3"},
		{`{"type":"state","event_id":"e-4","state_name":5}`, "e-4"},
		{`{"type":"teleport","event_id":"e-5"}`, "e-5"},
		{`{"event_id":5}`, ""},
		{`{"event_id":"e-6"`, ""},
		{`[1,2]`, ""},
		{`"x"`, ""},
		{``, ""},
	} {
		if got := RefOf([]byte(tc.in)); got != tc.want {
			t.Errorf("RefOf(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzRefOf: RefOf never panics, and what it returns is the event_id of
// the object (so it occurs in the input) or "".
func FuzzRefOf(f *testing.F) {
	for _, s := range []string{`{"event_id":"e-1"}`, `{"type":7,"event_id":"x"}`, `{"event_id":5}`, `[]`, `{"event_id":"\u00e9"}`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ref := RefOf(data)
		if len(ref) > MaxEventID {
			t.Fatalf("ref of %d bytes", len(ref))
		}
		if ref != "" && !json.Valid(data) {
			t.Fatalf("ref %q from invalid JSON %q", ref, data)
		}
	})
}

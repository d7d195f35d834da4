package protocol

import (
	"errors"
	"strings"
	"testing"
)

const helloBase = `{"type":"hello","protocol":1,"protocol_minor":1,"device_id":"rb-1","agent_version":"1","audio_up":{"format":"pcm16le","sample_rate":16000,"channels":1,"frame_ms":20},"audio_down":[{"format":"pcm16le","sample_rate":24000,"channels":1}]`

const robotHelloOpus = helloBase + `,"audio":{"up":[{"format":"opus","sample_rate":16000,"channels":1,"frame_ms":20,"bitrate":16000,"bitrate_min":6000,"bitrate_max":64000,"dtx":true},{"format":"pcm16le","sample_rate":16000,"channels":1,"frame_ms":20}],"down":[{"format":"opus","sample_rate":24000,"channels":1,"fec":true},{"format":"pcm16le","sample_rate":24000,"channels":1}]}}`

const robotHelloPCM = helloBase + `,"audio":{"up":[{"format":"pcm16le","sample_rate":16000,"channels":1,"frame_ms":20}],"down":[{"format":"pcm16le","sample_rate":24000,"channels":1}]}}`

const robotHelloV10 = helloBase + `}`

func decodeRobotHello(t testing.TB, s string) *RobotHello {
	t.Helper()
	m, err := DecodeFromRobot([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return m.(*RobotHello)
}

func gwHello(t *testing.T, audio string) (*GatewayHello, error) {
	t.Helper()
	m, err := DecodeFromGateway([]byte(`{"type":"hello","protocol":1,"session_id":"s","audio_up":{"format":"pcm16le","sample_rate":16000,"channels":1,"frame_ms":20},"audio_down":{"format":"pcm16le","sample_rate":24000,"channels":1}` + audio + `}`))
	if err != nil {
		return nil, err
	}
	return m.(*GatewayHello), nil
}

// TestNegotiateAudio covers the robot's side for every way a gateway can
// answer: Opus chosen, PCM chosen, an old gateway that says nothing, and
// choices the robot did not offer.
func TestNegotiateAudio(t *testing.T) {
	const (
		pcmUp    = `{"format":"pcm16le","sample_rate":16000,"channels":1,"frame_ms":20}`
		pcmDown  = `{"format":"pcm16le","sample_rate":24000,"channels":1}`
		opusUp   = `{"format":"opus","sample_rate":16000,"channels":1,"frame_ms":20,"bitrate":24000}`
		opusDown = `{"format":"opus","sample_rate":24000,"channels":1,"frame_ms":20}`
	)
	choice := func(up, down string) string { return `,"audio":{"up":` + up + `,"down":` + down + `}` }
	tests := []struct {
		name      string
		robot     string
		gw        string
		up, down  string // formats of the session
		upBitr    int
		decodeErr string // gateway hello rejected by the decoder
		choiceErr string // rejected by NegotiateAudio
	}{
		{name: "old gateway says nothing", robot: robotHelloOpus, gw: "", up: "pcm16le", down: "pcm16le"},
		{name: "pcm chosen", robot: robotHelloOpus, gw: choice(pcmUp, pcmDown), up: "pcm16le", down: "pcm16le"},
		{name: "opus both ways", robot: robotHelloOpus, gw: choice(opusUp, opusDown), up: "opus", down: "opus", upBitr: 24000},
		{name: "opus up, robot's bitrate and frame", robot: robotHelloOpus, gw: choice(`{"format":"opus","sample_rate":16000,"channels":1}`, pcmDown), up: "opus", down: "pcm16le", upBitr: 16000},
		{name: "opus down only", robot: robotHelloOpus, gw: choice(pcmUp, opusDown), up: "pcm16le", down: "opus"},
		{name: "v1.0 robot, gateway says nothing", robot: robotHelloV10, gw: "", up: "pcm16le", down: "pcm16le"},
		{name: "opus to a pcm-only robot", robot: robotHelloPCM, gw: choice(pcmUp, opusDown), choiceErr: `"audio.down" opus`},
		{name: "opus up to a v1.0 robot", robot: robotHelloV10, gw: choice(opusUp, pcmDown), choiceErr: `"audio.up" opus`},
		{name: "bitrate not offered", robot: robotHelloOpus, gw: choice(`{"format":"opus","sample_rate":16000,"channels":1,"bitrate":100000}`, pcmDown), choiceErr: "audio.up.bitrate\" 100000"},
		{name: "frame not offered", robot: robotHelloOpus, gw: choice(`{"format":"opus","sample_rate":16000,"channels":1,"frame_ms":60}`, pcmDown), choiceErr: "audio.up.frame_ms\" 60"},
		{name: "opus wrong rate", robot: robotHelloOpus, gw: choice(pcmUp, `{"format":"opus","sample_rate":48000,"channels":1}`), decodeErr: "opus 48000 Hz"},
		{name: "opus stereo up", robot: robotHelloOpus, gw: choice(`{"format":"opus","sample_rate":16000,"channels":2}`, pcmDown), decodeErr: "x 2 channels"},
		{name: "opus bitrate absurd", robot: robotHelloOpus, gw: choice(`{"format":"opus","sample_rate":16000,"channels":1,"bitrate":1}`, pcmDown), decodeErr: "bitrate 1"},
		{name: "opus frame too long", robot: robotHelloOpus, gw: choice(pcmUp, `{"format":"opus","sample_rate":24000,"channels":1,"frame_ms":200}`), decodeErr: "frame_ms 200"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh, err := gwHello(t, tt.gw)
			if tt.decodeErr != "" {
				if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tt.decodeErr) {
					t.Fatalf("decode: %v, want unsupported naming %q", err, tt.decodeErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sa, err := NegotiateAudio(decodeRobotHello(t, tt.robot), gh)
			if tt.choiceErr != "" {
				if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tt.choiceErr) {
					t.Fatalf("NegotiateAudio: %v, want unsupported naming %q", err, tt.choiceErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sa.Up.Format != tt.up || sa.Down.Format != tt.down {
				t.Errorf("session up %q down %q, want %q %q", sa.Up.Format, sa.Down.Format, tt.up, tt.down)
			}
			if sa.UpOpus() && (sa.Up.FrameMS != 20 || sa.Up.Bitrate != tt.upBitr) {
				t.Errorf("opus up %+v, want 20 ms at %d", sa.Up, tt.upBitr)
			}
		})
	}
}

func TestChooseAudio(t *testing.T) {
	opus, pcm, v10 := decodeRobotHello(t, robotHelloOpus), decodeRobotHello(t, robotHelloPCM), decodeRobotHello(t, robotHelloV10)
	tests := []struct {
		name     string
		robot    *RobotHello
		p        AudioPolicy
		up, down string
		bitrate  int
	}{
		{"pcm gateway", opus, AudioPolicy{}, "pcm16le", "pcm16le", 0},
		{"opus both", opus, AudioPolicy{OpusUp: true, OpusDown: true}, "opus", "opus", 16000},
		{"opus bitrate clamped", opus, AudioPolicy{OpusUp: true, UpBitrate: 200000}, "opus", "pcm16le", 64000},
		{"pcm-only robot", pcm, AudioPolicy{OpusUp: true, OpusDown: true}, "pcm16le", "pcm16le", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ChooseAudio(tt.robot, tt.p)
			if c.Up.Format != tt.up || c.Down.Format != tt.down || c.Up.Bitrate != tt.bitrate {
				t.Fatalf("chose %+v / %+v", c.Up, c.Down)
			}
			// Whatever a gateway chooses this way, the robot accepts.
			if _, err := NegotiateAudio(tt.robot, &GatewayHello{Audio: c}); err != nil {
				t.Errorf("robot refuses the choice: %v", err)
			}
		})
	}
	if c := ChooseAudio(v10, AudioPolicy{OpusUp: true}); c != nil {
		t.Errorf("choice %+v for a v1.0 robot, want none", c)
	}
}

func TestRobotHelloOfferValidation(t *testing.T) {
	for offer, want := range map[string]string{
		`{"up":[{"format":"opus","sample_rate":16000,"channels":1,"bitrate_min":9,"bitrate_max":8}],"down":[]}`: `bitrate_min 9 > bitrate_max 8`,
		`{"up":[{"format":"opus","sample_rate":16000,"channels":1,"bitrate":-1}],"down":[]}`:                    `negative bitrate`,
		`{"up":[{"format":"opus","sample_rate":16000,"channels":1,"frame_ms":-20}],"down":[]}`:                  `audio.up[0].frame_ms`,
	} {
		_, err := DecodeFromRobot([]byte(helloBase + `,"audio":` + offer + "}"))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want bad_message naming %q", offer, err, want)
		}
	}
	// Unknown formats are skipped, not refused.
	if _, err := DecodeFromRobot([]byte(helloBase + `,"audio":{"up":[{"format":"lyra","sample_rate":16000,"channels":1}],"down":[]}}`)); err != nil {
		t.Errorf("unknown offered format: %v", err)
	}
}

func TestParseFrameOpus(t *testing.T) {
	odd := []byte{0x48, 1, 2}
	mic := AppendFrame(nil, Header{Kind: KindMicAudio, Flag: FlagContinue, Stream: 1}, odd)
	tts := AppendFrame(nil, Header{Kind: KindTTSAudio, Stream: 1}, odd)
	pcm := PCMAudio(20)
	if _, _, err := pcm.ParseFrame(mic); !errors.Is(err, ErrMalformed) {
		t.Errorf("pcm session, odd mic payload: %v", err)
	}
	sa := pcm
	sa.Up.Format = FormatOpus
	if _, p, err := sa.ParseFrame(mic); err != nil || len(p) != 3 {
		t.Errorf("opus up, odd mic payload: %v", err)
	}
	if _, _, err := sa.ParseFrame(tts); !errors.Is(err, ErrMalformed) {
		t.Errorf("opus up only, odd tts payload: %v", err)
	}
	sa.Down.Format = FormatOpus
	if _, _, err := sa.ParseFrame(tts); err != nil {
		t.Errorf("opus down, odd tts payload: %v", err)
	}
}

// FuzzNegotiation: any pair of hellos either decodes or is refused with a
// classified error; NegotiateAudio never panics; and whatever ChooseAudio
// picks for a decodable robot hello, NegotiateAudio accepts.
func FuzzNegotiation(f *testing.F) {
	f.Add([]byte(robotHelloOpus), []byte(`{"type":"hello","protocol":1,"session_id":"s","audio_down":{"format":"pcm16le","sample_rate":24000,"channels":1},"audio":{"up":{"format":"opus","sample_rate":16000,"channels":1},"down":{"format":"opus","sample_rate":24000,"channels":1}}}`), true, 16000)
	f.Add([]byte(robotHelloPCM), []byte(`{"type":"hello","protocol":1,"session_id":"s","audio_down":{"format":"pcm16le","sample_rate":24000,"channels":1}}`), false, 0)
	f.Fuzz(func(t *testing.T, rb, gb []byte, opus bool, bitrate int) {
		rm, err := DecodeFromRobot(rb)
		if err != nil {
			checkClass(t, err)
			return
		}
		rh, ok := rm.(*RobotHello)
		if !ok {
			return
		}
		if c := ChooseAudio(rh, AudioPolicy{OpusUp: opus, OpusDown: opus, UpBitrate: bitrate}); c != nil {
			// The robot accepts ChooseAudio's choice, unless its own offer
			// lacks PCM (then the PCM fallback was not offered).
			_, hasUp := matchOffer(rh.Audio.Up, c.Up)
			_, hasDown := matchOffer(rh.Audio.Down, c.Down)
			if _, err := NegotiateAudio(rh, &GatewayHello{Audio: c}); err != nil && hasUp && hasDown {
				t.Fatalf("robot refuses ChooseAudio's choice %+v: %v", c, err)
			}
		}
		gm, err := DecodeFromGateway(gb)
		if err != nil {
			checkClass(t, err)
			return
		}
		gh, ok := gm.(*GatewayHello)
		if !ok {
			return
		}
		sa, err := NegotiateAudio(rh, gh)
		if err != nil {
			if !errors.Is(err, ErrUnsupported) {
				t.Fatalf("NegotiateAudio error %v is not ErrUnsupported", err)
			}
			return
		}
		if sa.UpOpus() && rh.Audio == nil {
			t.Fatalf("opus up negotiated without an offer")
		}
	})
}

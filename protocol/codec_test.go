package protocol

import (
	"errors"
	"strings"
	"testing"
)

const robotHelloOpus = `{"type":"hello","protocol":1,"device_id":"rb-1","agent_version":"1","audio_up":{"format":"pcm16le","sample_rate":16000,"channels":1,"frame_ms":20},"audio_down":[{"format":"pcm16le","sample_rate":24000,"channels":1}],"audio_codecs":{"up":[{"format":"opus","sample_rate":16000,"channels":1,"frame_ms":[20],"bitrate":16000,"bitrate_min":6000,"bitrate_max":64000,"dtx":true}],"down":[{"format":"opus","sample_rate":24000,"channels":1,"frame_ms":[10,20,40,60,80,100,120],"fec":true}]}}`

const robotHelloPCM = `{"type":"hello","protocol":1,"device_id":"rb-1","agent_version":"1","audio_up":{"format":"pcm16le","sample_rate":16000,"channels":1,"frame_ms":20},"audio_down":[{"format":"pcm16le","sample_rate":24000,"channels":1}]}`

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
	m, err := DecodeFromGateway([]byte(`{"type":"hello","protocol":1,"session_id":"s"` + audio + `}`))
	if err != nil {
		return nil, err
	}
	return m.(*GatewayHello), nil
}

// TestNegotiation covers the robot's side (CheckChoice) for every way a
// gateway can answer: Opus chosen, PCM chosen, an old gateway that says
// nothing about codecs, and choices the robot did not offer.
func TestNegotiation(t *testing.T) {
	pcmDown := `"audio_down":{"format":"pcm16le","sample_rate":24000,"channels":1}`
	opusDown := `"audio_down":{"format":"opus","sample_rate":24000,"channels":1,"frame_ms":20}`
	tests := []struct {
		name      string
		robot     string
		gw        string
		up, down  string // formats of the session
		upBitr    int
		decodeErr string // gateway hello rejected by the decoder
		choiceErr string // rejected by CheckChoice
	}{
		{name: "old gateway says nothing", robot: robotHelloOpus, gw: "," + pcmDown, up: "pcm16le", down: "pcm16le"},
		{name: "v1 gateway echoes pcm", robot: robotHelloOpus, gw: `,"audio_up":{"format":"pcm16le","sample_rate":16000,"channels":1,"frame_ms":20},` + pcmDown, up: "pcm16le", down: "pcm16le"},
		{name: "opus both ways", robot: robotHelloOpus, gw: `,"audio_up":{"format":"opus","sample_rate":16000,"channels":1,"frame_ms":20,"bitrate":24000},` + opusDown, up: "opus", down: "opus", upBitr: 24000},
		{name: "opus up, robot's bitrate", robot: robotHelloOpus, gw: `,"audio_up":{"format":"opus","sample_rate":16000,"channels":1},` + pcmDown, up: "opus", down: "pcm16le", upBitr: 16000},
		{name: "opus down only", robot: robotHelloOpus, gw: "," + opusDown, up: "pcm16le", down: "opus"},
		{name: "opus to a pcm-only robot", robot: robotHelloPCM, gw: "," + opusDown, choiceErr: "audio_down opus"},
		{name: "opus up to a pcm-only robot", robot: robotHelloPCM, gw: `,"audio_up":{"format":"opus","sample_rate":16000,"channels":1},` + pcmDown, choiceErr: "audio_up opus"},
		{name: "bitrate not offered", robot: robotHelloOpus, gw: `,"audio_up":{"format":"opus","sample_rate":16000,"channels":1,"bitrate":100000},` + pcmDown, choiceErr: "audio_up.bitrate 100000"},
		{name: "frame not offered", robot: robotHelloOpus, gw: `,"audio_up":{"format":"opus","sample_rate":16000,"channels":1,"frame_ms":60},` + pcmDown, choiceErr: "audio_up.frame_ms 60"},
		{name: "down frame not offered", robot: robotHelloOpus, gw: `,"audio_down":{"format":"opus","sample_rate":24000,"channels":1,"frame_ms":7}`, choiceErr: "audio_down.frame_ms 7"},
		{name: "unknown format", robot: robotHelloOpus, gw: `,"audio_down":{"format":"aac","sample_rate":24000,"channels":1}`, decodeErr: `"audio_down" format "aac"`},
		{name: "opus wrong rate", robot: robotHelloOpus, gw: `,"audio_down":{"format":"opus","sample_rate":48000,"channels":1}`, decodeErr: "opus 48000 Hz"},
		{name: "opus stereo up", robot: robotHelloOpus, gw: `,"audio_up":{"format":"opus","sample_rate":16000,"channels":2},` + pcmDown, decodeErr: "x 2 channels"},
		{name: "opus bitrate absurd", robot: robotHelloOpus, gw: `,"audio_up":{"format":"opus","sample_rate":16000,"channels":1,"bitrate":1},` + pcmDown, decodeErr: "bitrate 1"},
		{name: "opus frame too long", robot: robotHelloOpus, gw: `,"audio_down":{"format":"opus","sample_rate":24000,"channels":1,"frame_ms":200}`, decodeErr: "frame_ms 200"},
		{name: "no audio_down", robot: robotHelloOpus, gw: ``, decodeErr: "audio_down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh, err := gwHello(t, tt.gw)
			if tt.decodeErr != "" {
				if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tt.decodeErr) {
					t.Fatalf("decode: %v, want unsupported naming %q", err, tt.decodeErr)
				}
				if ErrorCode(err) != CodeUnsupported {
					t.Errorf("code %s", ErrorCode(err))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sa, err := CheckChoice(decodeRobotHello(t, tt.robot), gh)
			if tt.choiceErr != "" {
				if !errors.Is(err, ErrNotOffered) || !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tt.choiceErr) {
					t.Fatalf("CheckChoice: %v, want ErrNotOffered naming %q", err, tt.choiceErr)
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
	opus, pcm := decodeRobotHello(t, robotHelloOpus), decodeRobotHello(t, robotHelloPCM)
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
		{"down frame not decodable", opus, AudioPolicy{OpusDown: true, DownFrameMS: 30}, "pcm16le", "pcm16le", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up, down := ChooseAudio(tt.robot, tt.p)
			if up.Format != tt.up || down.Format != tt.down || up.Bitrate != tt.bitrate {
				t.Fatalf("chose %+v / %+v", up, down)
			}
			// Whatever a gateway chooses this way, the robot accepts.
			gh := &GatewayHello{AudioUp: up, AudioDown: down}
			if _, err := CheckChoice(tt.robot, gh); err != nil {
				t.Errorf("robot refuses the choice: %v", err)
			}
		})
	}
}

func TestRobotHelloCodecsValidation(t *testing.T) {
	base := `{"type":"hello","protocol":1,"device_id":"rb-1","audio_up":{"format":"pcm16le","sample_rate":16000,"channels":1},"audio_codecs":`
	for codecs, want := range map[string]string{
		`{"up":[{"sample_rate":16000,"channels":1}]}`:                                                 `audio_codecs.up[0].format`,
		`{"down":[{"format":"opus","channels":1}]}`:                                                   `audio_codecs.down[0].sample_rate`,
		`{"up":[{"format":"opus","sample_rate":16000}]}`:                                              `audio_codecs.up[0].channels`,
		`{"up":[{"format":"opus","sample_rate":16000,"channels":1,"frame_ms":[20,0]}]}`:               `audio_codecs.up[0].frame_ms[1]`,
		`{"up":[{"format":"opus","sample_rate":16000,"channels":1,"bitrate_min":9,"bitrate_max":8}]}`: `bitrate_min 9 > bitrate_max 8`,
		`{"up":"opus"}`: `field "audio_codecs.up"`,
	} {
		_, err := DecodeFromRobot([]byte(base + codecs + "}"))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want bad_message naming %q", codecs, err, want)
		}
	}
	// Unknown formats are skipped, not refused.
	if _, err := DecodeFromRobot([]byte(base + `{"up":[{"format":"lyra","sample_rate":16000,"channels":1}]}}`)); err != nil {
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
// classified error; CheckChoice never panics and yields pcm16le or opus;
// and whatever ChooseAudio picks for a decodable robot hello, CheckChoice
// accepts.
func FuzzNegotiation(f *testing.F) {
	f.Add([]byte(robotHelloOpus), []byte(`{"type":"hello","protocol":1,"session_id":"s","audio_down":{"format":"opus","sample_rate":24000,"channels":1}}`), true, 16000)
	f.Add([]byte(robotHelloPCM), []byte(`{"type":"hello","protocol":1,"session_id":"s","audio_up":{"format":"opus","sample_rate":16000,"channels":1},"audio_down":{"format":"pcm16le","sample_rate":24000,"channels":1}}`), false, 0)
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
		up, down := ChooseAudio(rh, AudioPolicy{OpusUp: opus, OpusDown: opus, UpBitrate: bitrate})
		if _, err := CheckChoice(rh, &GatewayHello{AudioUp: up, AudioDown: down}); err != nil {
			// Only a robot offer outside what a gateway may send (checked
			// by the gateway hello decoder) can be refused.
			if verr := validateChosen("audio_up", up, MicRate, false); verr == nil {
				if verr := validateChosen("audio_down", down, TTSRate, true); verr == nil {
					t.Fatalf("robot refuses ChooseAudio's choice %+v/%+v: %v", up, down, err)
				}
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
		sa, err := CheckChoice(rh, gh)
		if err != nil {
			if !errors.Is(err, ErrNotOffered) {
				t.Fatalf("CheckChoice error %v is not ErrNotOffered", err)
			}
			return
		}
		for _, f := range []string{sa.Up.Format, sa.Down.Format} {
			if f != FormatPCM16LE && f != FormatOpus {
				t.Fatalf("session format %q", f)
			}
		}
	})
}

package uplink

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/playback"
	"github.com/robot-agent/robot-agent/protocol"
)

// fakeEncoder "encodes" a frame into a 3-byte packet: a marker, the low
// byte of the first sample and the frame count (odd length on purpose).
type fakeEncoder struct {
	frame  int
	n      byte
	resets int
}

func (e *fakeEncoder) Encode(pcm []int16, dst []byte) (int, error) {
	if len(pcm) != e.frame {
		return 0, fmt.Errorf("fake: %d samples", len(pcm))
	}
	e.n++
	dst[0], dst[1], dst[2] = 0xAB, byte(pcm[0]), e.n
	return 3, nil
}
func (e *fakeEncoder) FrameSamples() int { return e.frame }
func (e *fakeEncoder) Reset() error      { e.resets++; return nil }

// fakeGateway is a test double speaking just enough protocol: it answers
// the robot hello with the given choice and records what arrives.
type fakeGateway struct {
	choice   string // audio fields of the gateway hello, JSON, leading comma
	mu       sync.Mutex
	hello    *protocol.RobotHello
	frames   [][]byte
	texts    []string
	conn     *websocket.Conn
	sessions int
}

func (g *fakeGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, hello := acceptRobot(nil, w, r)
	if c == nil {
		return
	}
	defer c.Close()
	g.mu.Lock() // held while writing: send writes from the test goroutine
	g.hello = hello
	g.conn = c
	g.sessions++
	c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","protocol":1,"session_id":"fake"`+g.choice+`}`))
	g.mu.Unlock()
	for {
		mt, data, err := c.ReadMessage()
		if err != nil {
			return
		}
		g.mu.Lock()
		if mt == websocket.BinaryMessage {
			g.frames = append(g.frames, data)
		} else {
			g.texts = append(g.texts, string(data))
		}
		g.mu.Unlock()
	}
}

func (g *fakeGateway) send(t *testing.T, data []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.conn.WriteMessage(websocket.BinaryMessage, data); err != nil {
		t.Fatal(err)
	}
}

const (
	v1Audio  = `,"audio_up":{"format":"pcm16le","sample_rate":16000,"channels":1,"frame_ms":20},"audio_down":{"format":"pcm16le","sample_rate":24000,"channels":1}`
	pcmUp    = `{"format":"pcm16le","sample_rate":16000,"channels":1,"frame_ms":20}`
	pcmDown  = `{"format":"pcm16le","sample_rate":24000,"channels":1}`
	opusUp   = `{"format":"opus","sample_rate":16000,"channels":1,"frame_ms":20,"bitrate":12000}`
	opusDown = `{"format":"opus","sample_rate":24000,"channels":1,"frame_ms":20}`
)

// choice is a gateway hello's audio fields choosing up and down (v1.1).
func choice(up, down string) string {
	return v1Audio + `,"protocol_minor":1,"audio":{"up":` + up + `,"down":` + down + `}`
}

func testOffer(enc *fakeEncoder, got *protocol.AudioParams) *AudioCodecs {
	return &AudioCodecs{
		Offer: protocol.AudioOffer{
			Up:   []protocol.AudioParams{{Format: protocol.FormatOpus, SampleRate: 16000, Channels: 1, FrameMS: 20, Bitrate: 16000, BitrateMin: 6000, BitrateMax: 64000}},
			Down: []protocol.AudioParams{{Format: protocol.FormatOpus, SampleRate: 24000, Channels: 1}},
		},
		NewMicEncoder: func(p protocol.AudioParams) (MicEncoder, error) { *got = p; return enc, nil },
	}
}

func startCodecClient(t *testing.T, g *fakeGateway, codecs *AudioCodecs, tts TTSSink) (*Client, *metrics.Registry) {
	t.Helper()
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	reg := metrics.NewRegistry()
	c := startTestClient(t, Config{URL: wsURL(srv), Token: "t", DeviceID: "robot-1",
		BackoffBase: 20 * time.Millisecond, BackoffCap: 100 * time.Millisecond, Codecs: codecs,
		Hello: protocol.RobotHello{AgentVersion: "test", BootID: "boot",
			AudioUp:   protocol.AudioParams{Format: "pcm16le", SampleRate: 16000, Channels: 1, FrameMS: 20},
			AudioDown: []protocol.AudioParams{{Format: "pcm16le", SampleRate: 24000, Channels: 1}}}},
		reg, testLogger(t), tts, nil)
	return c, reg
}

func micFrame(utt, seq uint32, flag protocol.Flag, first int16) *capture.Frame {
	s := make([]int16, 320)
	s[0] = first
	return &capture.Frame{Utterance: utt, Seq: seq, Flag: flag, TS: time.Duration(seq) * 20 * time.Millisecond, Samples: s}
}

// TestNegotiationUplink: the robot offers Opus; what goes on the wire
// follows the gateway's choice, and an old gateway that says nothing gets
// PCM.
func TestNegotiationUplink(t *testing.T) {
	for _, tc := range []struct {
		name    string
		choice  string
		opusUp  bool
		bitrate int
	}{
		{"gateway chooses opus", choice(opusUp, pcmDown), true, 12000},
		{"gateway chooses pcm", choice(pcmUp, pcmDown), false, 0},
		{"old gateway says nothing", v1Audio, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &fakeGateway{choice: tc.choice}
			enc := &fakeEncoder{frame: 320}
			var params protocol.AudioParams
			c, _ := startCodecClient(t, g, testOffer(enc, &params), nil)
			waitFor(t, "session", c.Up)
			if a := g.hello.Audio; a == nil || a.Up[0].Format != "opus" || a.Up[1].Format != "pcm16le" || a.Down[0].Format != "opus" || a.Down[1].Format != "pcm16le" {
				t.Fatalf("hello offers %+v, want opus then pcm16le each way", g.hello.Audio)
			}
			c.SendMic(micFrame(1, 0, protocol.FlagStart, 5))
			c.SendMic(micFrame(1, 1, protocol.FlagContinue, 6))
			c.SendMic(&capture.Frame{Utterance: 1, Seq: 2, Flag: protocol.FlagEnd})
			waitFor(t, "3 frames", func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.frames) == 3 })
			for i, f := range g.frames {
				h, p, err := protocol.ParseHeader(f)
				if tc.opusUp && i < 2 {
					// Odd-length packets: a PCM parser refuses them.
					if err == nil || len(f) != protocol.HeaderSize+3 || f[protocol.HeaderSize] != 0xAB || f[protocol.HeaderSize+1] != byte(5+i) {
						t.Fatalf("frame %d = % x, want a 3-byte packet", i, f)
					}
					h, _, _ = (protocol.SessionAudio{Up: protocol.AudioParams{Format: "opus"}}).ParseFrame(f)
				} else if err != nil || (i < 2 && len(p) != 640) {
					t.Fatalf("frame %d: %v (%d bytes)", i, err, len(p))
				}
				if wantFlag := []protocol.Flag{protocol.FlagStart, protocol.FlagContinue, protocol.FlagEnd}[i]; h.Seq != uint32(i) || h.Stream != 1 || h.Flag != wantFlag {
					t.Errorf("frame %d: seq %d stream %d flag %d, want %d 1 %d", i, h.Seq, h.Stream, h.Flag, i, wantFlag)
				}
			}
			if tc.opusUp && (params.Bitrate != tc.bitrate || params.FrameMS != 20) {
				t.Errorf("encoder made for %+v", params)
			}
		})
	}
}

// TestNegotiationRefusesWhatWasNotOffered: a gateway choosing Opus for a
// PCM-only robot gets a failed handshake (a bad hello: no session, no
// error message, reconnect with backoff).
func TestNegotiationRefusesWhatWasNotOffered(t *testing.T) {
	g := &fakeGateway{choice: choice(pcmUp, opusDown)}
	c, reg := startCodecClient(t, g, nil, &fakeTTS{})
	waitFor(t, "two refused handshakes", func() bool { return reg.Value("robot_agent_uplink_dial_errors_total") >= 2 })
	if c.Up() || reg.Value("robot_agent_uplink_connects_total") != 0 {
		t.Fatal("session established with an unoffered codec")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sessions < 2 || len(g.texts) != 0 {
		t.Errorf("%d handshakes, robot said %q; want reconnects and no message", g.sessions, g.texts)
	}
}

// fakeDecoder "decodes" a packet into 480 samples of its first byte,
// conceals with -1 and FEC with -2.
type fakeDecoder struct{}

func (fakeDecoder) Decode(pkt []byte, pcm []int16) (int, error) {
	if pkt[0] == 0xFF {
		return 0, errors.New("fake: bad packet")
	}
	for i := range pcm[:480] {
		pcm[i] = int16(pkt[0])
	}
	return 480, nil
}
func (fakeDecoder) DecodeFEC(pkt []byte, pcm []int16) (int, error) {
	for i := range pcm {
		pcm[i] = -2
	}
	return len(pcm), nil
}
func (fakeDecoder) Conceal(pcm []int16) (int, error) {
	for i := range pcm {
		pcm[i] = -1
	}
	return len(pcm), nil
}
func (fakeDecoder) LastSamples() int { return 480 }
func (fakeDecoder) MaxSamples() int  { return 2880 }

func samplesOf(b []byte) []int16 {
	out := make([]int16, len(b)/2)
	for i := range out {
		out[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return out
}

// TestDownlinkOpusThroughClient: TTS frames of an Opus session go through
// the decoding sink; a gap in seq is concealed (PLC, then FEC for the last
// lost packet); a bad packet is answered bad_frame.
func TestDownlinkOpusThroughClient(t *testing.T) {
	g := &fakeGateway{choice: choice(pcmUp, opusDown)}
	inner := &fakeTTS{}
	sink := NewDecodingSink(inner, func() (PacketDecoder, error) { return fakeDecoder{}, nil }, nil, nil)
	enc := &fakeEncoder{frame: 320}
	var p protocol.AudioParams
	c, _ := startCodecClient(t, g, testOffer(enc, &p), sink)
	waitFor(t, "session", c.Up)
	frame := func(seq uint32, b byte, flag protocol.Flag) []byte {
		return protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindTTSAudio, Flag: flag, Stream: 1, Seq: seq}, []byte{b})
	}
	g.send(t, frame(10, 7, 0))
	g.send(t, frame(13, 9, 0)) // 11 and 12 lost
	g.send(t, frame(14, 0xFF, 0))
	g.send(t, frame(15, 4, protocol.FlagTTSLast))
	waitFor(t, "end of response", func() bool { inner.mu.Lock(); defer inner.mu.Unlock(); return len(inner.ended) > 0 })
	got := samplesOf(inner.pcm[1])
	want := []int16{7, -1, -2, 9, 4}
	if len(got) != 5*480 {
		t.Fatalf("got %d samples, want %d", len(got), 5*480)
	}
	for i, w := range want {
		if got[i*480] != w || got[i*480+479] != w {
			t.Errorf("block %d = %d, want %d", i, got[i*480], w)
		}
	}
	waitFor(t, "bad_frame", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, s := range g.texts {
			if strings.Contains(s, `"code":"bad_frame"`) && strings.Contains(s, "seq 14") {
				return true
			}
		}
		return false
	})
}

// TestDecodingSinkConcealmentBounds: gaps across responses are not
// concealed; one gap is concealed by the codec for at most MaxConcealMS
// and filled with silence up to MaxGapMS; larger gaps are not loss.
func TestDecodingSinkConcealmentBounds(t *testing.T) {
	inner := &fakeTTS{}
	s := NewDecodingSink(inner, func() (PacketDecoder, error) { return fakeDecoder{}, nil }, nil, nil)
	if err := s.SetDownFormat(protocol.AudioParams{Format: "opus", SampleRate: 24000, Channels: 1}); err != nil {
		t.Fatal(err)
	}
	s.PushPacket(1, 1, []byte{1})
	s.PushPacket(2, 5, []byte{2})   // new response: no concealment
	s.PushPacket(2, 20, []byte{3})  // 14 lost: 6 x PLC, 8 x silence
	s.PushPacket(2, 200, []byte{4}) // 179 lost (3.6 s): not loss
	if n := len(inner.pcm[1]) / 2; n != 480 {
		t.Errorf("response 1: %d samples", n)
	}
	got := samplesOf(inner.pcm[2])
	var want []int16
	block := func(v int16, k int) {
		for i := 0; i < k*480; i++ {
			want = append(want, v)
		}
	}
	block(2, 1)
	block(-1, 6)
	block(0, 8)
	block(3, 1)
	block(4, 1)
	if len(got) != len(want) {
		t.Fatalf("response 2: %d samples, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("response 2 sample %d (block %d) = %d, want %d", i, i/480, got[i], want[i])
		}
	}
	// PCM sessions pass PushPCM straight through; packets are refused.
	s.SetDownFormat(protocol.AudioParams{Format: "pcm16le"})
	if err := s.PushPacket(3, 1, []byte{1}); !errors.Is(err, errBadPacket) {
		t.Errorf("packet in a PCM session: %v", err)
	}
}

// TestDecodingSinkNoAllocs: decoding and pushing into the real player
// does not allocate.
func TestDecodingSinkNoAllocs(t *testing.T) {
	p, err := playback.New(playback.Config{Slots: 1 << 12}, clock.NewFake(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := NewDecodingSink(p, func() (PacketDecoder, error) { return fakeDecoder{}, nil }, nil, nil)
	s.SetDownFormat(protocol.AudioParams{Format: "opus", SampleRate: 24000, Channels: 1})
	out := make([]int16, 480)
	seq := uint32(0)
	pkt := []byte{5}
	n := testing.AllocsPerRun(200, func() {
		seq += 2 // every other packet lost: PLC/FEC path too
		s.PushPacket(1, seq, pkt)
		p.Fill(out)
		p.Fill(out)
	})
	if n != 0 {
		t.Errorf("PushPacket allocates %v times", n)
	}
}

// TestMicEncodeNoAllocs: the write pump's encoding step does not allocate.
func TestMicEncodeNoAllocs(t *testing.T) {
	c, err := New(Config{URL: "ws://127.0.0.1:1/v1/robot", DeviceID: "r"}, clock.NewReal(), nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.micEnc = micCodec{enc: &fakeEncoder{frame: 320}, pcm: make([]int16, 320), out: make([]byte, 2000), errors: metrics.NewRegistry().Counter("x", "")}
	f := protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindMicAudio, Stream: 1}, make([]byte, 640))
	if n := testing.AllocsPerRun(200, func() { c.encodeMic(f) }); n != 0 {
		t.Errorf("encodeMic allocates %v times", n)
	}
}

// TestDecodingSinkInterrupt: interrupts and generations are the player's:
// packets of an interrupted response are still decoded (the decoder
// follows the gateway's encoder) and then refused as stale.
func TestDecodingSinkInterrupt(t *testing.T) {
	p, err := playback.New(playback.Config{Slots: 1 << 8}, clock.NewFake(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := metrics.NewRegistry()
	s := NewDecodingSink(p, func() (PacketDecoder, error) { return fakeDecoder{}, nil }, reg, nil)
	s.SetDownFormat(protocol.AudioParams{Format: "opus", SampleRate: 24000, Channels: 1})
	if err := s.PushPacket(1, 1, []byte{1}); err != nil {
		t.Fatal(err)
	}
	if got := s.Interrupt(1); got != 1 {
		t.Fatalf("Interrupt cut up to %d", got)
	}
	if err := s.PushPacket(1, 2, []byte{1}); !errors.Is(err, playback.ErrStale) {
		t.Errorf("packet of an interrupted response: %v, want playback.ErrStale", err)
	}
	if err := s.PushPacket(2, 3, []byte{1}); err != nil {
		t.Errorf("next response: %v", err)
	}
	if n := reg.Value("robot_agent_tts_packets_total"); n != 3 {
		t.Errorf("%d packets decoded, want 3 (the stale one too)", n)
	}
}

package opus

import (
	"errors"
	"testing"
)

func TestParsePacket(t *testing.T) {
	frame := func(n int) []byte { return make([]byte, n) }
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	tests := []struct {
		name    string
		pkt     []byte
		mode    Mode
		frames  int
		samples int // at 48 kHz
		bw      int
		err     bool
	}{
		{name: "empty", pkt: nil, err: true},
		{name: "silk nb 10ms code0", pkt: cat([]byte{0 << 3}, frame(20)), mode: ModeSILK, frames: 1, samples: 480, bw: 4000},
		{name: "silk wb 20ms code0", pkt: cat([]byte{9 << 3}, frame(40)), mode: ModeSILK, frames: 1, samples: 960, bw: 8000},
		{name: "silk wb 60ms", pkt: cat([]byte{11 << 3}, frame(40)), mode: ModeSILK, frames: 1, samples: 2880, bw: 8000},
		{name: "dtx toc only", pkt: []byte{9 << 3}, mode: ModeSILK, frames: 1, samples: 960, bw: 8000},
		{name: "hybrid fb 20ms", pkt: cat([]byte{15 << 3}, frame(60)), mode: ModeHybrid, frames: 1, samples: 960, bw: 20000},
		{name: "celt fb 2.5ms", pkt: cat([]byte{28 << 3}, frame(10)), mode: ModeCELT, frames: 1, samples: 120, bw: 20000},
		{name: "code0 too big", pkt: cat([]byte{9 << 3}, frame(1276)), err: true},
		{name: "code1 two equal", pkt: cat([]byte{9<<3 | 1}, frame(40)), mode: ModeSILK, frames: 2, samples: 1920, bw: 8000},
		{name: "code1 odd", pkt: cat([]byte{9<<3 | 1}, frame(41)), err: true},
		{name: "code2 ok", pkt: cat([]byte{9<<3 | 2, 10}, frame(25)), mode: ModeSILK, frames: 2, samples: 1920, bw: 8000},
		{name: "code2 two-byte length", pkt: cat([]byte{9<<3 | 2, 252, 1}, frame(300)), mode: ModeSILK, frames: 2, samples: 1920, bw: 8000},
		{name: "code2 length past end", pkt: cat([]byte{9<<3 | 2, 30}, frame(25)), err: true},
		{name: "code2 missing length byte", pkt: []byte{9<<3 | 2, 253}, err: true},
		{name: "code3 cbr 3x20ms", pkt: cat([]byte{9<<3 | 3, 3}, frame(30)), mode: ModeSILK, frames: 3, samples: 2880, bw: 8000},
		{name: "code3 cbr uneven", pkt: cat([]byte{9<<3 | 3, 3}, frame(31)), err: true},
		{name: "code3 zero frames", pkt: []byte{9<<3 | 3, 0}, err: true},
		{name: "code3 no count byte", pkt: []byte{9<<3 | 3}, err: true},
		{name: "code3 over 120ms", pkt: cat([]byte{11<<3 | 3, 3}, frame(30)), err: true},
		{name: "code3 6x20ms = 120ms", pkt: cat([]byte{9<<3 | 3, 6}, frame(60)), mode: ModeSILK, frames: 6, samples: 5760, bw: 8000},
		{name: "code3 vbr", pkt: cat([]byte{9<<3 | 3, 0x80 | 3, 5, 7}, frame(20)), mode: ModeSILK, frames: 3, samples: 2880, bw: 8000},
		{name: "code3 vbr lengths too long", pkt: cat([]byte{9<<3 | 3, 0x80 | 3, 50, 7}, frame(20)), err: true},
		{name: "code3 padded", pkt: cat([]byte{9<<3 | 3, 0x40 | 2, 4}, frame(10), frame(4)), mode: ModeSILK, frames: 2, samples: 1920, bw: 8000},
		{name: "code3 padding 255 chain", pkt: cat([]byte{9<<3 | 3, 0x40 | 1, 255, 1}, frame(10), frame(255)), mode: ModeSILK, frames: 1, samples: 960, bw: 8000},
		{name: "code3 padding too long", pkt: cat([]byte{9<<3 | 3, 0x40 | 1, 20}, frame(10)), err: true},
		{name: "code3 padding runs off", pkt: []byte{9<<3 | 3, 0x40 | 1, 255}, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePacket(tt.pkt)
			if tt.err {
				if !errors.Is(err, ErrPacket) {
					t.Fatalf("err = %v, want ErrPacket", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Mode != tt.mode || p.Frames != tt.frames || p.Samples48() != tt.samples || p.Bandwidth != tt.bw {
				t.Errorf("got %v %d frames %d samples %d Hz, want %v %d %d %d", p.Mode, p.Frames, p.Samples48(), p.Bandwidth, tt.mode, tt.frames, tt.samples, tt.bw)
			}
			if n, _ := PacketSamples(tt.pkt, 16000); n != tt.samples/3 {
				t.Errorf("PacketSamples at 16 kHz = %d, want %d", n, tt.samples/3)
			}
		})
	}
}

func TestParsePacketNoAllocs(t *testing.T) {
	pkt := append([]byte{9<<3 | 3, 0xC0 | 3, 2, 5, 7}, make([]byte, 22)...)
	if n := testing.AllocsPerRun(100, func() { ParsePacket(pkt) }); n != 0 {
		t.Errorf("ParsePacket allocates %v times", n)
	}
}

func TestEncoderConfigValidate(t *testing.T) {
	tests := []struct {
		cfg  EncoderConfig
		want string
	}{
		{EncoderConfig{}, ""},
		{EncoderConfig{SampleRate: 44100}, "sample rate 44100"},
		{EncoderConfig{FrameMS: 30}, "frame 30 ms"},
		{EncoderConfig{Bitrate: 1000}, "bitrate 1000"},
		{EncoderConfig{LossPercent: 101}, "loss percent 101"},
		{EncoderConfig{Complexity: 11}, "complexity 11"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if tt.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", tt.cfg, err)
			}
			continue
		}
		if !errors.Is(err, ErrConfig) || !contains(err.Error(), tt.want) {
			t.Errorf("%+v: err = %v, want ErrConfig naming %q", tt.cfg, err, tt.want)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// FuzzParsePacket: the parser never panics, and whatever it accepts is
// within the protocol's limits.
func FuzzParsePacket(f *testing.F) {
	for _, s := range [][]byte{{9 << 3}, {9<<3 | 1, 0, 0}, {9<<3 | 2, 1, 0, 0}, {9<<3 | 3, 0xC3, 1, 2, 3, 0, 0, 0, 0, 0, 0}, {0xff, 0xff}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePacket(b)
		if err != nil {
			if !errors.Is(err, ErrPacket) {
				t.Fatalf("error %v does not wrap ErrPacket", err)
			}
			return
		}
		if p.Frames < 1 || p.Frames > 48 || p.Samples48() > 5760 || p.Samples48() < 120 {
			t.Fatalf("accepted %x as %+v", b, p)
		}
	})
}

package opus

import "fmt"

// Mode is the coding mode of a packet's frames (RFC 6716 §3.1).
type Mode uint8

// Modes.
const (
	ModeSILK   Mode = iota // linear prediction, speech, up to wideband
	ModeHybrid             // SILK low band + CELT high band
	ModeCELT               // transform coding, music and low delay
)

func (m Mode) String() string {
	switch m {
	case ModeSILK:
		return "silk"
	case ModeHybrid:
		return "hybrid"
	case ModeCELT:
		return "celt"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// Packet describes a parsed Opus packet.
type Packet struct {
	Config    uint8 // TOC configuration number 0..31
	Mode      Mode
	Bandwidth int  // audio bandwidth in Hz: 4000, 6000, 8000, 12000 or 20000
	Stereo    bool // TOC stereo bit
	Frames    int  // frames in the packet, 0..48 (0: a DTX/lost marker packet)
	// FrameSamples48 is the duration of one frame at 48 kHz (120..2880).
	FrameSamples48 int
}

// Samples48 is the packet's duration in samples at 48 kHz.
func (p Packet) Samples48() int { return p.Frames * p.FrameSamples48 }

// SamplesAt is the packet's duration in samples at rate Hz.
func (p Packet) SamplesAt(rate int) int { return p.Samples48() * rate / 48000 }

const maxFrameBytes = 1275

// ParsePacket validates an Opus packet's framing (RFC 6716 §3.1–3.2: the
// TOC byte, the frame count and the frame lengths, padding, and the 120 ms
// limit, the checks libopus' opus_packet_parse makes) without decoding it.
// It never panics and does not allocate; errors wrap ErrPacket and say
// which rule failed.
func ParsePacket(b []byte) (Packet, error) {
	var p Packet
	if len(b) == 0 {
		return p, fmt.Errorf("%w: empty packet (no TOC byte)", ErrPacket)
	}
	toc := b[0]
	p.Config = toc >> 3
	p.Stereo = toc&0x04 != 0
	c := p.Config
	switch {
	case c < 12:
		p.Mode = ModeSILK
		p.FrameSamples48 = [4]int{480, 960, 1920, 2880}[c&3]
		p.Bandwidth = [3]int{4000, 6000, 8000}[c>>2]
	case c < 16:
		p.Mode = ModeHybrid
		p.FrameSamples48 = [2]int{480, 960}[c&1]
		p.Bandwidth = [2]int{12000, 20000}[(c-12)>>1]
	default:
		p.Mode = ModeCELT
		p.FrameSamples48 = [4]int{120, 240, 480, 960}[c&3]
		p.Bandwidth = [4]int{4000, 8000, 12000, 20000}[(c-16)>>2]
	}
	rest := b[1:]
	switch toc & 3 {
	case 0: // one frame
		if len(rest) > maxFrameBytes {
			return p, fmt.Errorf("%w: code 0 frame of %d bytes exceeds %d", ErrPacket, len(rest), maxFrameBytes)
		}
		p.Frames = 1
	case 1: // two frames of equal size
		if len(rest)%2 != 0 {
			return p, fmt.Errorf("%w: code 1 packet with %d payload bytes, not two equal frames", ErrPacket, len(rest))
		}
		if len(rest)/2 > maxFrameBytes {
			return p, fmt.Errorf("%w: code 1 frames of %d bytes exceed %d", ErrPacket, len(rest)/2, maxFrameBytes)
		}
		p.Frames = 2
	case 2: // two frames, first length coded
		n, used, err := frameLength(rest)
		if err != nil {
			return p, fmt.Errorf("%w: code 2 first frame length: %v", ErrPacket, err)
		}
		rest = rest[used:]
		if n > len(rest) {
			return p, fmt.Errorf("%w: code 2 first frame of %d bytes but %d remain", ErrPacket, n, len(rest))
		}
		if len(rest)-n > maxFrameBytes {
			return p, fmt.Errorf("%w: code 2 second frame of %d bytes exceeds %d", ErrPacket, len(rest)-n, maxFrameBytes)
		}
		p.Frames = 2
	case 3: // M frames, CBR or VBR, optional padding
		if len(rest) < 1 {
			return p, fmt.Errorf("%w: code 3 packet without a frame count byte", ErrPacket)
		}
		fc := rest[0]
		rest = rest[1:]
		vbr, padded, m := fc&0x80 != 0, fc&0x40 != 0, int(fc&0x3f)
		if m == 0 {
			return p, fmt.Errorf("%w: code 3 packet with 0 frames", ErrPacket)
		}
		if m*p.FrameSamples48 > 5760 {
			return p, fmt.Errorf("%w: code 3 packet of %d frames of %.1f ms exceeds %d ms", ErrPacket, m, float64(p.FrameSamples48)/48, MaxPacketMS)
		}
		if padded {
			pad := 0
			for {
				if len(rest) < 1 {
					return p, fmt.Errorf("%w: code 3 padding length runs past the packet", ErrPacket)
				}
				v := int(rest[0])
				rest = rest[1:]
				if v == 255 {
					pad += 254
					continue
				}
				pad += v
				break
			}
			if pad > len(rest) {
				return p, fmt.Errorf("%w: code 3 padding of %d bytes but %d remain", ErrPacket, pad, len(rest))
			}
			rest = rest[:len(rest)-pad]
		}
		if vbr {
			total := 0
			for i := 0; i < m-1; i++ {
				n, used, err := frameLength(rest)
				if err != nil {
					return p, fmt.Errorf("%w: code 3 frame %d length: %v", ErrPacket, i, err)
				}
				rest = rest[used:]
				total += n
			}
			if total > len(rest) {
				return p, fmt.Errorf("%w: code 3 frame lengths add up to %d bytes but %d remain", ErrPacket, total, len(rest))
			}
			if len(rest)-total > maxFrameBytes {
				return p, fmt.Errorf("%w: code 3 last frame of %d bytes exceeds %d", ErrPacket, len(rest)-total, maxFrameBytes)
			}
		} else {
			if len(rest)%m != 0 {
				return p, fmt.Errorf("%w: code 3 CBR packet: %d bytes do not split into %d frames", ErrPacket, len(rest), m)
			}
			if len(rest)/m > maxFrameBytes {
				return p, fmt.Errorf("%w: code 3 CBR frames of %d bytes exceed %d", ErrPacket, len(rest)/m, maxFrameBytes)
			}
		}
		p.Frames = m
	}
	if p.Samples48() > 5760 {
		return p, fmt.Errorf("%w: packet of %d ms exceeds %d ms", ErrPacket, p.Samples48()/48, MaxPacketMS)
	}
	return p, nil
}

// frameLength decodes a 1- or 2-byte frame length (RFC 6716 §3.2.1).
func frameLength(b []byte) (n, used int, err error) {
	if len(b) < 1 {
		return 0, 0, fmt.Errorf("missing")
	}
	if b[0] < 252 {
		n, used = int(b[0]), 1
	} else {
		if len(b) < 2 {
			return 0, 0, fmt.Errorf("second byte missing")
		}
		n, used = int(b[1])*4+int(b[0]), 2
	}
	if n > maxFrameBytes {
		return 0, 0, fmt.Errorf("%d bytes exceeds %d", n, maxFrameBytes)
	}
	return n, used, nil
}

// PacketSamples validates pkt (ParsePacket) and returns its duration in
// samples at rate Hz.
func PacketSamples(pkt []byte, rate int) (int, error) {
	p, err := ParsePacket(pkt)
	if err != nil {
		return 0, err
	}
	return p.SamplesAt(rate), nil
}

package wav

import (
	"encoding/binary"
	"math"

	"github.com/robot-agent/robot-agent/codec/pcm"
)

// encoding is a sample encoding the Reader converts to PCM16.
type encoding uint8

const (
	encPCM8    encoding = iota + 1 // unsigned 8-bit
	encPCM16                       // signed little-endian
	encPCM24                       // signed little-endian, 3 bytes
	encPCM32                       // signed little-endian
	encFloat32                     // IEEE 754, full scale ±1.0
	encFloat64                     // IEEE 754, full scale ±1.0
	encALaw                        // ITU-T G.711 A-law
	encMuLaw                       // ITU-T G.711 µ-law
)

const (
	tagFloat = 0x0003
	tagALaw  = 0x0006
	tagMuLaw = 0x0007
)

// encodingOf maps a format tag (the subformat for extensible files) and
// the container's bits per sample to an encoding. ext is "extensible " or
// "", for the message.
func encodingOf(tag uint16, bits int, ext string) (encoding, error) {
	bad := func() (encoding, error) {
		return 0, unsupported("%d-bit %s%s not supported", bits, ext, tagName(tag))
	}
	switch tag {
	case tagPCM:
		switch {
		case bits == 8:
			return encPCM8, nil
		case bits > 8 && bits <= 16: // e.g. 12-bit in a 16-bit container
			return encPCM16, nil
		case bits > 16 && bits <= 24:
			return encPCM24, nil
		case bits > 24 && bits <= 32:
			return encPCM32, nil
		}
		return bad()
	case tagFloat:
		switch bits {
		case 32:
			return encFloat32, nil
		case 64:
			return encFloat64, nil
		}
		return bad()
	case tagALaw, tagMuLaw:
		if bits != 8 {
			return bad()
		}
		if tag == tagALaw {
			return encALaw, nil
		}
		return encMuLaw, nil
	}
	return 0, unsupported("format tag %d (%s%s) not supported", tag, ext, tagName(tag))
}

// width returns the bytes one sample takes in the file.
func (e encoding) width() int {
	switch e {
	case encPCM16:
		return 2
	case encPCM24:
		return 3
	case encPCM32, encFloat32:
		return 4
	case encFloat64:
		return 8
	}
	return 1
}

// decode converts the whole samples in src to PCM16 in dst and returns how
// many it wrote (at most len(dst)).
func (e encoding) decode(dst []int16, src []byte) int {
	w := e.width()
	n := min(len(dst), len(src)/w)
	switch e {
	case encPCM16:
		return pcm.BytesToInt16(dst[:n], src[:2*n])
	case encPCM8:
		for i := range n {
			dst[i] = int16(int(src[i])-128) << 8
		}
	case encPCM24:
		for i := range n {
			b := src[3*i:]
			v := int32(uint32(b[0])<<8|uint32(b[1])<<16|uint32(b[2])<<24) >> 8
			dst[i] = clip16((int64(v) + 1<<7) >> 8)
		}
	case encPCM32:
		for i := range n {
			v := int32(binary.LittleEndian.Uint32(src[4*i:]))
			dst[i] = clip16((int64(v) + 1<<15) >> 16)
		}
	case encFloat32:
		for i := range n {
			dst[i] = floatTo16(float64(math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))))
		}
	case encFloat64:
		for i := range n {
			dst[i] = floatTo16(math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:])))
		}
	case encALaw:
		for i := range n {
			dst[i] = alaw(src[i])
		}
	case encMuLaw:
		for i := range n {
			dst[i] = mulaw(src[i])
		}
	}
	return n
}

// decodeFloat converts the whole samples in src to float32 in dst, full
// scale ±1.0 (integer formats divided by 2^(bits−1), float values kept as
// they are, beyond full scale or not), and returns how many it wrote.
func (e encoding) decodeFloat(dst []float32, src []byte) int {
	w := e.width()
	n := min(len(dst), len(src)/w)
	for i := range n {
		b := src[w*i:]
		var v float32
		switch e {
		case encPCM16:
			v = float32(int16(binary.LittleEndian.Uint16(b))) / (1 << 15)
		case encPCM8:
			v = float32(int(b[0])-128) / (1 << 7)
		case encPCM24:
			v = float32(int32(uint32(b[0])<<8|uint32(b[1])<<16|uint32(b[2])<<24)>>8) / (1 << 23)
		case encPCM32:
			v = float32(float64(int32(binary.LittleEndian.Uint32(b))) / (1 << 31))
		case encFloat32:
			v = math.Float32frombits(binary.LittleEndian.Uint32(b))
		case encFloat64:
			f := math.Float64frombits(binary.LittleEndian.Uint64(b))
			if !math.IsInf(f, 0) {
				f = max(-math.MaxFloat32, min(math.MaxFloat32, f))
			}
			v = float32(f)
		case encALaw:
			v = float32(alaw(b[0])) / (1 << 15)
		case encMuLaw:
			v = float32(mulaw(b[0])) / (1 << 15)
		}
		if v != v || math.IsInf(float64(v), 0) {
			v = 0
		}
		dst[i] = v
	}
	return n
}

func clip16(v int64) int16 { return int16(max(-32768, min(32767, v))) }

// floatTo16 scales full scale ±1.0 to ±32768, rounding; NaN and
// infinities become 0 and finite values beyond full scale are clipped.
func floatTo16(x float64) int16 {
	if x != x || math.IsInf(x, 0) {
		return 0
	}
	return int16(max(-32768, min(32767, math.Round(x*32768))))
}

// alaw decodes one G.711 A-law byte (ITU-T G.711, as in the Sun reference
// g711.c).
func alaw(a byte) int16 {
	a ^= 0x55
	t := int16(a&0x0F) << 4
	switch seg := (a & 0x70) >> 4; seg {
	case 0:
		t += 8
	case 1:
		t += 0x108
	default:
		t = (t + 0x108) << (seg - 1)
	}
	if a&0x80 != 0 {
		return t
	}
	return -t
}

// mulaw decodes one G.711 µ-law byte.
func mulaw(u byte) int16 {
	u = ^u
	t := (int16(u&0x0F) << 3) + 0x84
	t <<= (u & 0x70) >> 4
	if u&0x80 != 0 {
		return 0x84 - t
	}
	return t - 0x84
}

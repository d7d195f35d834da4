package h264

import (
	"errors"
	"fmt"
	"iter"
)

// NAL unit types (ITU-T H.264 table 7-1) the agent cares about.
const (
	NALSlice = 1 // coded slice of a non-IDR picture
	NALIDR   = 5 // coded slice of an IDR picture
	NALSEI   = 6
	NALSPS   = 7
	NALPPS   = 8
	NALAUD   = 9
)

// ErrMalformed wraps errors about malformed bitstreams.
var ErrMalformed = errors.New("h264: malformed bitstream")

// NALUnits iterates over the NAL units of an Annex-B byte stream (each
// without its start code and trailing zero bytes). Bytes before the first
// start code are ignored. It never allocates.
func NALUnits(b []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		i := nextStart(b, 0)
		for i >= 0 {
			start := i
			j := nextStart(b, start)
			end := len(b)
			if j >= 0 {
				end = j - 3 // the 00 00 01 that precedes j
			}
			for end > start && b[end-1] == 0 {
				end--
			}
			if end > start && !yield(b[start:end]) {
				return
			}
			i = j
		}
	}
}

// nextStart returns the index just after the next 00 00 01 at or after
// from, or -1.
func nextStart(b []byte, from int) int {
	for i := from; i+2 < len(b); i++ {
		if b[i+2] > 1 {
			i += 2
			continue
		}
		if b[i] == 0 && b[i+1] == 0 && b[i+2] == 1 {
			return i + 3
		}
	}
	return -1
}

// NALType returns the nal_unit_type of a NAL unit (0 for an empty one).
func NALType(nal []byte) int {
	if len(nal) == 0 {
		return 0
	}
	return int(nal[0] & 0x1f)
}

// Info summarises an access unit.
type Info struct {
	NALs   int  // NAL units
	Slices int  // coded slices (IDR or not)
	IDR    bool // has an IDR slice: a key frame
	SPS    bool
	PPS    bool
}

// Key reports a self-contained key frame a decoder can start at: an IDR
// picture preceded by its parameter sets.
func (i Info) Key() bool { return i.IDR && i.SPS && i.PPS }

// Inspect reports what the Annex-B access unit au contains.
func Inspect(au []byte) Info {
	var in Info
	for nal := range NALUnits(au) {
		in.NALs++
		switch NALType(nal) {
		case NALSlice:
			in.Slices++
		case NALIDR:
			in.Slices++
			in.IDR = true
		case NALSPS:
			in.SPS = true
		case NALPPS:
			in.PPS = true
		}
	}
	return in
}

// SPS is what the agent reads from a sequence parameter set.
type SPS struct {
	ProfileIDC, LevelIDC int
	Width, Height        int // display size after cropping
}

// FindSPS returns the parameters of the first SPS in the access unit au.
func FindSPS(au []byte) (SPS, error) {
	for nal := range NALUnits(au) {
		if NALType(nal) == NALSPS {
			return ParseSPS(nal)
		}
	}
	return SPS{}, fmt.Errorf("%w: no SPS in access unit", ErrMalformed)
}

// ParseSPS parses a sequence parameter set NAL unit (with its one-byte NAL
// header) far enough to return the profile, level and picture size.
func ParseSPS(nal []byte) (SPS, error) {
	var s SPS
	if NALType(nal) != NALSPS {
		return s, fmt.Errorf("%w: NAL type %d is not an SPS", ErrMalformed, NALType(nal))
	}
	r := bitReader{b: unescape(nal[1:])}
	s.ProfileIDC = int(r.bits(8))
	r.bits(8) // constraint flags, reserved
	s.LevelIDC = int(r.bits(8))
	r.ue() // seq_parameter_set_id
	chroma := uint32(1)
	switch s.ProfileIDC {
	case 100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135:
		chroma = r.ue()
		if chroma > 3 {
			return s, fmt.Errorf("%w: SPS chroma_format_idc %d", ErrMalformed, chroma)
		}
		if chroma == 3 {
			r.bits(1) // separate_colour_plane_flag
		}
		r.ue()              // bit_depth_luma_minus8
		r.ue()              // bit_depth_chroma_minus8
		r.bits(1)           // qpprime_y_zero_transform_bypass_flag
		if r.bits(1) == 1 { // seq_scaling_matrix_present_flag
			n := 8
			if chroma == 3 {
				n = 12
			}
			for i := 0; i < n; i++ {
				if r.bits(1) == 1 {
					size := 16
					if i >= 6 {
						size = 64
					}
					last, next := int32(8), int32(8)
					for j := 0; j < size && !r.err; j++ {
						if next != 0 {
							next = (last + r.se() + 256) % 256
						}
						if next != 0 {
							last = next
						}
					}
				}
			}
		}
	}
	r.ue() // log2_max_frame_num_minus4
	switch poc := r.ue(); poc {
	case 0:
		r.ue() // log2_max_pic_order_cnt_lsb_minus4
	case 1:
		r.bits(1)
		r.se()
		r.se()
		n := r.ue()
		if n > 255 {
			return s, fmt.Errorf("%w: SPS num_ref_frames_in_pic_order_cnt_cycle %d", ErrMalformed, n)
		}
		for i := uint32(0); i < n && !r.err; i++ {
			r.se()
		}
	case 2:
	default:
		return s, fmt.Errorf("%w: SPS pic_order_cnt_type %d", ErrMalformed, poc)
	}
	r.ue()    // max_num_ref_frames
	r.bits(1) // gaps_in_frame_num_value_allowed_flag
	wMbs := r.ue() + 1
	hMapUnits := r.ue() + 1
	frameMbsOnly := r.bits(1)
	if frameMbsOnly == 0 {
		r.bits(1) // mb_adaptive_frame_field_flag
	}
	r.bits(1) // direct_8x8_inference_flag
	var cl, cr, ct, cb uint32
	if r.bits(1) == 1 { // frame_cropping_flag
		cl, cr, ct, cb = r.ue(), r.ue(), r.ue(), r.ue()
	}
	if r.err {
		return s, fmt.Errorf("%w: SPS truncated", ErrMalformed)
	}
	if wMbs > 1024 || hMapUnits > 1024 {
		return s, fmt.Errorf("%w: SPS picture of %dx%d macroblocks", ErrMalformed, wMbs, hMapUnits)
	}
	cropX, cropY := uint32(1), 2-frameMbsOnly
	if chroma == 1 || chroma == 2 {
		cropX = 2
	}
	if chroma == 1 {
		cropY *= 2
	}
	w := int64(wMbs)*16 - int64(cropX)*(int64(cl)+int64(cr))
	h := int64(hMapUnits)*16*int64(2-frameMbsOnly) - int64(cropY)*(int64(ct)+int64(cb))
	if w <= 0 || h <= 0 {
		return s, fmt.Errorf("%w: SPS cropping leaves a %dx%d picture", ErrMalformed, w, h)
	}
	s.Width, s.Height = int(w), int(h)
	return s, nil
}

// unescape removes emulation prevention bytes (00 00 03 → 00 00).
func unescape(b []byte) []byte {
	out := make([]byte, 0, len(b))
	zeros := 0
	for _, c := range b {
		if zeros >= 2 && c == 3 {
			zeros = 0
			continue
		}
		if c == 0 {
			zeros++
		} else {
			zeros = 0
		}
		out = append(out, c)
	}
	return out
}

// bitReader reads big-endian bits; reading past the end sets err and
// returns zeros.
type bitReader struct {
	b   []byte
	pos int // in bits
	err bool
}

func (r *bitReader) bits(n int) uint32 {
	var v uint32
	for i := 0; i < n; i++ {
		if r.pos >= 8*len(r.b) {
			r.err = true
			return 0
		}
		v = v<<1 | uint32(r.b[r.pos/8]>>(7-r.pos%8))&1
		r.pos++
	}
	return v
}

// ue reads an unsigned Exp-Golomb code (values up to 2^31-2).
func (r *bitReader) ue() uint32 {
	zeros := 0
	for r.bits(1) == 0 {
		if r.err || zeros >= 31 {
			r.err = true
			return 0
		}
		zeros++
	}
	return (1<<zeros - 1) + r.bits(zeros)
}

// se reads a signed Exp-Golomb code.
func (r *bitReader) se() int32 {
	k := r.ue()
	if k%2 == 1 {
		return int32((k + 1) / 2)
	}
	return -int32(k / 2)
}

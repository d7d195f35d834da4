package camera

import (
	"fmt"
	"image"
	"image/color"
)

// EnsureI420 returns img if it is a 4:2:0 picture of w×h with origin
// (0, 0), or a new one.
func EnsureI420(img *image.YCbCr, w, h int) *image.YCbCr {
	if img != nil && img.SubsampleRatio == image.YCbCrSubsampleRatio420 && img.Rect == image.Rect(0, 0, w, h) {
		return img
	}
	return image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
}

// ToI420 converts src to 4:2:0 into dst (reallocated by EnsureI420 if
// needed) and returns it. YCbCr 4:2:0, 4:2:2 and 4:4:4 and Gray are
// converted plane by plane without allocating; other images go through
// color conversion per pixel (slow). Odd sizes lose the last column/row.
func ToI420(dst *image.YCbCr, src image.Image) (*image.YCbCr, error) {
	b := src.Bounds()
	w, h := b.Dx()&^1, b.Dy()&^1
	if w <= 0 || h <= 0 {
		return dst, fmt.Errorf("camera: cannot convert a %dx%d picture", b.Dx(), b.Dy())
	}
	dst = EnsureI420(dst, w, h)
	switch s := src.(type) {
	case *image.YCbCr:
		for y := 0; y < h; y++ {
			copy(dst.Y[y*dst.YStride:y*dst.YStride+w], s.Y[s.YOffset(b.Min.X, b.Min.Y+y):])
		}
		cw, ch := w/2, h/2
		switch s.SubsampleRatio {
		case image.YCbCrSubsampleRatio420:
			for y := 0; y < ch; y++ {
				o := s.COffset(b.Min.X, b.Min.Y+2*y)
				copy(dst.Cb[y*dst.CStride:y*dst.CStride+cw], s.Cb[o:])
				copy(dst.Cr[y*dst.CStride:y*dst.CStride+cw], s.Cr[o:])
			}
		case image.YCbCrSubsampleRatio422:
			for y := 0; y < ch; y++ {
				o0, o1 := s.COffset(b.Min.X, b.Min.Y+2*y), s.COffset(b.Min.X, b.Min.Y+2*y+1)
				cb, cr := dst.Cb[y*dst.CStride:], dst.Cr[y*dst.CStride:]
				for x := 0; x < cw; x++ {
					cb[x] = uint8((uint16(s.Cb[o0+x]) + uint16(s.Cb[o1+x]) + 1) / 2)
					cr[x] = uint8((uint16(s.Cr[o0+x]) + uint16(s.Cr[o1+x]) + 1) / 2)
				}
			}
		case image.YCbCrSubsampleRatio444:
			for y := 0; y < ch; y++ {
				o0, o1 := s.COffset(b.Min.X, b.Min.Y+2*y), s.COffset(b.Min.X, b.Min.Y+2*y+1)
				cb, cr := dst.Cb[y*dst.CStride:], dst.Cr[y*dst.CStride:]
				for x := 0; x < cw; x++ {
					i, j := o0+2*x, o1+2*x
					cb[x] = uint8((uint16(s.Cb[i]) + uint16(s.Cb[i+1]) + uint16(s.Cb[j]) + uint16(s.Cb[j+1]) + 2) / 4)
					cr[x] = uint8((uint16(s.Cr[i]) + uint16(s.Cr[i+1]) + uint16(s.Cr[j]) + uint16(s.Cr[j+1]) + 2) / 4)
				}
			}
		default:
			for y := 0; y < ch; y++ {
				cb, cr := dst.Cb[y*dst.CStride:], dst.Cr[y*dst.CStride:]
				for x := 0; x < cw; x++ {
					o := s.COffset(b.Min.X+2*x, b.Min.Y+2*y)
					cb[x], cr[x] = s.Cb[o], s.Cr[o]
				}
			}
		}
	case *image.Gray:
		for y := 0; y < h; y++ {
			copy(dst.Y[y*dst.YStride:y*dst.YStride+w], s.Pix[s.PixOffset(b.Min.X, b.Min.Y+y):])
		}
		for i := range dst.Cb {
			dst.Cb[i], dst.Cr[i] = 128, 128
		}
	default:
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				r, g, bb, _ := src.At(b.Min.X+x, b.Min.Y+y).RGBA()
				yy, cb, cr := color.RGBToYCbCr(uint8(r>>8), uint8(g>>8), uint8(bb>>8))
				dst.Y[y*dst.YStride+x] = yy
				if x%2 == 0 && y%2 == 0 {
					dst.Cb[y/2*dst.CStride+x/2], dst.Cr[y/2*dst.CStride+x/2] = cb, cr
				}
			}
		}
	}
	return dst, nil
}

// Scale resizes src (4:2:0) into dst (4:2:0, its own size) by averaging
// the source pixels each destination pixel covers (box filter), which
// suits the large reductions of an image stream. It does not allocate.
func Scale(dst, src *image.YCbCr) {
	scalePlane(dst.Y, dst.YStride, dst.Rect.Dx(), dst.Rect.Dy(), src.Y, src.YStride, src.Rect.Dx(), src.Rect.Dy())
	cw, ch := (dst.Rect.Dx()+1)/2, (dst.Rect.Dy()+1)/2
	sw, sh := (src.Rect.Dx()+1)/2, (src.Rect.Dy()+1)/2
	scalePlane(dst.Cb, dst.CStride, cw, ch, src.Cb, src.CStride, sw, sh)
	scalePlane(dst.Cr, dst.CStride, cw, ch, src.Cr, src.CStride, sw, sh)
}

func scalePlane(d []byte, ds, dw, dh int, s []byte, ss, sw, sh int) {
	if dw == sw && dh == sh {
		for y := 0; y < dh; y++ {
			copy(d[y*ds:y*ds+dw], s[y*ss:])
		}
		return
	}
	for y := 0; y < dh; y++ {
		y0, y1 := y*sh/dh, max((y+1)*sh/dh, y*sh/dh+1)
		for x := 0; x < dw; x++ {
			x0, x1 := x*sw/dw, max((x+1)*sw/dw, x*sw/dw+1)
			sum, n := 0, 0
			for yy := y0; yy < y1; yy++ {
				row := s[yy*ss:]
				for xx := x0; xx < x1; xx++ {
					sum += int(row[xx])
				}
				n += x1 - x0
			}
			d[y*ds+x] = uint8((sum + n/2) / n)
		}
	}
}

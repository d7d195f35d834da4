//go:build x264 && cgo

package h264

/*
#cgo pkg-config: x264
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <x264.h>

typedef struct {
	x264_t *h;
	x264_param_t param;
	x264_picture_t pic;
	uint8_t *out; // last access unit (x264's memory)
	int key;      // last access unit is a key frame
} ra_x264;

// ra_x264_open returns 0 or a negative step number that failed.
static int ra_x264_open(ra_x264 *e, int w, int h, int fps_num, int fps_den,
		int kbps, int vbv_kbit, int keyint, const char *preset,
		const char *profile, int threads) {
	x264_param_t *p = &e->param;
	if (x264_param_default_preset(p, preset, "zerolatency") < 0) return -1;
	p->i_log_level = X264_LOG_ERROR;
	p->i_csp = X264_CSP_I420;
	p->i_width = w;
	p->i_height = h;
	p->i_fps_num = fps_num;
	p->i_fps_den = fps_den;
	// Constant frame rate for rate control: variable-frame-rate input
	// would make x264 hold each picture until the next one arrives (one
	// frame of latency). Skipped frames only lower the bitrate.
	p->b_vfr_input = 0;
	p->i_keyint_max = keyint;
	p->i_keyint_min = keyint;
	p->i_scenecut_threshold = 0; // key frames only on schedule or request
	p->b_intra_refresh = 0;
	p->i_bframe = 0;
	p->rc.i_lookahead = 0;
	p->rc.i_rc_method = X264_RC_ABR;
	p->rc.i_bitrate = kbps;
	p->rc.i_vbv_max_bitrate = kbps;
	p->rc.i_vbv_buffer_size = vbv_kbit;
	p->b_repeat_headers = 1; // SPS/PPS before every IDR
	p->b_annexb = 1;
	p->b_aud = 0;
	if (threads > 0) p->i_threads = threads;
	// x264 signals the lowest profile the stream fits, so turn on what the
	// requested profile adds: CABAC (main), the 8x8 transform (high).
	if (strcmp(profile, "baseline") != 0) p->b_cabac = 1;
	if (strcmp(profile, "high") == 0) p->analyse.b_transform_8x8 = 1;
	if (x264_param_apply_profile(p, profile) < 0) return -2;
	x264_picture_init(&e->pic);
	e->pic.img.i_csp = X264_CSP_I420;
	e->pic.img.i_plane = 3;
	e->h = x264_encoder_open(p);
	if (!e->h) return -3;
	return 0;
}

// ra_x264_encode encodes one picture; it returns the access unit size
// (payloads of all NAL units are contiguous) or a negative error.
static int ra_x264_encode(ra_x264 *e, uint8_t *y, int ys, uint8_t *u,
		uint8_t *v, int cs, int64_t pts, int force_idr) {
	x264_nal_t *nal = NULL;
	int n = 0;
	x264_picture_t pic_out;
	e->pic.img.plane[0] = y;
	e->pic.img.plane[1] = u;
	e->pic.img.plane[2] = v;
	e->pic.img.i_stride[0] = ys;
	e->pic.img.i_stride[1] = cs;
	e->pic.img.i_stride[2] = cs;
	e->pic.i_pts = pts;
	e->pic.i_type = force_idr ? X264_TYPE_IDR : X264_TYPE_AUTO;
	int size = x264_encoder_encode(e->h, &nal, &n, &e->pic, &pic_out);
	// The planes are the caller's (Go) memory: keep no pointer to them.
	e->pic.img.plane[0] = e->pic.img.plane[1] = e->pic.img.plane[2] = NULL;
	if (size <= 0 || n <= 0) return size < 0 ? size : -100; // -100: delayed (must not happen)
	e->out = nal[0].p_payload;
	e->key = pic_out.b_keyframe;
	return size;
}

static void ra_x264_close(ra_x264 *e) {
	if (e->h) x264_encoder_close(e->h);
	e->h = NULL;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"image"
	"math"
	"time"
	"unsafe"
)

// Backend names the H264 encoder built into this binary.
const Backend = "x264"

type x264Encoder struct {
	cfg    Config
	c      *C.ra_x264 // C memory: holds pointers x264 keeps
	buf    []byte
	lastTS int64
	n      int
}

// New returns a libx264 encoder configured by cfg (defaults applied).
func New(cfg Config) (Encoder, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	num, den := fpsRational(cfg.FPS)
	preset := C.CString(cfg.Preset)
	defer C.free(unsafe.Pointer(preset))
	profile := C.CString(string(cfg.Profile))
	defer C.free(unsafe.Pointer(profile))
	c := (*C.ra_x264)(C.calloc(1, C.size_t(unsafe.Sizeof(C.ra_x264{}))))
	if c == nil {
		return nil, errors.New("h264: x264: out of memory")
	}
	vbv := cfg.BitrateKbps * cfg.VBVMillis / 1000
	if vbv < 1 {
		vbv = 1
	}
	if rc := C.ra_x264_open(c, C.int(cfg.Width), C.int(cfg.Height), C.int(num), C.int(den),
		C.int(cfg.BitrateKbps), C.int(vbv), C.int(cfg.GOP), preset, profile, C.int(cfg.Threads)); rc != 0 {
		C.free(unsafe.Pointer(c))
		step := map[C.int]string{-1: "preset " + cfg.Preset, -2: "profile " + string(cfg.Profile), -3: "encoder open"}[rc]
		return nil, fmt.Errorf("h264: x264 refused the configuration (%s) for %dx%d", step, cfg.Width, cfg.Height)
	}
	return &x264Encoder{cfg: cfg, c: c, lastTS: math.MinInt64, buf: make([]byte, 0, cfg.Width*cfg.Height/2)}, nil
}

// fpsRational turns a frame rate into num/den (29.97 → 30000/1001).
func fpsRational(fps float64) (int, int) {
	if math.Abs(fps-math.Round(fps)) < 1e-6 {
		return int(math.Round(fps)), 1
	}
	return int(math.Round(fps * 1001)), 1001
}

// Encode implements Encoder.
func (e *x264Encoder) Encode(pic *image.YCbCr, ts time.Duration, forceKey bool) (AccessUnit, error) {
	if e.c == nil {
		return AccessUnit{}, errors.New("h264: encoder closed")
	}
	if err := checkPicture(pic, e.cfg.Width, e.cfg.Height); err != nil {
		return AccessUnit{}, err
	}
	pts := ts.Microseconds()
	if pts <= e.lastTS {
		pts = e.lastTS + 1 // x264 needs strictly increasing pts
	}
	e.lastTS = pts
	force := C.int(0)
	if forceKey || e.n == 0 {
		force = 1
	}
	// The planes are Go memory without pointers; x264 copies the picture
	// before ra_x264_encode returns (no lookahead threads).
	size := C.ra_x264_encode(e.c,
		(*C.uint8_t)(unsafe.Pointer(&pic.Y[0])), C.int(pic.YStride),
		(*C.uint8_t)(unsafe.Pointer(&pic.Cb[0])), (*C.uint8_t)(unsafe.Pointer(&pic.Cr[0])), C.int(pic.CStride),
		C.int64_t(pts), force)
	if size < 0 {
		return AccessUnit{}, fmt.Errorf("h264: x264 failed to encode frame %d (code %d)", e.n, int(size))
	}
	e.n++
	e.buf = append(e.buf[:0], unsafe.Slice((*byte)(unsafe.Pointer(e.c.out)), int(size))...)
	return AccessUnit{Data: e.buf, Key: e.c.key != 0}, nil
}

// Close implements Encoder.
func (e *x264Encoder) Close() error {
	if e.c != nil {
		C.ra_x264_close(e.c)
		C.free(unsafe.Pointer(e.c))
		e.c = nil
	}
	return nil
}

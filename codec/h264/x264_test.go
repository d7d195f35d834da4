//go:build x264 && cgo

package h264_test

import (
	"image"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/codec/h264"
	"github.com/robot-agent/robot-agent/video/videotest"
)

func newEncoder(t testing.TB, cfg h264.Config) h264.Encoder {
	t.Helper()
	enc, err := h264.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { enc.Close() })
	return enc
}

// TestX264KeyFrames: the first frame, every GOP-th frame and every forced
// frame are IDRs with SPS and PPS; nothing else is.
func TestX264KeyFrames(t *testing.T) {
	const w, h, n, gop = 320, 240, 40, 15
	enc := newEncoder(t, h264.Config{Width: w, Height: h, FPS: 15, BitrateKbps: 300, GOP: gop})
	force := map[int]bool{7: true, 8: true, 33: true}
	var file []byte
	for i := 0; i < n; i++ {
		au, err := enc.Encode(videotest.Picture(w, h, i), time.Duration(i)*time.Second/15, force[i])
		if err != nil {
			t.Fatal(err)
		}
		in := h264.Inspect(au.Data)
		// Key frames: 0, 7, 8 (forced), 23 (GOP counted from 8), 33 (forced).
		want := i == 0 || force[i] || i == 8+gop
		if au.Key != want || in.Key() != want || in.IDR != want {
			t.Fatalf("frame %d: Key=%v Inspect=%+v, want key=%v", i, au.Key, in, want)
		}
		if in.Slices == 0 {
			t.Fatalf("frame %d has no slice: %+v", i, in)
		}
		if !want && (in.SPS || in.PPS) {
			t.Fatalf("frame %d: parameter sets outside a key frame: %+v", i, in)
		}
		if want {
			sps, err := h264.FindSPS(au.Data)
			if err != nil || sps.Width != w || sps.Height != h || sps.ProfileIDC != 66 {
				t.Fatalf("frame %d: SPS %+v, %v; want %dx%d baseline", i, sps, err, w, h)
			}
		}
		file = append(file, au.Data...)
	}
	videotest.RequireFFmpeg(t)
	path := filepath.Join(t.TempDir(), "out.h264")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	if e := videotest.DecodeErrors(t, path); e != "" {
		t.Fatalf("ffmpeg decode errors: %s", e)
	}
	frames := videotest.ProbeH264(t, path)
	if len(frames) != n {
		t.Fatalf("ffprobe found %d frames, want %d", len(frames), n)
	}
	for i, f := range frames {
		if f.PictType == "B" {
			t.Fatalf("frame %d is a B-frame", i)
		}
		if f.Width != w || f.Height != h {
			t.Fatalf("frame %d is %dx%d", i, f.Width, f.Height)
		}
	}
	codes := videotest.DecodeBarCodes(t, path, w, h)
	for i, c := range codes {
		if c != i {
			t.Fatalf("decoded frame %d shows bar code %d", i, c)
		}
	}
}

// TestX264Profiles: the profile setting reaches the SPS.
func TestX264Profiles(t *testing.T) {
	for _, tt := range []struct {
		p   h264.Profile
		idc int
	}{{h264.ProfileBaseline, 66}, {h264.ProfileMain, 77}, {h264.ProfileHigh, 100}} {
		enc := newEncoder(t, h264.Config{Width: 160, Height: 120, FPS: 10, BitrateKbps: 100, Profile: tt.p})
		au, err := enc.Encode(videotest.Picture(160, 120, 0), 0, false)
		if err != nil {
			t.Fatal(err)
		}
		sps, err := h264.FindSPS(au.Data)
		if err != nil || sps.ProfileIDC != tt.idc {
			t.Errorf("profile %s: SPS %+v, %v; want profile_idc %d", tt.p, sps, err, tt.idc)
		}
	}
}

// TestX264Bitrate: over a few seconds of moving pictures the stream stays
// near the configured bitrate and no frame exceeds the VBV bound.
func TestX264Bitrate(t *testing.T) {
	const w, h, fps, kbps, vbvMS = 320, 240, 15, 200, 500
	enc := newEncoder(t, h264.Config{Width: w, Height: h, FPS: fps, BitrateKbps: kbps, VBVMillis: vbvMS})
	total, maxFrame := 0, 0
	const n = 4 * fps
	for i := 0; i < n; i++ {
		au, err := enc.Encode(videotest.Picture(w, h, i*7), time.Duration(i)*time.Second/fps, false)
		if err != nil {
			t.Fatal(err)
		}
		total += len(au.Data)
		maxFrame = max(maxFrame, len(au.Data))
	}
	got := total * 8 / 1000 / (n / fps)
	if got > kbps*3/2 {
		t.Errorf("stream is %d kbit/s, configured %d", got, kbps)
	}
	if limit := kbps * 1000 / 8 * vbvMS / 1000; maxFrame > limit*11/10 {
		t.Errorf("largest frame %d bytes exceeds the VBV bound of %d", maxFrame, limit)
	}
}

func TestX264RejectsWrongPicture(t *testing.T) {
	enc := newEncoder(t, h264.Config{Width: 160, Height: 120, FPS: 10, BitrateKbps: 100})
	if _, err := enc.Encode(videotest.Picture(320, 240, 0), 0, false); err == nil {
		t.Fatal("encoded a 320x240 picture with a 160x120 encoder")
	}
	if _, err := enc.Encode(nil, 0, false); err == nil {
		t.Fatal("encoded a nil picture")
	}
}

func BenchmarkX264Encode640x480(b *testing.B) {
	for _, preset := range []string{"ultrafast", "superfast"} {
		b.Run(preset, func(b *testing.B) {
			const w, h, fps = 640, 480, 15
			enc := newEncoder(b, h264.Config{Width: w, Height: h, FPS: fps, BitrateKbps: 800, Preset: preset})
			pics := make([]*image.YCbCr, 16)
			for i := range pics {
				pics[i] = videotest.Picture(w, h, i*3)
			}
			bytes := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				au, err := enc.Encode(pics[i%len(pics)], time.Duration(i)*time.Second/fps, false)
				if err != nil {
					b.Fatal(err)
				}
				bytes += len(au.Data)
			}
			// Bytes per second of video at fps, whatever b.N was.
			b.ReportMetric(float64(bytes)/float64(b.N)*fps, "B/s@15fps")
		})
	}
}

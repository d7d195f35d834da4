// Package videotest holds test helpers for the video path: checking
// recorded H264 with ffprobe/ffmpeg, and test pictures.
//
// Tests that need ffprobe call RequireFFmpeg: it skips the test when the
// tools are missing, unless ROBOT_AGENT_REQUIRE_FFMPEG=1 is set (make test
// sets it), in which case the test fails.
//
// # Concurrency
//
// Functions are safe for concurrent use; each runs its own processes.
package videotest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/hw/camera"
)

// RequireFFmpeg skips (or, with ROBOT_AGENT_REQUIRE_FFMPEG=1, fails) t when
// ffprobe or ffmpeg is not on PATH.
func RequireFFmpeg(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"ffprobe", "ffmpeg"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("ROBOT_AGENT_REQUIRE_FFMPEG") == "1" {
				t.Fatalf("%s not found and ROBOT_AGENT_REQUIRE_FFMPEG=1: install ffmpeg (scripts/deps.sh)", tool)
			}
			t.Skipf("%s not found; install ffmpeg to run this test", tool)
		}
	}
}

// Frame is one decoded frame as ffprobe reports it.
type Frame struct {
	Key           bool
	PictType      string
	Width, Height int
}

// ProbeH264 decodes the raw Annex-B H264 file at path with ffprobe and
// returns its frames in decode order (which is display order: no
// B-frames).
func ProbeH264(t testing.TB, path string) []Frame {
	t.Helper()
	out := run(t, "ffprobe", "-v", "error", "-f", "h264", "-select_streams", "v:0",
		"-show_frames", "-show_entries", "frame=key_frame,pict_type,width,height", "-of", "json", path)
	var doc struct {
		Frames []struct {
			KeyFrame int    `json:"key_frame"`
			PictType string `json:"pict_type"`
			Width    int    `json:"width"`
			Height   int    `json:"height"`
		} `json:"frames"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("ffprobe output: %v", err)
	}
	frames := make([]Frame, len(doc.Frames))
	for i, f := range doc.Frames {
		frames[i] = Frame{Key: f.KeyFrame == 1, PictType: f.PictType, Width: f.Width, Height: f.Height}
	}
	return frames
}

// DecodeErrors fully decodes the H264 file at path with ffmpeg and returns
// everything it reported at level error or worse (empty: a clean stream).
func DecodeErrors(t testing.TB, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ffmpeg", "-nostdin", "-v", "error", "-f", "h264", "-i", path, "-f", "null", "-")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Sprintf("ffmpeg: %v: %s", err, stderr.String())
	}
	return strings.TrimSpace(stderr.String())
}

func run(t testing.TB, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		t.Fatalf("%s reported errors: %s", name, s)
	}
	return out
}

// Picture returns frame n of the camera test pattern (see
// camera.DrawTestPattern) as a new 4:2:0 picture.
func Picture(w, h, n int) *image.YCbCr {
	img := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	camera.DrawTestPattern(img, n)
	return img
}

// DecodeBarCodes decodes the H264 file at path to raw grey frames with
// ffmpeg and returns each frame's bar code (camera.ReadBarCode: the test
// pattern's frame number mod 65536); unreadable codes are reported as -1.
func DecodeBarCodes(t testing.TB, path string, w, h int) []int {
	t.Helper()
	out := run(t, "ffmpeg", "-nostdin", "-v", "error", "-f", "h264", "-i", path,
		"-f", "rawvideo", "-pix_fmt", "gray", "-")
	size := w * h
	if len(out)%size != 0 {
		t.Fatalf("ffmpeg produced %d bytes, not a whole number of %dx%d grey frames", len(out), w, h)
	}
	codes := make([]int, 0, len(out)/size)
	for off := 0; off < len(out); off += size {
		if n, ok := camera.ReadBarCode(out[off:off+size], w); ok {
			codes = append(codes, int(n))
		} else {
			codes = append(codes, -1)
		}
	}
	return codes
}

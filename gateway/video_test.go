package gateway

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/protocol"
)

func TestVideoRecorder(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		r, err := NewVideoRecorder(dir, clock.NewFake())
		if err != nil {
			t.Fatal(err)
		}
		h := func(f protocol.Flag, seq uint32) protocol.Header {
			return protocol.Header{Kind: protocol.KindVideo, Flag: f, Seq: seq, Timestamp: 1000 + int64(seq)*66666}
		}
		key := h(protocol.FlagH264, 0)
		key.Mark = protocol.MarkKeyFrame
		r.Record("gw-1", key, []byte{0, 0, 1, 0x65, 1})
		r.Record("gw-1", h(protocol.FlagImage, 1), []byte{0xff, 0xd8, 1})
		r.Record("gw-1", h(protocol.FlagH264, 2), []byte{0, 0, 1, 0x41, 2})
		r.Record("gw/2", h(protocol.FlagImage, 0), []byte{0xff, 0xd8, 2})
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		fr := r.Frames("gw-1")
		if len(fr) != 3 || fr[2].Offset != 5 || fr[1].Offset != 0 || fr[2].Size != 5 {
			t.Fatalf("index %+v", fr)
		}
		wantH264 := []byte{0, 0, 1, 0x65, 1, 0, 0, 1, 0x41, 2}
		if dir == "" {
			if !bytes.Equal(r.H264("gw-1"), wantH264) || len(r.Images("gw-1")) != 1 || r.Path("gw-1") != "" {
				t.Fatal("in-memory recording differs")
			}
			continue
		}
		got, err := os.ReadFile(r.Path("gw-1"))
		if err != nil || !bytes.Equal(got, wantH264) {
			t.Fatalf("h264 file %x, %v", got, err)
		}
		if img, err := os.ReadFile(filepath.Join(dir, "gw_2-img-000000.jpg")); err != nil || img[2] != 2 {
			t.Fatalf("image file %x, %v", img, err)
		}
		if ids := r.Sessions(); len(ids) != 2 {
			t.Fatalf("sessions %v", ids)
		}
		list, err := os.ReadFile(r.ListPath("gw-1"))
		want := FramesHeader + "\n" +
			"0\th264\t1\t1\t1000\t0\t5\t0\n" +
			"1\timage\t0\t0\t67666\t0\t3\t0\n" +
			"2\th264\t0\t0\t134332\t0\t5\t5\n"
		if err != nil || string(list) != want {
			t.Fatalf("per-frame list\n%s(%v)\nwant\n%s", list, err, want)
		}
	}
}

package gateway

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/protocol"
)

// RecordedFrame is one video frame a VideoRecorder received.
type RecordedFrame struct {
	Header protocol.Header
	At     time.Duration // recorder clock (Mono) at receipt
	Size   int
	// Offset of the access unit in the session's H264 stream (flag 2), or
	// the index of the image (flag 3).
	Offset int
}

// VideoRecorder stores the video robots send: per session, H264 access
// units concatenated into a raw Annex-B stream (playable with ffplay -f
// h264, decodable with ffmpeg) and JPEG images, plus an index of every
// frame. With a directory it writes <dir>/<session>.h264,
// <dir>/<session>-img-NNNNNN.jpg and the per-frame list
// <dir>/<session>-frames.tsv (FramesHeader, then one line per frame:
// sequence number, flag, mark bits, key frame, the robot's capture
// timestamp, the receipt time, size, offset); without one it keeps
// everything in memory (tests).
//
// Use its OnVideo method as Hooks.OnVideo. Methods are safe for
// concurrent use; OnVideo does file I/O on the session's read goroutine,
// which suits development, not production.
type VideoRecorder struct {
	dir string
	clk clock.Clock

	mu       sync.Mutex
	sessions map[string]*recording
	err      error
}

type recording struct {
	frames []RecordedFrame
	h264   []byte   // in memory (no dir)
	images [][]byte // in memory (no dir)
	file   *os.File
	list   *os.File // per-frame list (dir only)
	off    int
	nimg   int
}

// NewVideoRecorder returns a recorder writing under dir (created if
// missing), or keeping everything in memory when dir is "". clk stamps
// receipt times; nil uses a real clock.
func NewVideoRecorder(dir string, clk clock.Clock) (*VideoRecorder, error) {
	if clk == nil {
		clk = clock.NewReal()
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("gateway: record video: %w", err)
		}
	}
	return &VideoRecorder{dir: dir, clk: clk, sessions: make(map[string]*recording)}, nil
}

// OnVideo records one frame; it has the signature of Hooks.OnVideo.
func (r *VideoRecorder) OnVideo(s *Session, h protocol.Header, payload []byte) {
	id := "session"
	if s != nil {
		id = s.ID
	}
	r.Record(id, h, payload)
}

// Record records one frame of session id.
func (r *VideoRecorder) Record(id string, h protocol.Header, payload []byte) {
	at := r.clk.Mono()
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.sessions[id]
	if rec == nil {
		rec = &recording{}
		r.sessions[id] = rec
	}
	f := RecordedFrame{Header: h, At: at, Size: len(payload)}
	switch h.Flag {
	case protocol.FlagH264:
		f.Offset = rec.off
		rec.off += len(payload)
		if r.dir == "" {
			rec.h264 = append(rec.h264, payload...)
		} else {
			if rec.file == nil {
				var err error
				rec.file, err = os.Create(filepath.Join(r.dir, safeName(id)+".h264"))
				if err != nil {
					r.fail(err)
					return
				}
			}
			if _, err := rec.file.Write(payload); err != nil {
				r.fail(err)
			}
		}
	case protocol.FlagImage:
		f.Offset = rec.nimg
		rec.nimg++
		if r.dir == "" {
			rec.images = append(rec.images, append([]byte(nil), payload...))
		} else {
			name := filepath.Join(r.dir, fmt.Sprintf("%s-img-%06d.jpg", safeName(id), f.Offset))
			if err := os.WriteFile(name, payload, 0o644); err != nil {
				r.fail(err)
			}
		}
	}
	rec.frames = append(rec.frames, f)
	if r.dir != "" {
		r.list(id, rec, f)
	}
}

// FramesHeader is the first line of a <session>-frames.tsv file: the
// columns of one line per frame. flag is h264 or image, mark the header's
// mark bits, key 1 for a key frame, timestamp_us the robot's capture time
// (its monotonic clock), received_us the recorder's clock at receipt,
// offset the byte offset in <session>.h264 or the image number.
const FramesHeader = "seq\tflag\tmark\tkey\ttimestamp_us\treceived_us\tsize\toffset"

// list appends f to session id's per-frame list. r.mu held.
func (r *VideoRecorder) list(id string, rec *recording, f RecordedFrame) {
	if rec.list == nil {
		var err error
		rec.list, err = os.Create(filepath.Join(r.dir, safeName(id)+"-frames.tsv"))
		if err != nil {
			r.fail(err)
			return
		}
		if _, err := fmt.Fprintln(rec.list, FramesHeader); err != nil {
			r.fail(err)
		}
	}
	flag := "h264"
	if f.Header.Flag == protocol.FlagImage {
		flag = "image"
	} else if f.Header.Flag != protocol.FlagH264 {
		flag = fmt.Sprint(int(f.Header.Flag))
	}
	key := 0
	if f.Header.KeyFrame() {
		key = 1
	}
	if _, err := fmt.Fprintf(rec.list, "%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", f.Header.Seq, flag, f.Header.Mark, key,
		f.Header.Timestamp, f.At.Microseconds(), f.Size, f.Offset); err != nil {
		r.fail(err)
	}
}

func (r *VideoRecorder) fail(err error) {
	if r.err == nil {
		r.err = fmt.Errorf("gateway: record video: %w", err)
	}
}

func safeName(id string) string {
	return strings.Map(func(c rune) rune {
		if c == '/' || c == '\\' || c == 0 || c == '.' {
			return '_'
		}
		return c
	}, id)
}

// Sessions returns the ids of the sessions recorded, sorted.
func (r *VideoRecorder) Sessions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, 0, len(r.sessions))
	for id := range r.sessions {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Frames returns the index of session id's frames in arrival order.
func (r *VideoRecorder) Frames(id string) []RecordedFrame {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec := r.sessions[id]; rec != nil {
		return append([]RecordedFrame(nil), rec.frames...)
	}
	return nil
}

// H264 returns session id's H264 stream (in-memory recorders only).
func (r *VideoRecorder) H264(id string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec := r.sessions[id]; rec != nil {
		return append([]byte(nil), rec.h264...)
	}
	return nil
}

// Images returns session id's images (in-memory recorders only).
func (r *VideoRecorder) Images(id string) [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec := r.sessions[id]; rec != nil {
		return append([][]byte(nil), rec.images...)
	}
	return nil
}

// ListPath returns where session id's per-frame list is written ("" in
// memory).
func (r *VideoRecorder) ListPath(id string) string {
	if r.dir == "" {
		return ""
	}
	return filepath.Join(r.dir, safeName(id)+"-frames.tsv")
}

// Path returns where session id's H264 stream is written ("" in memory).
func (r *VideoRecorder) Path(id string) string {
	if r.dir == "" {
		return ""
	}
	return filepath.Join(r.dir, safeName(id)+".h264")
}

// Close closes the files and returns the first error met while
// recording.
func (r *VideoRecorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, rec := range r.sessions {
		if rec.file != nil {
			errs = append(errs, rec.file.Close())
			rec.file = nil
		}
		if rec.list != nil {
			errs = append(errs, rec.list.Close())
			rec.list = nil
		}
	}
	return errors.Join(append([]error{r.err}, errs...)...)
}

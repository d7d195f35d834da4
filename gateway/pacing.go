package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/robot-agent/robot-agent/protocol"
)

// pacer keeps the audio a session has sent but the robot has not played
// within the robot's advertised buffer (docs/protocol.md §7.7): before each
// TTS chunk the streamer waits until protocol.PacingBudget allows it. The
// estimate counts samples_played from the latest playback_progress, which
// lags the robot, so the gateway's view of unplayed audio is never smaller
// than the truth and the robot's buffer cannot overflow. Any goroutine.
type pacer struct {
	bufferMS int
	off      bool // the robot sends no playback_progress: nothing to pace on
	mu       sync.Mutex
	sent     map[uint32]int64 // responses without a final report
	played   map[uint32]int64
	wake     chan struct{} // closed and replaced on every progress report
	waits    int64         // chunks that had to wait (for tests and logs)
}

// newPacer paces to bufferMS (0: the v1 default of 10 s). Without
// progress reports (the robot lacks the playback_progress capability)
// pacing is off.
func newPacer(bufferMS int, progress bool) *pacer {
	return &pacer{bufferMS: bufferMS, off: !progress, sent: map[uint32]int64{}, played: map[uint32]int64{}, wake: make(chan struct{})}
}

// acquire blocks until n more samples of response id fit, then counts them
// as sent. It returns false if ctx ends first. A chunk larger than the whole
// buffer is sent once nothing else is unplayed.
func (p *pacer) acquire(ctx context.Context, id uint32, n int64) bool {
	if p.off {
		return true
	}
	waited := false
	for {
		p.mu.Lock()
		budget := protocol.PacingBudget(p.bufferMS, p.sent, p.played)
		empty := budget == protocol.PacingBudget(p.bufferMS, nil, nil)
		if budget >= n || empty {
			p.sent[id] += n
			if waited {
				p.waits++
			}
			p.mu.Unlock()
			return true
		}
		wake := p.wake
		p.mu.Unlock()
		waited = true
		select {
		case <-ctx.Done():
			return false
		case <-wake:
		case <-time.After(250 * time.Millisecond): // progress may be dropped; re-check
		}
	}
}

// progress records a playback_progress report.
func (p *pacer) progress(m *protocol.PlaybackProgress) {
	p.mu.Lock()
	if m.Done || m.Interrupted {
		delete(p.sent, m.ResponseID)
		delete(p.played, m.ResponseID)
	} else if _, ok := p.sent[m.ResponseID]; ok {
		p.played[m.ResponseID] = max(p.played[m.ResponseID], m.SamplesPlayed)
	}
	close(p.wake)
	p.wake = make(chan struct{})
	p.mu.Unlock()
}

// waited returns how many chunks had to wait for the robot to play.
func (p *pacer) waited() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waits
}

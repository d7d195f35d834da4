package gateway

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/robot-agent/robot-agent/protocol"
)

// GoAway asks every connected robot to leave before a planned shutdown
// (docs/protocol.md 6.20): each gets a go_away with reason and
// reconnect_after_ms = after plus a random share of spread (so a fleet does
// not come back in one burst), and robots close with 1000. GoAway returns
// once every told session has ended, or when ctx ends (the remaining
// sessions are then closed from this side). It returns how many robots were
// told. Any goroutine.
func (s *Server) GoAway(ctx context.Context, reason string, after, spread time.Duration) int {
	s.mu.Lock()
	sessions := make([]*Session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		sessions = append(sessions, ss)
	}
	s.mu.Unlock()
	for _, ss := range sessions {
		d := after
		if spread > 0 {
			d += time.Duration(rand.Int64N(int64(spread)))
		}
		ss.Send(&protocol.GoAway{Meta: protocol.Meta{Type: protocol.TypeGoAway}, Reason: reason, ReconnectAfterMS: int(d / time.Millisecond)})
		s.log.Info("gateway: go_away sent", "session", ss.ID, "reason", reason, "reconnect_after", d)
	}
	for _, ss := range sessions {
		select {
		case <-ss.Done():
		case <-ctx.Done():
			ss.Close("going away")
		}
	}
	return len(sessions)
}

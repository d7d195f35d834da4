package gateway

import "sync"

// seenIDs remembers the last cap robot event ids a gateway has handed to
// its application, across sessions: the robot re-sends what it has not
// seen acked after a reconnect, with the same event_id (protocol §5.3), so
// a message the gateway got but whose ack was lost arrives twice. It keeps
// exact ids (not the highest n per boot id), so a sender whose ids do not
// increase is never mistaken for a duplicate.
//
// Safe for concurrent use (each session's read goroutine calls it).
type seenIDs struct {
	mu   sync.Mutex
	set  map[string]struct{}
	ring []string // FIFO of the ids in set
	next int
}

func newSeenIDs(capacity int) *seenIDs {
	return &seenIDs{set: make(map[string]struct{}, capacity), ring: make([]string, capacity)}
}

// first records id and reports whether it is new.
func (s *seenIDs) first(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.set[id]; ok {
		return false
	}
	if old := s.ring[s.next]; old != "" {
		delete(s.set, old)
	}
	s.ring[s.next] = id
	s.next = (s.next + 1) % len(s.ring)
	s.set[id] = struct{}{}
	return true
}

package main

import (
	"sync"
	"sync/atomic"

	"github.com/robot-agent/robot-agent/uplink"
)

// sessionTagger wraps the jitter buffer and remembers which gateway
// session each response with audio belongs to, so that a final
// playback_progress sent after a reconnect says which session's response
// it reports (docs/protocol.md §3.5: playback goes on while the link is
// down; the next session's hello cuts what is left).
//
// # Concurrency
//
// PushPCM and ResetSession run on the uplink's read pump / session
// goroutine; LinkChanged on the uplink; tag on the progress reporter.
// PushPCM takes the mutex only when the response id changes (once per
// response), never per chunk.
type sessionTagger struct {
	uplink.TTSSink

	last atomic.Uint32 // read pump: response of the previous chunk

	mu   sync.Mutex
	cur  string            // session of the link (the last one that came up)
	ids  map[uint32]bool   // responses with audio in cur
	prev map[uint32]string // responses of ended sessions not yet reported → session
}

func newSessionTagger(tts uplink.TTSSink) *sessionTagger {
	return &sessionTagger{TTSSink: tts, ids: map[uint32]bool{}, prev: map[uint32]string{}}
}

// PushPCM implements uplink.TTSSink.
func (s *sessionTagger) PushPCM(id uint32, pcm []byte) error {
	err := s.TTSSink.PushPCM(id, pcm)
	if err == nil && s.last.Load() != id {
		s.last.Store(id)
		s.mu.Lock()
		s.ids[id] = true
		s.mu.Unlock()
	}
	return err
}

// ResetSession implements uplink.TTSSink: the responses of the session
// that ended keep its id until their final progress is reported.
func (s *sessionTagger) ResetSession() {
	s.TTSSink.ResetSession()
	s.last.Store(0)
	s.mu.Lock()
	for id := range s.ids {
		s.prev[id] = s.cur
	}
	s.ids = map[uint32]bool{}
	s.mu.Unlock()
}

// LinkChanged implements uplink.LinkObserver.
func (s *sessionTagger) LinkChanged(up bool, sessionID string) {
	if !up {
		return
	}
	s.mu.Lock()
	s.cur = sessionID
	s.mu.Unlock()
}

// tag returns the session a completed response belonged to.
func (s *sessionTagger) tag(id uint32) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.prev[id]; ok {
		delete(s.prev, id)
		return sess
	}
	delete(s.ids, id) // reported: a later session's response id is a new one
	return s.cur
}

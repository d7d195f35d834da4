// Package statetest has test doubles shared by the state, identity and
// skills tests: an Emitter that behaves like the uplink's control outbox
// (assigns event_id, checks every message is valid on the wire) and polling
// helpers.
//
// # Concurrency
//
// Emitter is safe for concurrent use.
package statetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/protocol"
)

// Emitter records emitted messages. Like the uplink outbox it assigns
// event_id when empty; it then encodes each message and decodes it with the
// gateway's decoder, recording a failure if the message is not valid on the
// wire.
type Emitter struct {
	mu      sync.Mutex
	msgs    []protocol.Message
	fail    error
	n       int
	invalid []error
}

// Emit implements device.Emitter (used by state, identity and skills).
func (e *Emitter) Emit(m protocol.Message) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fail != nil {
		return e.fail
	}
	e.n++
	if m.Envelope().EventID == "" {
		m.Envelope().EventID = fmt.Sprintf("t-%d", e.n)
	}
	b, err := protocol.Marshal(m)
	if err == nil {
		_, err = protocol.DecodeFromRobot(b)
	}
	if err != nil {
		e.invalid = append(e.invalid, fmt.Errorf("%T: %w", m, err))
	}
	e.msgs = append(e.msgs, m)
	return nil
}

// SetFail makes Emit return err (nil to succeed again), as a full outbox.
func (e *Emitter) SetFail(err error) {
	e.mu.Lock()
	e.fail = err
	e.mu.Unlock()
}

// Invalid returns messages that did not survive encode/decode.
func (e *Emitter) Invalid() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]error(nil), e.invalid...)
}

// All returns every message so far.
func (e *Emitter) All() []protocol.Message {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]protocol.Message(nil), e.msgs...)
}

// Reset forgets recorded messages.
func (e *Emitter) Reset() {
	e.mu.Lock()
	e.msgs = nil
	e.mu.Unlock()
}

// States returns state events called name (all if name is "").
func (e *Emitter) States(name string) []*protocol.State {
	var out []*protocol.State
	for _, m := range e.All() {
		if s, ok := m.(*protocol.State); ok && (name == "" || s.StateName == name) {
			out = append(out, s)
		}
	}
	return out
}

// Of returns the messages of type T.
func Of[T protocol.Message](e *Emitter) []T {
	var out []T
	for _, m := range e.All() {
		if v, ok := m.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// WaitUntil polls cond (real time) until it holds or 5 s pass.
func WaitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Settle gives other goroutines a moment and then checks cond still holds:
// for asserting that something did NOT happen.
func Settle(t testing.TB, what string, cond func() bool) {
	t.Helper()
	time.Sleep(30 * time.Millisecond)
	if !cond() {
		t.Fatalf("%s", what)
	}
}

package spool

import (
	"bytes"
	"fmt"
	"sync"
)

// Memory is a spool without a disk, for tests and for robots configured
// without one: it holds unsettled events while it lives. A Memory shared by
// two outboxes in turn behaves like a spool across a process restart (the
// second one loads what the first left unsettled), which is how tests model
// a crash without a file system. Any goroutine.
type Memory struct {
	MaxBytes int64 // 0: 64 MiB

	mu     sync.Mutex
	ids    []string
	data   map[string][]byte
	size   int64
	ticket uint64
}

// NewMemory returns an empty memory spool.
func NewMemory() *Memory { return &Memory{data: make(map[string][]byte)} }

// Append stores the event.
func (m *Memory) Append(id string, data []byte) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	max := m.MaxBytes
	if max <= 0 {
		max = 64 << 20
	}
	n := int64(putSize(id, data))
	if m.size+n > max {
		return 0, fmt.Errorf("%w: %d bytes of unsettled events (max %d)", ErrFull, m.size, max)
	}
	if _, dup := m.data[id]; dup {
		return 0, fmt.Errorf("spool: event id %q already stored", id)
	}
	m.ids = append(m.ids, id)
	m.data[id] = bytes.Clone(data)
	m.size += n
	m.ticket++
	return m.ticket, nil
}

// Sync returns at once: memory is as durable as it gets.
func (m *Memory) Sync(uint64) error { return nil }

// Settle forgets the event.
func (m *Memory) Settle(id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d, ok := m.data[id]; ok {
		m.size -= int64(putSize(id, d))
		delete(m.data, id)
	}
	return nil
}

// Load calls f for every unsettled event in order.
func (m *Memory) Load(f func(id string, data []byte)) error {
	m.mu.Lock()
	var keep []string
	var recs []Record
	for _, id := range m.ids {
		if d, ok := m.data[id]; ok {
			keep = append(keep, id)
			recs = append(recs, Record{ID: id, Data: d})
		}
	}
	m.ids = keep
	m.mu.Unlock()
	for _, r := range recs {
		f(r.ID, r.Data)
	}
	return nil
}

// Len returns the number of unsettled events.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.data)
}

package state

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// Key describes one coalesced state value: a JSON object of float fields.
type Key struct {
	Name     string   // state_name, e.g. "imu.accel"
	Fields   []string // object fields, e.g. x, y, z
	Deadband float64  // send only when a field moved more than this since the last send
	Decimals int      // digits after the decimal point on the wire
}

type slot struct {
	Key
	prefix  [][]byte // `{"x":` , `,"y":` ...
	cur     []float64
	sent    []float64
	capture time.Duration // capture time of cur
	sentAt  time.Duration
	dirty   bool // cur updated since the last flush
	ever    bool // sent at least once
}

// Coalescer publishes high-rate values at a bounded rate. Update stores the
// latest value of a key (latest wins, no allocation); Flush publishes each
// key whose value moved more than its deadband since it was last sent, or
// whose heartbeat is due. The first value of every key is always sent.
//
// A Coalescer is used by one goroutine.
type Coalescer struct {
	pub       *Publisher
	heartbeat time.Duration
	slots     []slot
	sent      int64
	skipped   int64
}

// NewCoalescer returns a coalescer for keys; Update and Flush take a key's
// index in keys. heartbeat > 0 resends an unchanged key that often.
func NewCoalescer(pub *Publisher, heartbeat time.Duration, keys ...Key) *Coalescer {
	c := &Coalescer{pub: pub, heartbeat: heartbeat, slots: make([]slot, len(keys))}
	for i, k := range keys {
		s := &c.slots[i]
		s.Key = k
		s.cur = make([]float64, len(k.Fields))
		s.sent = make([]float64, len(k.Fields))
		for j, f := range k.Fields {
			sep := ","
			if j == 0 {
				sep = "{"
			}
			s.prefix = append(s.prefix, []byte(sep+strconv.Quote(f)+":"))
		}
	}
	return c
}

// Update records the latest value of key k captured at capture. len(v) must
// equal the key's field count.
func (c *Coalescer) Update(k int, capture time.Duration, v []float64) {
	s := &c.slots[k]
	copy(s.cur, v)
	s.capture = capture
	s.dirty = true
}

// Flush publishes keys that need sending at now (clock Mono) and returns how
// many it published.
func (c *Coalescer) Flush(now time.Duration) int {
	n := 0
	for i := range c.slots {
		s := &c.slots[i]
		if !s.ever && !s.dirty {
			continue
		}
		send := !s.ever
		if !send && s.dirty {
			for j := range s.cur {
				if math.Abs(s.cur[j]-s.sent[j]) > s.Deadband {
					send = true
					break
				}
			}
		}
		if !send && c.heartbeat > 0 && now-s.sentAt >= c.heartbeat {
			send = true
		}
		if !send {
			if s.dirty {
				c.skipped++
			}
			s.dirty = false
			continue
		}
		capture := s.capture
		if !s.dirty {
			capture = now // heartbeat of an unchanged value
		}
		_ = c.pub.Publish(s.Name, s.encode(), capture)
		copy(s.sent, s.cur)
		s.sentAt, s.ever, s.dirty = now, true, false
		c.sent++
		n++
	}
	return n
}

// Stats reports how many values Flush sent and how many updated values it
// held back because they were inside their deadband.
func (c *Coalescer) Stats() (sent, skipped int64) { return c.sent, c.skipped }

func (s *slot) encode() json.RawMessage {
	b := make([]byte, 0, 16+len(s.cur)*(12+s.Decimals))
	for j, v := range s.cur {
		b = append(b, s.prefix[j]...)
		b = AppendFloat(b, v, s.Decimals)
	}
	return append(b, '}')
}

// AppendFloat appends v with the given decimals as a JSON number (NaN and
// infinities, which JSON cannot carry, become 0; "-0" becomes "0").
func AppendFloat(b []byte, v float64, decimals int) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, '0')
	}
	start := len(b)
	b = strconv.AppendFloat(b, v, 'f', decimals, 64)
	if b[start] == '-' {
		zero := true
		for _, c := range b[start+1:] {
			if c != '0' && c != '.' {
				zero = false
				break
			}
		}
		if zero {
			b = append(b[:start], b[start+1:]...)
		}
	}
	return b
}

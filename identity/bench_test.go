package identity

import (
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/protocol"
)

type wireEmitter struct{}

func (wireEmitter) Emit(m protocol.Message) error {
	m.Envelope().EventID = "e"
	_, err := protocol.Marshal(m)
	return err
}

// Recogniser line → validated observation → tracker → face_info on the
// wire (dedup window 0 so every line makes an event).
func BenchmarkObservationToWire(b *testing.B) {
	tr := NewTracker(Config{DedupWindow: -1}.Defaults(), wireEmitter{}, clock.NewFake(), slogDiscard(), metrics.NewRegistry())
	tr.cfg.DedupWindow = 0
	line := []byte(`{"uid":"alice","kind":"face","confidence":0.93}`)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		o, err := ParseObservation(line, 4096)
		if err != nil {
			b.Fatal(err)
		}
		tr.Observe(o, time.Duration(i)*time.Millisecond)
	}
}

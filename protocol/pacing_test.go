package protocol

import (
	"errors"
	"fmt"
	"testing"
)

func TestPacingBudget(t *testing.T) {
	tests := []struct {
		name         string
		bufMS        int
		sent, played map[uint32]int64
		want         int64
	}{
		{"default 10 s, nothing sent", 0, nil, nil, 240000},
		{"advertised 2 s", 2000, nil, nil, 48000},
		{"one response half played", 1000, map[uint32]int64{1: 20000}, map[uint32]int64{1: 10000}, 14000},
		{"queued response counts whole", 1000, map[uint32]int64{1: 12000, 2: 6000}, map[uint32]int64{1: 12000}, 18000},
		{"over budget clamps to 0", 1000, map[uint32]int64{1: 50000}, nil, 0},
		{"progress beyond sent is ignored", 1000, map[uint32]int64{1: 100}, map[uint32]int64{1: 900}, 24000},
	}
	for _, tt := range tests {
		if got := PacingBudget(tt.bufMS, tt.sent, tt.played); got != tt.want {
			t.Errorf("%s: budget %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestPacingFieldsValidated(t *testing.T) {
	m, err := DecodeFromRobot([]byte(`{"type":"playback_progress","response_id":3,"samples_played":10,"interrupted":true,"lost_samples":480}`))
	if err != nil {
		t.Fatal(err)
	}
	if p := m.(*PlaybackProgress); p.LostSamples != 480 || !p.Interrupted {
		t.Fatalf("decoded %+v", p)
	}
	if _, err := DecodeFromRobot([]byte(`{"type":"playback_progress","response_id":3,"samples_played":10,"lost_samples":-1}`)); !errors.Is(err, ErrMalformed) {
		t.Errorf("negative lost_samples: %v", err)
	}
	hello := `{"type":"hello","protocol":1,"device_id":"d","agent_version":"x","capabilities":[],"audio_up":{"format":"pcm16le","sample_rate":16000,"channels":1},"audio_down":[],"playback_buffer_ms":%s}`
	for _, tc := range []struct {
		v  string
		ok bool
	}{{"320000", true}, {"-5", false}} {
		_, err := DecodeFromRobot([]byte(fmt.Sprintf(hello, tc.v)))
		if (err == nil) != tc.ok {
			t.Errorf("hello playback_buffer_ms=%s: %v", tc.v, err)
		}
	}
}

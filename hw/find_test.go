package hw_test

import (
	"testing"

	"github.com/robot-agent/robot-agent/hw"
)

type plainSink struct{}

func (plainSink) Format() hw.AudioFormat { return hw.TTSFormat }
func (plainSink) Write(p []int16) error  { return nil }
func (plainSink) Close() error           { return nil }
func (plainSink) Flush() int             { return 7 }
func (plainSink) PeriodFrames() int      { return 240 }

type wrapper struct{ hw.AudioSink }

func (w wrapper) Unwrap() hw.AudioSink { return w.AudioSink }

type opaque struct{ hw.AudioSink } // embeds, but has no Unwrap: hides nothing it embeds

// FindSink finds a capability on the sink or through Unwrap wrappers.
func TestFindSink(t *testing.T) {
	var deep hw.AudioSink = plainSink{}
	for range 8 {
		deep = wrapper{deep}
	}
	for _, tc := range []struct {
		name string
		sink hw.AudioSink
		want bool
	}{
		{"the sink itself", plainSink{}, true},
		{"through one wrapper", wrapper{plainSink{}}, true},
		{"through two wrappers", wrapper{wrapper{plainSink{}}}, true},
		{"more than 8 deep", wrapper{deep}, false},
		{"a wrapper without Unwrap hides the sink", opaque{plainSink{}}, false},
		{"nothing to find", wrapper{noFlushSink{}}, false},
	} {
		f, ok := hw.FindSink[hw.Flusher](tc.sink)
		if ok != tc.want || (ok && f.Flush() != 7) {
			t.Errorf("%s: FindSink = %v, %v; want found %v", tc.name, f, ok, tc.want)
		}
	}
}

type noFlushSink struct{}

func (noFlushSink) Format() hw.AudioFormat { return hw.TTSFormat }
func (noFlushSink) Write(p []int16) error  { return nil }
func (noFlushSink) Close() error           { return nil }

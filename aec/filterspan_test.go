package aec

import (
	"slices"
	"testing"
)

// WebRTC's AEC2 reports its own filter (128 ms extended, 48 ms short), and
// the dual path answers for it: the reverberation guard judges its output
// against the reverberation beyond that.
func TestWebRTCReportsItsOwnFilter(t *testing.T) {
	if !slices.Contains(Available(), KindWebRTC) {
		t.Skip("no WebRTC canceller in this build (tag webrtcapm)")
	}
	for _, c := range []struct {
		o    Options
		want int
	}{
		{Options{Kind: KindWebRTC}, 128},
		{Options{Kind: KindWebRTC, ShortFilter: true}, 48},
		{Options{Kind: KindWebRTC, Uplink: BestUplink(KindWebRTC)}, 128},
	} {
		cn, err := New(c.o)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		if f, ok := cn.(filterSpanner); ok {
			got = f.FilterMS()
		}
		if got != c.want {
			t.Errorf("%+v: FilterMS %d (0: not a filterSpanner), want %d", c.o, got, c.want)
		}
		cn.Close()
	}
}

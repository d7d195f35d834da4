package sim

import (
	"math"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/hw"
	"github.com/robot-agent/robot-agent/room"
)

// The speaker's output reaches a mic sharing a room after the room's delay
// plus the speaker's latency, at the echo gain; both report their latency.
func TestSpeakerEchoReachesMic(t *testing.T) {
	// Real time (about 1 s): both devices pace themselves concurrently, as
	// in the agent.
	clk := clock.NewReal()
	path, err := room.New(room.Config{DelayMS: 50, EchoGainDB: -6})
	if err != nil {
		t.Fatal(err)
	}
	spk, err := NewSpeaker(SpeakerConfig{Room: path, Latency: 10 * time.Millisecond}, clk)
	if err != nil {
		t.Fatal(err)
	}
	mic, err := NewMic(MicConfig{Room: path, NoiseDBFS: -120, Latency: 5 * time.Millisecond}, clk)
	if err != nil {
		t.Fatal(err)
	}
	defer spk.Close()
	defer mic.Close()
	var _ hw.LatencyReporter = spk
	var _ hw.LatencyReporter = mic
	if spk.DeviceLatency() != 10*time.Millisecond || mic.DeviceLatency() != 5*time.Millisecond {
		t.Fatalf("latencies %v %v", spk.DeviceLatency(), mic.DeviceLatency())
	}
	// The speaker plays 200 ms of silence then a 440 Hz burst of 800 ms
	// (24 kHz, 20 ms blocks) while the mic records 1 s.
	done := make(chan error, 1)
	go func() {
		blk := make([]int16, 480)
		for k := range 50 {
			for i := range blk {
				n := k*480 + i
				blk[i] = 0
				if n >= 4800 {
					blk[i] = int16(10000 * math.Sin(2*math.Pi*440*float64(n)/24000))
				}
			}
			if err := spk.Write(blk); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	got := make([]int16, 16000)
	for off := 0; off < len(got); off += 320 {
		if _, err := mic.Read(got[off : off+320]); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Block 10 starts the burst; its play time accounts for any underrun
	// before it on a loaded machine.
	burstAt := spk.Blocks()[10].At
	micStart, _ := mic.StartedAt()
	// Echo onset: first sample above 1/10 of the expected amplitude.
	onset := -1
	for i, v := range got {
		if v > 500 || v < -500 {
			onset = i
			break
		}
	}
	want := (burstAt + 10*time.Millisecond + 50*time.Millisecond - micStart) * 16000 / time.Second
	if onset < 0 || math.Abs(float64(onset)-float64(want)) > 16 {
		t.Fatalf("echo onset at sample %d, want %d (burst played at %v, mic started %v)", onset, want, burstAt, micStart)
	}
	var e float64
	seg := got[onset+1600 : min(onset+8000, len(got))]
	for _, v := range seg {
		e += float64(v) * float64(v)
	}
	db := 20 * math.Log10(math.Sqrt(e/float64(len(seg)))/(10000/math.Sqrt2))
	// (A loaded machine makes the speaker underrun: silent gaps lower the
	// level, so it is only checked without them.)
	if spk.Underruns() == 0 && math.Abs(db+6) > 0.3 {
		t.Errorf("echo level %.2f dB, want -6", db)
	}
}

package imu

import (
	"bytes"
	"flag"
	"os"
	"testing"
	"time"

	"periph.io/x/conn/v3/i2c/i2ctest"
)

var update = flag.Bool("update", false, "rewrite testdata/mpu6050_200hz.rec from the SimMPU model")

const recordingPath = "testdata/mpu6050_200hz.rec"

// record captures the register traffic of NewMPU and ProfileLength of
// samples from a SimMPU through periph's i2ctest.Record.
func record(t testing.TB) []i2ctest.IO {
	rec := &i2ctest.Record{Bus: NewSimMPU(RecordingAddr, DefaultProfile)}
	mpu, err := NewMPU(rec, RecordingAddr, MPUOptions{Model: "auto", SampleHz: RecordingHz, AccelRangeG: RecordingAccelG, GyroRangeDPS: RecordingGyroDPS})
	if err != nil {
		t.Fatal(err)
	}
	var s Sample
	n := int(ProfileLength / (time.Second / RecordingHz))
	for range n {
		if err := mpu.Read(&s); err != nil {
			t.Fatal(err)
		}
	}
	if len(rec.Ops) != recordingInitOps+n {
		t.Fatalf("recorded %d transactions, want %d init + %d samples", len(rec.Ops), recordingInitOps, n)
	}
	return rec.Ops
}

// The committed recording is exactly the traffic our driver produces
// against the register model: the init sequence and burst reads are pinned.
func TestRecordingMatchesDriverTraffic(t *testing.T) {
	ops := record(t)
	var buf bytes.Buffer
	comment := "MPU-6050 at 0x68, 200 Hz, ±4 g, ±500 °/s; DefaultProfile (14 s)\nregenerate: go test ./state/imu -run TestRecordingMatchesDriverTraffic -update"
	if err := WriteRecording(&buf, comment, ops); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(recordingPath, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(recordingPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, buf.Bytes()) {
		t.Fatalf("%s differs from the driver's traffic; rerun with -update if the change is intended", recordingPath)
	}
	parsed, err := ParseRecording(bytes.NewReader(got))
	if err != nil {
		t.Fatal(err)
	}
	if len(parsed) != len(ops) {
		t.Fatalf("parsed %d ops, want %d", len(parsed), len(ops))
	}
}

package vad

import "github.com/robot-agent/robot-agent/codec/pcm"

// EnergyConfig mirrors capture.VADConfig's detector fields.
type EnergyConfig struct {
	StartDB, StopDB, MinFloorDBFS, FloorRiseDBPerS float64
}

// Energy is the level-over-adaptive-floor detector of the capture pump:
// outside utterances the floor (Floor) drops at once to any quieter frame
// but for a dip shorter than 300 ms, and rises by FloorRiseDBPerS; a frame
// is speech above floor+StartDB (floor+StopDB inside an utterance, where
// the floor is frozen).
type Energy struct {
	cfg   EnergyConfig
	floor Floor
}

// NewEnergy returns an energy detector; zero fields take capture's
// defaults (12, 6, -70, 1).
func NewEnergy(c EnergyConfig, frameMS int) *Energy {
	if c.StartDB == 0 {
		c.StartDB = 12
	}
	if c.StopDB == 0 {
		c.StopDB = 6
	}
	if c.MinFloorDBFS == 0 {
		c.MinFloorDBFS = -70
	}
	if c.FloorRiseDBPerS == 0 {
		c.FloorRiseDBPerS = 1
	}
	return &Energy{cfg: c, floor: NewFloor(c.FloorRiseDBPerS, frameMS)}
}

// Kind implements Detector.
func (e *Energy) Kind() string { return KindEnergy }

// Close implements Detector.
func (e *Energy) Close() error { return nil }

// Speech implements Detector.
func (e *Energy) Speech(frame []int16, active bool) bool {
	db := pcm.DBFS(frame)
	ref := max(e.floor.Judge(db), e.cfg.MinFloorDBFS)
	if active {
		return db > ref+e.cfg.StopDB
	}
	speech := db > ref+e.cfg.StartDB
	e.floor.Follow(db)
	return speech
}

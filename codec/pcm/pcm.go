// Package pcm holds allocation-free helpers for 16-bit linear PCM: byte
// conversion (little-endian, as on the wire and in WAV files), level
// measurement (RMS, dBFS, peak) and the normalised cross-correlation of two
// signals (NCC).
//
// Levels are relative to digital full scale: RMS is in sample units
// (0..32768) and DBFS is 20·log10(RMS/32768), so a full-scale square wave
// reads 0 dBFS and a full-scale sine about -3 dBFS.
//
// # Concurrency
//
// All functions are pure and safe for concurrent use on distinct buffers.
package pcm

import (
	"encoding/binary"
	"math"
)

// FullScale is the magnitude of the most negative int16 sample, the
// reference for dBFS.
const FullScale = 32768

// MinDBFS is the level DBFS reports for digital silence (and the floor it
// clamps to), so callers never see -Inf.
const MinDBFS = -120.0

// BytesToInt16 decodes little-endian PCM16 from src into dst and returns the
// number of samples written: min(len(dst), len(src)/2). A trailing odd byte
// is ignored. It does not allocate.
func BytesToInt16(dst []int16, src []byte) int {
	n := min(len(dst), len(src)/2)
	src = src[:2*n]
	for i := range dst[:n] {
		dst[i] = int16(binary.LittleEndian.Uint16(src[2*i:]))
	}
	return n
}

// Int16ToBytes encodes src into dst as little-endian PCM16 and returns the
// number of samples written: min(len(dst)/2, len(src)). It does not
// allocate.
func Int16ToBytes(dst []byte, src []int16) int {
	n := min(len(dst)/2, len(src))
	dst = dst[:2*n]
	for i, s := range src[:n] {
		binary.LittleEndian.PutUint16(dst[2*i:], uint16(s))
	}
	return n
}

// sumSquares cannot overflow: 32768² · len fits int64 for len < 8.5e9.
func sumSquares(s []int16) int64 {
	var acc int64
	for _, v := range s {
		x := int64(v)
		acc += x * x
	}
	return acc
}

// RMS returns the root-mean-square level of s in sample units (0 for an
// empty slice).
func RMS(s []int16) float64 {
	if len(s) == 0 {
		return 0
	}
	return math.Sqrt(float64(sumSquares(s)) / float64(len(s)))
}

// DBFS returns the RMS level of s in dB relative to full scale, clamped to
// MinDBFS (which is also the result for silence or an empty slice).
func DBFS(s []int16) float64 { return RMSToDBFS(RMS(s)) }

// RMSToDBFS converts an RMS level in sample units to dBFS, clamped to
// MinDBFS.
func RMSToDBFS(rms float64) float64 {
	if rms <= 0 {
		return MinDBFS
	}
	return max(20*math.Log10(rms/FullScale), MinDBFS)
}

// DBFSToRMS converts a level in dBFS to an RMS amplitude in sample units.
func DBFSToRMS(db float64) float64 { return FullScale * math.Pow(10, db/20) }

// NCC is the normalised cross-correlation of a and b over their common
// length (min(len(a), len(b))): 1 for identical waveforms, -1 for inverted
// ones, 0 for unrelated ones, and 0 if either is silent or empty. It does
// not allocate.
func NCC(a, b []int16) float64 {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	var ab, aa, bb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		ab += x * y
		aa += x * x
		bb += y * y
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}

// Peak returns the largest absolute sample value in s (0..32768; 32768 for
// a sample of -32768).
func Peak(s []int16) int {
	p := 0
	for _, v := range s {
		a := int(v)
		if a < 0 {
			a = -a
		}
		if a > p {
			p = a
		}
	}
	return p
}

// ZeroRun returns the length of the longest run of exact zeros in s (len(s)
// for digital silence). It does not allocate.
func ZeroRun(s []int16) int {
	run, longest := 0, 0
	for _, v := range s {
		if v != 0 {
			run = 0
			continue
		}
		run++
		longest = max(longest, run)
	}
	return longest
}

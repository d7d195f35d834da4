package main

import (
	"math"

	"github.com/robot-agent/robot-agent/codec/pcm"
)

// align finds where ref occurs in rec: a coarse search on 1 ms envelopes,
// then sample-exact around it. It returns the offset and the NCC there.
func align(rec, ref []int16, rate int) (int, float64) {
	win := rate / 1000
	env := func(x []int16) []int16 {
		out := make([]int16, len(x)/win)
		for i := range out {
			var s int
			for _, v := range x[i*win : (i+1)*win] {
				s += int(math.Abs(float64(v)))
			}
			out[i] = int16(s / win)
		}
		return out
	}
	er, ef := env(rec), env(ref)
	best, bestC := 0, -2.0
	for lag := 0; lag+len(ef) <= len(er); lag++ {
		if c := pcm.NCC(er[lag:lag+len(ef)], ef); c > bestC {
			best, bestC = lag, c
		}
	}
	best *= win
	fine, fineC := best, -2.0
	for lag := max(0, best-3*win); lag <= best+3*win && lag+len(ref) <= len(rec); lag++ {
		if c := pcm.NCC(rec[lag:lag+len(ref)], ref); c > fineC {
			fine, fineC = lag, c
		}
	}
	return fine, fineC
}

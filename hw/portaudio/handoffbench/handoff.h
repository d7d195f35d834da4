//go:build portaudio && cgo

#ifndef ROBOT_AGENT_HANDOFF_H
#define ROBOT_AGENT_HANDOFF_H

#include <stdint.h>
#include <portaudio.h>

// hb_rec is one period as the device side saw it (same fields as
// portaudio's ra_timing, without the ring's).
typedef struct hb_rec {
	int64_t start_ns;
	double current, dac;
	uint32_t frames, flags;
} hb_rec;

// hb_log is a preallocated log of periods, written by one thread.
typedef struct hb_log {
	hb_rec *rec;
	uint64_t cap, n; // n: written (atomic)
	uintptr_t handle; // gocallback: the Go fill function
	int channels;
	int rt_prio;     // SCHED_FIFO priority to take on the first callback (0: none)
	int rt_result;   // 1 granted, -errno refused
} hb_log;

int64_t hb_now_ns(void);
int hb_thread_realtime(int prio);
PaError hb_open_gocb(PaStream **s, int dev, int channels, double rate, unsigned long period, double latency, hb_log *l);
PaError hb_open_blocking(PaStream **s, int dev, int channels, double rate, unsigned long period, double latency);
// hb_write_blocking writes frames and logs the period (start = the call).
PaError hb_write_blocking(PaStream *s, const int16_t *buf, unsigned long frames, hb_log *l);

#endif

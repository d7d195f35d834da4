//go:build portaudio && cgo

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "handoff.h"
#include "_cgo_export.h"

int64_t hb_now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int hb_thread_realtime(int prio) {
	struct sched_param sp;
	memset(&sp, 0, sizeof sp);
	sp.sched_priority = prio;
	return pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
}

static void hb_log_add(hb_log *l, int64_t start, const PaStreamCallbackTimeInfo *ti, uint32_t frames, uint32_t flags) {
	uint64_t n = l->n;
	if (n < l->cap) {
		hb_rec *r = &l->rec[n];
		r->start_ns = start;
		r->current = ti ? ti->currentTime : 0;
		r->dac = ti ? ti->outputBufferDacTime : 0;
		r->frames = frames;
		r->flags = flags;
		__atomic_store_n(&l->n, n + 1, __ATOMIC_SEQ_CST);
	}
}

static int hb_gocb_callback(const void *in, void *out, unsigned long frames,
	const PaStreamCallbackTimeInfo *ti, PaStreamCallbackFlags flags, void *userData) {
	(void)in;
	int64_t t0 = hb_now_ns();
	hb_log *l = userData;
	if (l->rt_prio > 0 && l->rt_result == 0) {
		int e = hb_thread_realtime(l->rt_prio);
		l->rt_result = e == 0 ? 1 : -e;
	}
	hbGoFill(l->handle, out, (int)frames, l->channels);
	hb_log_add(l, t0, ti, (uint32_t)frames, (uint32_t)flags);
	return paContinue;
}

static PaStreamParameters params(int dev, int channels, double latency) {
	PaStreamParameters p;
	memset(&p, 0, sizeof p);
	p.device = dev;
	p.channelCount = channels;
	p.sampleFormat = paInt16;
	p.suggestedLatency = latency;
	return p;
}

PaError hb_open_gocb(PaStream **s, int dev, int channels, double rate, unsigned long period, double latency, hb_log *l) {
	PaStreamParameters p = params(dev, channels, latency);
	return Pa_OpenStream(s, NULL, &p, rate, period, paClipOff | paDitherOff | paPrimeOutputBuffersUsingStreamCallback,
		hb_gocb_callback, l);
}

PaError hb_open_blocking(PaStream **s, int dev, int channels, double rate, unsigned long period, double latency) {
	PaStreamParameters p = params(dev, channels, latency);
	return Pa_OpenStream(s, NULL, &p, rate, period, paClipOff | paDitherOff, NULL, NULL);
}

PaError hb_write_blocking(PaStream *s, const int16_t *buf, unsigned long frames, hb_log *l) {
	int64_t t0 = hb_now_ns();
	PaError e = Pa_WriteStream(s, buf, frames);
	hb_log_add(l, t0, NULL, (uint32_t)frames, e == paOutputUnderflowed ? paOutputUnderflow : 0);
	return e;
}

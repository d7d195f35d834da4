//go:build portaudio && cgo

// ring.c: lock-free SPSC rings between Go and PortAudio callbacks, and the
// callbacks themselves. Nothing here blocks, allocates or calls into Go
// (except ra_gocb_callback, the benchmark's alternative design).

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


#include "ring.h"

#define LOAD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_SEQ_CST)

int64_t ra_now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

ra_ring *ra_ring_new(uint32_t cap, uint32_t channels, uint32_t fade, int output, uint32_t lead) {
	if (cap == 0 || (cap & (cap - 1)) != 0 || channels == 0 || channels > RA_MAX_CHANNELS)
		return NULL;
	ra_ring *r = calloc(1, sizeof(ra_ring));
	if (!r)
		return NULL;
	r->data = calloc((size_t)cap * channels, sizeof(int16_t));
	r->tim = calloc(RA_TIMING_CAP, sizeof(ra_timing));
	if (!r->data || !r->tim) {
		free(r->data);
		free(r->tim);
		free(r);
		return NULL;
	}
	r->cap = cap;
	r->channels = channels;
	r->fade = fade ? fade : 1;
	r->output = output;
	r->lead = lead;
	return r;
}

void ra_ring_free(ra_ring *r) {
	if (!r)
		return;
	free(r->tim);
	free(r->data);
	free(r);
}

static inline uint64_t pub_pos(uint64_t pub) { return pub & RA_POS_MASK; }
static inline uint32_t pub_gen(uint64_t pub) { return (uint32_t)(pub >> RA_POS_BITS); }

// ---- Go side ----

// ra_write appends up to frames interleaved frames to an output ring and
// returns how many fitted. gen is the flush generation (ra_flush_gen) the
// producer loaded before it computed these frames: frames are stale, and
// dropped by the callback, if a flush happened after gen was loaded.
uint32_t ra_write(ra_ring *r, const int16_t *src, uint32_t frames, uint32_t gen) {
	gen &= 0xffff;
	uint64_t w = pub_pos(r->pub); // producer-owned
	if (gen != r->prod_gen) {
		// Everything before w was computed under an older generation.
		r->prod_gen = gen;
		STORE(&r->fresh, ((uint64_t)gen << RA_POS_BITS) | w);
	}
	uint64_t rd = LOAD(&r->rpos);
	uint64_t used = w > rd ? w - rd : 0;
	uint32_t space = used >= r->cap ? 0 : r->cap - (uint32_t)used;
	uint32_t n = frames < space ? frames : space;
	uint32_t ch = r->channels, mask = r->cap - 1;
	for (uint32_t i = 0; i < n;) {
		uint32_t at = (uint32_t)((w + i) & mask);
		uint32_t run = r->cap - at;
		if (run > n - i)
			run = n - i;
		memcpy(r->data + (size_t)at * ch, src + (size_t)i * ch, (size_t)run * ch * sizeof(int16_t));
		i += run;
	}
	STORE(&r->pub, ((uint64_t)gen << RA_POS_BITS) | ((w + n) & RA_POS_MASK));
	return n;
}

// ra_read takes up to frames frames from an input ring.
uint32_t ra_read(ra_ring *r, int16_t *dst, uint32_t frames) {
	uint64_t w = pub_pos(LOAD(&r->pub));
	uint64_t rd = r->rpos; // consumer-owned
	uint64_t avail = w - rd;
	uint32_t n = avail < frames ? (uint32_t)avail : frames;
	uint32_t ch = r->channels, mask = r->cap - 1;
	for (uint32_t i = 0; i < n;) {
		uint32_t at = (uint32_t)((rd + i) & mask);
		uint32_t run = r->cap - at;
		if (run > n - i)
			run = n - i;
		memcpy(dst + (size_t)i * ch, r->data + (size_t)at * ch, (size_t)run * ch * sizeof(int16_t));
		i += run;
	}
	STORE(&r->rpos, rd + n);
	return n;
}

// ra_buffered returns the frames published and not yet consumed.
uint32_t ra_buffered(ra_ring *r) {
	uint64_t w = pub_pos(LOAD(&r->pub));
	uint64_t rd = LOAD(&r->rpos);
	return w > rd ? (uint32_t)(w - rd) : 0;
}

void ra_flush(ra_ring *r) { ADD(&r->flush_req, 1); }
uint32_t ra_flush_gen(ra_ring *r) { return LOAD(&r->flush_req); }

// ra_prime arms the start-up silence for the next callback of a (re)started
// output stream. Call it while the stream is stopped.
void ra_prime(ra_ring *r) { ADD(&r->prime_req, 1); }

// ra_drop discards everything buffered in an input ring (consumer side).
void ra_drop(ra_ring *r) { STORE(&r->rpos, pub_pos(LOAD(&r->pub))); }

void ra_get_stats(ra_ring *r, ra_stats *s) {
	s->callbacks = LOAD(&r->callbacks);
	s->underrun_cbs = LOAD(&r->underrun_cbs);
	s->underrun_frames = LOAD(&r->underrun_frames);
	s->overrun_frames = LOAD(&r->overrun_frames);
	s->xruns = LOAD(&r->xruns);
	s->tim_n = LOAD(&r->tim_n);
	s->last_cb_ns = LOAD(&r->last_cb_ns);
	s->rt_result = LOAD(&r->rt_result);
}

uint32_t ra_timing_read(ra_ring *r, uint64_t *from, ra_timing *dst, uint32_t max, uint64_t *lost) {
	uint64_t n = LOAD(&r->tim_n);
	uint64_t f = *from;
	*lost = 0;
	if (n - f > RA_TIMING_CAP) {
		*lost = n - RA_TIMING_CAP - f;
		f = n - RA_TIMING_CAP;
	}
	uint32_t k = n - f < max ? (uint32_t)(n - f) : max;
	for (uint32_t i = 0; i < k; i++)
		dst[i] = r->tim[(f + i) % RA_TIMING_CAP];
	// Records the callback overwrote while we copied are not trusted.
	uint64_t n2 = LOAD(&r->tim_n);
	uint64_t ok_from = n2 > RA_TIMING_CAP ? n2 - RA_TIMING_CAP : 0;
	uint32_t skip = 0;
	if (ok_from > f) {
		skip = ok_from - f >= k ? k : (uint32_t)(ok_from - f);
		memmove(dst, dst + skip, (size_t)(k - skip) * sizeof(ra_timing));
		*lost += skip;
	}
	*from = f + k;
	return k - skip;
}

int ra_timing_last(ra_ring *r, ra_timing *t) {
	for (int tries = 0; tries < 4; tries++) {
		uint64_t n = LOAD(&r->tim_n);
		if (n == 0)
			return 0;
		*t = r->tim[(n - 1) % RA_TIMING_CAP];
		if (LOAD(&r->tim_n) - n < RA_TIMING_CAP - 1)
			return 1;
	}
	return 0;
}

void ra_set_flush_fade(ra_ring *r, uint32_t frames) { r->flush_max = frames ? frames : 1; }

void ra_set_realtime(ra_ring *r, int prio) {
	r->rt_prio = prio;
	STORE(&r->rt_result, 0);
}

int ra_thread_realtime(int prio) {
	struct sched_param sp;
	memset(&sp, 0, sizeof sp);
	sp.sched_priority = prio;
	return pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
}

// ---- device side ----

static inline void put_frame(ra_ring *r, int16_t *dst, const int16_t *src, int32_t gain) {
	uint32_t ch = r->channels;
	if (gain >= (int32_t)r->fade) {
		for (uint32_t c = 0; c < ch; c++)
			dst[c] = src[c];
	} else {
		for (uint32_t c = 0; c < ch; c++)
			dst[c] = (int16_t)((int32_t)src[c] * gain / (int32_t)r->fade);
	}
}

static inline void conceal(ra_ring *r, int16_t *dst) {
	// Hold the last frame and ramp it to zero: no click on an underrun.
	if (r->gain > 0)
		r->gain--;
	put_frame(r, dst, r->last, r->gain);
	if (!r->short_cb) {
		r->short_cb = 1;
		ADD(&r->underrun_cbs, 1);
	}
}

// stale_end returns the position before which published frames are stale
// (computed before the flush generation g the callback has processed).
static inline uint64_t stale_end(uint32_t g, uint64_t rd, uint64_t pub, uint64_t fresh, uint64_t *w) {
	*w = pub_pos(pub);
	if (pub_gen(pub) != g)
		return *w; // the producer has not seen flush g yet: all stale
	if (pub_gen(fresh) == g && pub_pos(fresh) > rd)
		return pub_pos(fresh); // frames from fresh on were computed after g
	return rd;
}

// ra_out_render produces one callback's worth of output from an output ring:
// start-up silence, the fade-out of a flush, fresh audio, or a concealed
// underrun (the last frame held and faded to silence; audio fades back in).
uint32_t ra_out_render(ra_ring *r, int16_t *out, uint32_t frames) {
	uint32_t ch = r->channels, mask = r->cap - 1;
	r->short_cb = 0;
	uint32_t prime = LOAD(&r->prime_req);
	if (prime != r->seen_prime) {
		r->seen_prime = prime;
		r->prime_left = r->lead;
		r->gain = 0;
		r->fade_left = 0;
		memset(r->last, 0, sizeof r->last);
	}
	// Load the publication before the flush request: a producer that
	// published under generation g loaded flush_req >= g first, so the
	// callback never sees a generation newer than the one it processes.
	uint64_t pub = LOAD(&r->pub);
	uint64_t fresh = LOAD(&r->fresh);
	uint32_t req = LOAD(&r->flush_req);
	if (req != r->seen_flush) {
		r->seen_flush = req;
		// Fade from the current gain to zero, over at most flush_max frames.
		r->flush_from = r->gain;
		r->fade_left = r->gain;
		if (r->flush_max > 0 && r->fade_left > (int32_t)r->flush_max)
			r->fade_left = (int32_t)r->flush_max;
		r->fade_len = r->fade_left;
	}
	uint32_t g = r->seen_flush & 0xffff;
	uint64_t rd = r->rpos, w;
	uint64_t stale = stale_end(g, rd, pub, fresh, &w);
	if (r->fade_left == 0 && rd < stale)
		rd = stale;
	uint64_t conc = 0;
	for (uint32_t i = 0; i < frames; i++) {
		int16_t *dst = out + (size_t)i * ch;
		if (r->prime_left > 0) {
			r->prime_left--;
			memset(dst, 0, ch * sizeof(int16_t));
			continue;
		}
		if (r->fade_left > 0) {
			// Fade out what was playing: stale frames while there are any,
			// else the last frame held.
			if (rd < stale) {
				memcpy(r->last, r->data + (size_t)(rd & mask) * ch, ch * sizeof(int16_t));
				rd++;
			}
			r->fade_left--;
			r->gain = (int32_t)((int64_t)r->flush_from * r->fade_left / r->fade_len);
			put_frame(r, dst, r->last, r->gain);
			if (r->fade_left == 0 && rd < stale)
				rd = stale;
			continue;
		}
		if (rd < w) {
			const int16_t *src = r->data + (size_t)(rd & mask) * ch;
			rd++;
			if (r->gain < (int32_t)r->fade)
				r->gain++;
			memcpy(r->last, src, ch * sizeof(int16_t));
			put_frame(r, dst, src, r->gain);
			continue;
		}
		conceal(r, dst);
		conc++;
	}
	if (conc)
		ADD(&r->underrun_frames, conc);
	STORE(&r->rpos, rd);
	return (uint32_t)conc;
}

// ra_in_capture appends one callback's input to an input ring, dropping what
// does not fit (counted).
void ra_in_capture(ra_ring *r, const int16_t *in, uint32_t frames) {
	uint64_t w = r->pub; // producer-owned
	uint64_t rd = LOAD(&r->rpos);
	uint64_t used = w - rd;
	uint32_t space = used >= r->cap ? 0 : r->cap - (uint32_t)used;
	uint32_t n = frames < space ? frames : space;
	uint32_t ch = r->channels, mask = r->cap - 1;
	if (in == NULL) {
		n = 0;
	}
	for (uint32_t i = 0; i < n;) {
		uint32_t at = (uint32_t)((w + i) & mask);
		uint32_t run = r->cap - at;
		if (run > n - i)
			run = n - i;
		memcpy(r->data + (size_t)at * ch, in + (size_t)i * ch, (size_t)run * ch * sizeof(int16_t));
		i += run;
	}
	if (n < frames && in != NULL)
		ADD(&r->overrun_frames, frames - n);
	STORE(&r->pub, w + n);
}

void ra_record_timing(ra_ring *r, int64_t start_ns, const PaStreamCallbackTimeInfo *ti,
	PaStreamCallbackFlags flags, uint32_t frames, uint32_t dry) {
	uint64_t n = r->tim_n; // callback-owned
	ra_timing *t = &r->tim[n % RA_TIMING_CAP];
	t->start_ns = start_ns;
	t->current = ti ? ti->currentTime : 0;
	t->buf_time = ti ? (r->output ? ti->outputBufferDacTime : ti->inputBufferAdcTime) : 0;
	t->frames = frames;
	t->flags = (uint32_t)flags;
	t->buffered = ra_buffered(r);
	t->dry = dry;
	STORE(&r->tim_n, n + 1);
}

// maybe_realtime moves the callback thread to SCHED_FIFO on the first
// callback of a stream that asks for it, once; the result is published for
// Go to log (a refused request is not retried).
static inline void maybe_realtime(ra_ring *r) {
	if (r->rt_prio <= 0 || LOAD(&r->rt_result) != 0)
		return;
	int e = ra_thread_realtime(r->rt_prio);
	STORE(&r->rt_result, e == 0 ? 1 : -(e ? e : EPERM));
}

static inline void record_callback(ra_ring *r, int64_t t0, const PaStreamCallbackTimeInfo *ti,
	PaStreamCallbackFlags flags, uint32_t frames, uint32_t dry) {
	if (flags & (paOutputUnderflow | paOutputOverflow | paInputUnderflow | paInputOverflow))
		ADD(&r->xruns, 1);
	ra_record_timing(r, t0, ti, flags, frames, dry);
	STORE(&r->last_cb_ns, t0);
	ADD(&r->callbacks, 1);
}

int ra_out_callback(const void *in, void *out, unsigned long frames,
	const PaStreamCallbackTimeInfo *ti, PaStreamCallbackFlags flags, void *userData) {
	(void)in;
	int64_t t0 = ra_now_ns();
	ra_ring *r = userData;
	maybe_realtime(r);
	uint32_t dry = ra_out_render(r, out, (uint32_t)frames);
	record_callback(r, t0, ti, flags, (uint32_t)frames, dry);
	return paContinue;
}

int ra_in_callback(const void *in, void *out, unsigned long frames,
	const PaStreamCallbackTimeInfo *ti, PaStreamCallbackFlags flags, void *userData) {
	(void)out;
	int64_t t0 = ra_now_ns();
	ra_ring *r = userData;
	maybe_realtime(r);
	ra_in_capture(r, in, (uint32_t)frames);
	record_callback(r, t0, ti, flags, (uint32_t)frames, 0);
	return paContinue;
}

// ---- library noise ----

static void quiet_alsa(const char *file, int line, const char *function, int err, const char *fmt, ...) {
	(void)file; (void)line; (void)function; (void)err; (void)fmt;
}
static void quiet_jack(const char *msg) { (void)msg; }

// ra_quiet_libraries silences the ALSA and JACK libraries' error printing
// (device probing prints dozens of lines for absent cards and servers). The
// symbols are looked up at run time so that neither library is a build
// dependency.
void ra_quiet_libraries(void) {
	typedef int (*alsa_set)(void *);
	typedef void (*jack_set)(void (*)(const char *));
	alsa_set a = (alsa_set)dlsym(RTLD_DEFAULT, "snd_lib_error_set_handler");
	if (a)
		a((void *)quiet_alsa);
	jack_set j = (jack_set)dlsym(RTLD_DEFAULT, "jack_set_error_function");
	if (j)
		j(quiet_jack);
	j = (jack_set)dlsym(RTLD_DEFAULT, "jack_set_info_function");
	if (j)
		j(quiet_jack);
}

// ra_open opens a callback stream on device dev whose callback exchanges
// audio with r: ra_out_callback for output rings, ra_in_callback for input.
PaError ra_open(PaStream **s, int dev, int channels, double rate, unsigned long period, double latency, int rt_prio, ra_ring *r) {
	PaStreamParameters p;
	memset(&p, 0, sizeof p);
	p.device = dev;
	p.channelCount = channels;
	p.sampleFormat = paInt16;
	p.suggestedLatency = latency;
	PaError e;
	if (r->output)
		e = Pa_OpenStream(s, NULL, &p, rate, period, paClipOff | paDitherOff | paPrimeOutputBuffersUsingStreamCallback,
			ra_out_callback, r);
	else
		e = Pa_OpenStream(s, &p, NULL, rate, period, paClipOff | paDitherOff, ra_in_callback, r);
	if (e == paNoError) {
		ra_set_realtime(r, rt_prio);
		ra_set_flush_fade(r, (uint32_t)(rate * RA_FLUSH_FADE_MS / 1000));
	}
	return e;
}

double ra_stream_latency(PaStream *s, int output) {
	const PaStreamInfo *i = Pa_GetStreamInfo(s);
	if (!i)
		return 0;
	return output ? i->outputLatency : i->inputLatency;
}

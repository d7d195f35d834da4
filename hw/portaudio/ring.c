//go:build portaudio && cgo

// ring.c: lock-free SPSC rings between Go and PortAudio callbacks, and the
// callbacks themselves. Nothing here blocks, allocates or calls into Go
// (except ra_gocb_callback, the benchmark's alternative design).

#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pa_linux_alsa.h>

#include "ring.h"
#include "_cgo_export.h"

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
	if (!r->data) {
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
	free(r->lat);
	free(r->data);
	free(r);
}

// ra_ring_enable_lateness allocates a log of n callback durations. Call it
// before the stream starts.
int ra_ring_enable_lateness(ra_ring *r, uint32_t n) {
	r->lat = calloc(n, sizeof(int64_t));
	if (!r->lat)
		return -1;
	r->lat_cap = n;
	return 0;
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
	s->lat_n = LOAD(&r->lat_n);
	s->last_cb_ns = LOAD(&r->last_cb_ns);
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
static inline uint64_t stale_end(ra_ring *r, uint32_t g, uint64_t rd, uint64_t *w) {
	uint64_t pub = LOAD(&r->pub);
	uint64_t fresh = LOAD(&r->fresh);
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
void ra_out_render(ra_ring *r, int16_t *out, uint32_t frames) {
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
	uint32_t req = LOAD(&r->flush_req);
	if (req != r->seen_flush) {
		r->seen_flush = req;
		r->fade_left = r->gain; // fade from the current gain to zero
	}
	uint32_t g = r->seen_flush & 0xffff;
	uint64_t rd = r->rpos, w;
	uint64_t stale = stale_end(r, g, rd, &w);
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
			r->gain = r->fade_left;
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

static inline void record_callback(ra_ring *r, int64_t t0, PaStreamCallbackFlags flags) {
	if (flags & (paOutputUnderflow | paOutputOverflow | paInputUnderflow | paInputOverflow))
		ADD(&r->xruns, 1);
	int64_t t1 = ra_now_ns();
	if (r->lat) {
		uint64_t n = r->lat_n;
		r->lat[n % r->lat_cap] = t1 - t0;
		STORE(&r->lat_n, n + 1);
	}
	STORE(&r->last_cb_ns, t1);
	ADD(&r->callbacks, 1);
}

int ra_out_callback(const void *in, void *out, unsigned long frames,
	const PaStreamCallbackTimeInfo *ti, PaStreamCallbackFlags flags, void *userData) {
	(void)in;
	(void)ti;
	int64_t t0 = ra_now_ns();
	ra_ring *r = userData;
	ra_out_render(r, out, (uint32_t)frames);
	record_callback(r, t0, flags);
	return paContinue;
}

int ra_in_callback(const void *in, void *out, unsigned long frames,
	const PaStreamCallbackTimeInfo *ti, PaStreamCallbackFlags flags, void *userData) {
	(void)out;
	(void)ti;
	int64_t t0 = ra_now_ns();
	ra_ring *r = userData;
	ra_in_capture(r, in, (uint32_t)frames);
	record_callback(r, t0, flags);
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

// ---- benchmark alternatives ----

int ra_gocb_callback(const void *in, void *out, unsigned long frames,
	const PaStreamCallbackTimeInfo *ti, PaStreamCallbackFlags flags, void *userData) {
	(void)in;
	(void)ti;
	int64_t t0 = ra_now_ns();
	ra_gocb *g = userData;
	raGoFill(g->handle, out, (int)frames, g->channels);
	if (flags & (paOutputUnderflow | paOutputOverflow))
		g->xruns++;
	int64_t t1 = ra_now_ns();
	if (g->lat) {
		uint64_t n = g->lat_n;
		g->lat[n % g->lat_cap] = t1 - t0;
		STORE(&g->lat_n, n + 1);
	}
	return paContinue;
}

PaError ra_write_blocking(PaStream *s, const int16_t *buf, unsigned long frames, int64_t *call_ns, int64_t *ret_ns) {
	*call_ns = ra_now_ns();
	PaError e = Pa_WriteStream(s, buf, frames);
	*ret_ns = ra_now_ns();
	return e;
}

// ra_open opens a callback stream on device dev whose callback exchanges
// audio with r: ra_out_callback for output rings, ra_in_callback for input.
PaError ra_open(PaStream **s, int dev, int channels, double rate, unsigned long period, double latency, int rt, ra_ring *r) {
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
	if (e == paNoError && rt)
		ra_realtime(*s, dev);
	return e;
}

// ra_realtime asks PortAudio to run an ALSA stream's callback thread with
// SCHED_FIFO. The callback never enters Go, so a real-time thread cannot be
// held up by the Go scheduler; without the privilege (CAP_SYS_NICE or an
// RLIMIT_RTPRIO) PortAudio keeps the normal priority.
void ra_realtime(PaStream *s, int dev) {
	const PaDeviceInfo *d = Pa_GetDeviceInfo(dev);
	if (!d)
		return;
	const PaHostApiInfo *h = Pa_GetHostApiInfo(d->hostApi);
	if (h && h->type == paALSA)
		PaAlsa_EnableRealtimeScheduling(s, 1);
}

// ra_open_gocb opens the benchmark's callback-into-Go output stream.
PaError ra_open_gocb(PaStream **s, int dev, int channels, double rate, unsigned long period, double latency, int rt, ra_gocb *g) {
	PaStreamParameters p;
	memset(&p, 0, sizeof p);
	p.device = dev;
	p.channelCount = channels;
	p.sampleFormat = paInt16;
	p.suggestedLatency = latency;
	PaError e = Pa_OpenStream(s, NULL, &p, rate, period, paClipOff | paDitherOff | paPrimeOutputBuffersUsingStreamCallback,
		ra_gocb_callback, g);
	if (e == paNoError && rt)
		ra_realtime(*s, dev);
	return e;
}

// ra_open_blocking opens the benchmark's blocking-write output stream.
PaError ra_open_blocking(PaStream **s, int dev, int channels, double rate, unsigned long period, double latency) {
	PaStreamParameters p;
	memset(&p, 0, sizeof p);
	p.device = dev;
	p.channelCount = channels;
	p.sampleFormat = paInt16;
	p.suggestedLatency = latency;
	return Pa_OpenStream(s, NULL, &p, rate, period, paClipOff | paDitherOff, NULL, NULL);
}

double ra_stream_latency(PaStream *s, int output) {
	const PaStreamInfo *i = Pa_GetStreamInfo(s);
	if (!i)
		return 0;
	return output ? i->outputLatency : i->inputLatency;
}

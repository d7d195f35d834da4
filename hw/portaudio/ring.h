//go:build portaudio && cgo

// ring.h: the single-producer single-consumer rings between Go and the
// PortAudio callbacks of package portaudio. See ring.c and doc.go.
#ifndef ROBOT_AGENT_RING_H
#define ROBOT_AGENT_RING_H

#include <stdint.h>
#include <portaudio.h>

#define RA_MAX_CHANNELS 8
#define RA_POS_BITS 48
#define RA_POS_MASK ((((uint64_t)1) << RA_POS_BITS) - 1)

// ra_ring is shared between one Go goroutine and one PortAudio callback
// thread. Fields marked "shared" are only accessed with __atomic builtins
// (C) or sync/atomic (Go, through the accessor functions below).
typedef struct ra_ring {
	// shared
	uint64_t pub;             // output: flush gen << 48 | frames written (Go); input: frames written (callback)
	uint64_t fresh;           // output: gen << 48 | position from which frames carry that gen (Go)
	uint64_t rpos;            // frames read; output: callback; input: Go
	uint32_t flush_req;       // output: bumped by ra_flush (any thread)
	uint32_t prime_req;       // bumped by ra_prime (Go, stream stopped)
	uint64_t callbacks;       // callbacks so far
	uint64_t underrun_cbs;    // output callbacks that ran short of fresh audio
	uint64_t underrun_frames; // output frames concealed (faded hold or silence)
	uint64_t overrun_frames;  // input frames dropped because Go fell behind
	uint64_t xruns;           // callbacks whose status flags reported an under/overflow
	int64_t last_cb_ns;       // CLOCK_MONOTONIC of the last callback
	uint64_t lat_n;           // lateness samples recorded
	int64_t *lat;             // optional: duration of each callback, ns (bench)
	uint32_t lat_cap;

	// fixed at creation
	uint32_t cap;      // frames, a power of two
	uint32_t channels;
	uint32_t fade;     // frames of a fade (>= 1)
	int output;

	// producer-private (output)
	uint32_t prod_gen;

	// callback-private (output)
	uint32_t seen_flush;
	uint32_t seen_prime;
	uint32_t prime_left; // frames of silence still to emit before the ring
	uint32_t lead;       // prime length in frames
	int32_t gain;        // 0..fade
	int32_t fade_left;   // frames left in a flush fade-out
	int short_cb;        // this callback already counted as an underrun
	int16_t last[RA_MAX_CHANNELS];

	int16_t *data; // cap * channels
} ra_ring;

ra_ring *ra_ring_new(uint32_t cap, uint32_t channels, uint32_t fade, int output, uint32_t lead);
void ra_ring_free(ra_ring *r);
int ra_ring_enable_lateness(ra_ring *r, uint32_t n);

// Go side (producer of output rings, consumer of input rings).
uint32_t ra_write(ra_ring *r, const int16_t *src, uint32_t frames, uint32_t gen);
uint32_t ra_read(ra_ring *r, int16_t *dst, uint32_t frames);
uint32_t ra_buffered(ra_ring *r);
void ra_flush(ra_ring *r);
uint32_t ra_flush_gen(ra_ring *r);
void ra_prime(ra_ring *r);
void ra_drop(ra_ring *r);

typedef struct ra_stats {
	uint64_t callbacks, underrun_cbs, underrun_frames, overrun_frames, xruns, lat_n;
	int64_t last_cb_ns;
} ra_stats;
void ra_get_stats(ra_ring *r, ra_stats *s);
int64_t ra_now_ns(void);

// Device side, exposed for tests and benchmarks: one callback's worth.
void ra_out_render(ra_ring *r, int16_t *out, uint32_t frames);
void ra_in_capture(ra_ring *r, const int16_t *in, uint32_t frames);

// PortAudio callbacks; userData is the ra_ring.
int ra_out_callback(const void *in, void *out, unsigned long frames,
	const PaStreamCallbackTimeInfo *ti, PaStreamCallbackFlags flags, void *userData);
int ra_in_callback(const void *in, void *out, unsigned long frames,
	const PaStreamCallbackTimeInfo *ti, PaStreamCallbackFlags flags, void *userData);

// Quiet the ALSA and JACK libraries' stderr chatter during device probing.
void ra_quiet_libraries(void);

// Benchmark alternative: PortAudio callback into Go (see handoff.go).
typedef struct ra_gocb {
	uintptr_t handle;
	int channels;
	int64_t *lat;
	uint32_t lat_cap;
	uint64_t lat_n;
	uint64_t xruns;
} ra_gocb;
int ra_gocb_callback(const void *in, void *out, unsigned long frames,
	const PaStreamCallbackTimeInfo *ti, PaStreamCallbackFlags flags, void *userData);
// Benchmark alternative: blocking writes; records the time Pa_WriteStream
// returned into *ret_ns and the time it was called into *call_ns.
PaError ra_write_blocking(PaStream *s, const int16_t *buf, unsigned long frames, int64_t *call_ns, int64_t *ret_ns);

PaError ra_open(PaStream **s, int dev, int channels, double rate, unsigned long period, double latency, int rt, ra_ring *r);
void ra_realtime(PaStream *s, int dev);
PaError ra_open_gocb(PaStream **s, int dev, int channels, double rate, unsigned long period, double latency, int rt, ra_gocb *g);
PaError ra_open_blocking(PaStream **s, int dev, int channels, double rate, unsigned long period, double latency);
double ra_stream_latency(PaStream *s, int output);

#endif

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
#define RA_FLUSH_FADE_MS 4 // a flush fades out within this (hw.Flusher)
#define RA_TIMING_CAP 1024 // callback records kept (10 s at 10 ms periods)

// ra_timing is one device callback as the callback saw it: its start on
// CLOCK_MONOTONIC, PortAudio's time info (seconds on the stream's clock)
// and status flags, and the ring's state. Written by the callback into
// ra_ring.tim, read by Go (ra_timing_read).
typedef struct ra_timing {
	int64_t start_ns;   // CLOCK_MONOTONIC at callback entry
	double current;     // timeInfo->currentTime
	double buf_time;    // output: outputBufferDacTime; input: inputBufferAdcTime
	uint32_t frames;    // frames in this callback
	uint32_t flags;     // PaStreamCallbackFlags
	uint32_t buffered;  // ring frames after the callback (output: queued; input: unread)
	uint32_t dry;       // output frames concealed because the ring ran dry
} ra_timing;

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
	uint64_t tim_n;           // callback records written to tim (callback)
	int32_t rt_result;        // real-time request: 0 none yet, 1 granted, -errno refused (callback)
	int32_t rt_prio;          // SCHED_FIFO priority the callback asks for (0: none); set before start
	ra_timing *tim;           // RA_TIMING_CAP records, slot = index % RA_TIMING_CAP

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
	int32_t fade_len;    // frames of the current flush fade-out
	int32_t flush_from;  // gain when the flush fade-out began
	uint32_t flush_max;  // longest flush fade-out in frames (0: fade); set by ra_open
	int short_cb;        // this callback already counted as an underrun
	int16_t last[RA_MAX_CHANNELS];

	int16_t *data; // cap * channels
} ra_ring;

ra_ring *ra_ring_new(uint32_t cap, uint32_t channels, uint32_t fade, int output, uint32_t lead);
void ra_ring_free(ra_ring *r);

// Go side (producer of output rings, consumer of input rings).
uint32_t ra_write(ra_ring *r, const int16_t *src, uint32_t frames, uint32_t gen);
uint32_t ra_read(ra_ring *r, int16_t *dst, uint32_t frames);
uint32_t ra_buffered(ra_ring *r);
void ra_flush(ra_ring *r);
uint32_t ra_flush_gen(ra_ring *r);
void ra_prime(ra_ring *r);
void ra_drop(ra_ring *r);

typedef struct ra_stats {
	uint64_t callbacks, underrun_cbs, underrun_frames, overrun_frames, xruns, tim_n;
	int64_t last_cb_ns;
	int32_t rt_result;
} ra_stats;
void ra_get_stats(ra_ring *r, ra_stats *s);
// ra_timing_read copies the records from index *from on (at most max) into
// dst, skipping records already overwritten; it returns how many it copied
// and advances *from past them. *lost gets the number skipped.
uint32_t ra_timing_read(ra_ring *r, uint64_t *from, ra_timing *dst, uint32_t max, uint64_t *lost);
// ra_timing_last copies the newest record into *t; 0 if there is none.
// Any thread.
int ra_timing_last(ra_ring *r, ra_timing *t);
// ra_set_flush_fade caps a flush's fade-out at frames (stream stopped).
void ra_set_flush_fade(ra_ring *r, uint32_t frames);
// ra_set_realtime makes the next callback of the ring's stream move its
// thread to SCHED_FIFO at prio (0: leave it alone). Call before starting.
void ra_set_realtime(ra_ring *r, int prio);
// ra_thread_realtime moves the calling thread to SCHED_FIFO at prio and
// returns 0 or an errno.
int ra_thread_realtime(int prio);
int64_t ra_now_ns(void);

// Device side, exposed for tests and benchmarks: one callback's worth.
// ra_out_render returns the frames concealed (ring ran dry).
uint32_t ra_out_render(ra_ring *r, int16_t *out, uint32_t frames);
void ra_in_capture(ra_ring *r, const int16_t *in, uint32_t frames);
// ra_record_timing appends one callback record (what the callbacks do),
// exposed for tests.
void ra_record_timing(ra_ring *r, int64_t start_ns, const PaStreamCallbackTimeInfo *ti,
	PaStreamCallbackFlags flags, uint32_t frames, uint32_t dry);

// PortAudio callbacks; userData is the ra_ring.
int ra_out_callback(const void *in, void *out, unsigned long frames,
	const PaStreamCallbackTimeInfo *ti, PaStreamCallbackFlags flags, void *userData);
int ra_in_callback(const void *in, void *out, unsigned long frames,
	const PaStreamCallbackTimeInfo *ti, PaStreamCallbackFlags flags, void *userData);

// Quiet the ALSA and JACK libraries' stderr chatter during device probing.
void ra_quiet_libraries(void);

PaError ra_open(PaStream **s, int dev, int channels, double rate, unsigned long period, double latency, int rt_prio, ra_ring *r);
double ra_stream_latency(PaStream *s, int output);

#endif

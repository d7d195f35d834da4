#!/usr/bin/env python3
"""make-impulses.py OUT.wav [SEED] [SECONDS]: an impulsive room noise for
duplex-bench --vad-noise-wav, made independently of package room's "knocks"
kind (other event models, other background) so that a transient guard tuned
on one is checked on the other.

Events, one every 0.5..2.5 s: a door slam (fast attack, 10 ms then a 150 ms
reverberant tail), footsteps (3..6 low thuds half a second apart), a clap
(3..8 ms noise burst in a reverberant room), a dropped object bouncing
(3..5 impacts at shrinking intervals), typing (a burst of short clicks).
Background: brown-ish noise 45 dB under the loudest events. 16 kHz mono
16-bit. Pure Python (no numpy), a few seconds per minute of noise.
"""
import math
import random
import struct
import sys
import wave

RATE = 16000


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 120.0
    rng = random.Random(seed)
    n = int(seconds * RATE)
    x = [0.0] * n

    def add_burst(at, amp, tau, colour=0.0, tail_amp=0.0, tail_tau=0.0):
        """Noise burst at sample at: amplitude amp decaying with tau (s),
        optionally a reverberant tail; colour 0..1 low-passes it."""
        lp = 0.0
        length = int(RATE * max(tau, tail_tau) * 8)
        for i in range(max(length, 1)):
            j = at + i
            if j >= n:
                break
            t = i / RATE
            env = amp * math.exp(-t / tau)
            if tail_amp:
                env += tail_amp * math.exp(-t / tail_tau) * min(t / 0.005, 1.0)
            w = rng.gauss(0, 1)
            lp += (1 - colour) * (w - lp)
            x[j] += env * lp

    def add_thud(at, amp, hz, tau):
        for i in range(int(RATE * tau * 8)):
            j = at + i
            if j >= n:
                break
            t = i / RATE
            x[j] += amp * math.exp(-t / tau) * math.sin(2 * math.pi * hz * t) * math.sqrt(2)

    at = int(RATE * rng.uniform(0.3, 1.0))
    while at < n:
        amp = 10 ** (-rng.uniform(0, 10) / 20)
        kind = rng.choice(["door", "steps", "clap", "drop", "typing"])
        if kind == "door":
            add_burst(at, amp, 0.010, colour=0.7, tail_amp=amp * 0.18, tail_tau=0.15)
        elif kind == "steps":
            hz = rng.uniform(60, 120)
            for k in range(rng.randint(3, 6)):
                add_thud(at + int(k * RATE * rng.uniform(0.45, 0.6)), amp * rng.uniform(0.6, 1.0), hz, 0.03)
        elif kind == "clap":
            add_burst(at, amp, rng.uniform(0.003, 0.008), colour=0.2, tail_amp=amp * 0.05, tail_tau=0.2)
        elif kind == "drop":
            gap, a = rng.uniform(0.15, 0.25), amp
            off = 0
            for _ in range(rng.randint(3, 5)):
                add_burst(at + off, a, 0.006, colour=0.4)
                off += int(gap * RATE)
                gap *= 0.6
                a *= 0.6
        else:  # typing
            off = 0
            for _ in range(rng.randint(4, 10)):
                add_burst(at + off, amp * 0.3, 0.002, colour=0.1)
                off += int(RATE * rng.uniform(0.08, 0.2))
        at += int(RATE * rng.uniform(0.5, 2.5))

    # Brown-ish background 45 dB under an event of amplitude 1.
    b = 0.0
    floor = 10 ** (-45 / 20)
    for j in range(n):
        b = 0.98 * b + rng.gauss(0, 1) * 0.2
        x[j] += floor * b / 1.0

    peak = max(abs(v) for v in x) or 1.0
    scale = 0.9 * 32767 / peak
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(b"".join(struct.pack("<h", int(max(-32768, min(32767, round(v * scale))))) for v in x))


if __name__ == "__main__":
    main()

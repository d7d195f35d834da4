//go:build opus && cgo

package uplink

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/codec/opus"
	"github.com/robot-agent/robot-agent/codec/quality"
	"github.com/robot-agent/robot-agent/playback"
	"github.com/robot-agent/robot-agent/protocol"
)

// lossTrace returns which of n packets are lost: independent losses with
// probability random, plus bursts (a Gilbert-Elliott bad state entered with
// probability burstStart per packet, left with probability 1/burstLen,
// losing every packet while in it). Deterministic for a seed.
func lossTrace(n int, random, burstStart float64, burstLen int, seed uint64) []bool {
	rng := rand.New(rand.NewPCG(seed, 15))
	lost := make([]bool, n)
	bad := false
	for i := range lost {
		if bad {
			bad = rng.Float64() >= 1/float64(burstLen)
		} else {
			bad = rng.Float64() < burstStart
		}
		lost[i] = bad || rng.Float64() < random
	}
	return lost
}

const frame24 = 480 // 20 ms at 24 kHz

// playPCM plays ref through the real player as a PCM gateway would send
// it, 20 ms per frame, each frame arriving just when due: a lost frame is
// a 20 ms underrun that the player conceals (fade out, silence, fade in).
func playPCM(tb testing.TB, ref []int16, lost []bool) []int16 {
	p := newBenchPlayer(tb)
	le := make([]byte, 2*frame24)
	out := make([]int16, 0, len(ref))
	buf := make([]int16, frame24)
	for i := range lost {
		if !lost[i] {
			for j, v := range ref[i*frame24 : (i+1)*frame24] {
				le[2*j], le[2*j+1] = byte(v), byte(uint16(v)>>8)
			}
			p.PushPCM(1, le)
		}
		p.Fill(buf)
		out = append(out, buf...)
	}
	return out
}

// playOpus plays the same frames as Opus packets through DecodingSink in
// front of the same player. Packets arrive lookahead frames before they
// are due (the player's default 60 ms prebuffer); a lost packet is
// concealed when the next one arrives (PLC, and FEC from that packet).
func playOpus(tb testing.TB, pkts [][]byte, lost []bool, lookahead int) []int16 {
	p := newBenchPlayer(tb)
	s := NewDecodingSink(p, func() (PacketDecoder, error) { return opus.NewDecoder(24000) }, nil, nil)
	if err := s.SetDownFormat(protocol.AudioParams{Format: protocol.FormatOpus, SampleRate: 24000, Channels: 1}); err != nil {
		tb.Fatal(err)
	}
	push := func(i int) {
		if i < len(pkts) && !lost[i] {
			s.PushPacket(1, uint32(i), pkts[i])
		}
	}
	for i := 0; i < lookahead; i++ {
		push(i)
	}
	out := make([]int16, 0, len(pkts)*frame24)
	buf := make([]int16, frame24)
	for i := range pkts {
		push(i + lookahead)
		p.Fill(buf)
		out = append(out, buf...)
	}
	return out
}

func newBenchPlayer(tb testing.TB) *playback.Player {
	p, err := playback.New(playback.Config{PrebufferMS: 1, Slots: 1 << 12}, clock.NewFake(), nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

type concealResult struct {
	lsdAll, ncc     float64
	lsdLost, lsdOwn float64 // over the lost packets: vs the original, vs the variant's own lossless output
	lostFrames      int
	out             []int16
}

// align removes the delay of out against ref (codec, lookahead).
func align(ref, out []int16) []int16 {
	d, _ := quality.Delay(ref, out, 24000/5, 24000)
	al := out[d:]
	return al[:min(len(ref), len(al))]
}

// judge scores out (aligned) against ref over all speech and, exactly
// over the lost packets, against ref and against own (the same path
// without loss), which isolates the concealment from the codec.
func judge(ref, own, out []int16, lost []bool) concealResult {
	var starts []int
	for i, l := range lost {
		if l {
			starts = append(starts, i*frame24)
		}
	}
	n := min(len(ref), len(out), len(own))
	r := concealResult{
		lsdAll: quality.LSD(ref[:n], out[:n], 24000, 12000, nil),
		ncc:    quality.NCC(ref[:n], out[:n]),
		out:    out[:n],
	}
	r.lsdLost, r.lostFrames = quality.SegmentLSD(ref[:n], out[:n], 24000, 12000, starts, frame24)
	r.lsdOwn, _ = quality.SegmentLSD(own[:n], out[:n], 24000, 12000, starts, frame24)
	return r
}

func encodeTTS(tb testing.TB, ref []int16, fec bool) [][]byte {
	enc, err := opus.NewEncoder(opus.EncoderConfig{SampleRate: 24000, Bitrate: opus.DefaultDownBitrate, FEC: fec, LossPercent: 10})
	if err != nil {
		tb.Fatal(err)
	}
	var pkts [][]byte
	buf := make([]byte, opus.MaxPacket)
	for off := 0; off+frame24 <= len(ref); off += frame24 {
		n, err := enc.Encode(ref[off:off+frame24], buf)
		if err != nil {
			tb.Fatal(err)
		}
		pkts = append(pkts, append([]byte(nil), buf[:n]...))
	}
	return pkts
}

// BenchmarkConcealment compares, on one lossy trace (5 % random loss plus
// bursts, same trace for every variant) applied to 20 ms frames of
// espeak-ng speech at 24 kHz: the PCM player's concealment of missing
// audio, Opus with packet-loss concealment only, and Opus with in-band FEC
// as well; and the lossless Opus decode for reference. It reports the
// log-spectral distance over all speech and over the frames around lost
// packets, and the waveform NCC, and writes every version to out/opus/.
func BenchmarkConcealment(b *testing.B) {
	ref, err := quality.Speech(quality.SpeechText+" "+quality.SpeechText, 24000)
	if errors.Is(err, quality.ErrNoSpeechSynth) {
		b.Skip(err)
	}
	if err != nil {
		b.Fatal(err)
	}
	ref = ref[:len(ref)/frame24*frame24]
	n := len(ref) / frame24
	lost := lossTrace(n, 0.05, 0.01, 3, 42)
	nl := 0
	for _, l := range lost {
		if l {
			nl++
		}
	}
	none := make([]bool, n)
	withFEC, noFEC := encodeTTS(b, ref, true), encodeTTS(b, ref, false)
	dir := filepath.Join("..", "out", "opus")
	quality.WriteWAV(filepath.Join(dir, "conceal-original.wav"), ref, 24000)
	opusClean := align(ref, playOpus(b, withFEC, none, 10))
	for _, v := range []struct {
		name string
		own  []int16
		run  func() []int16
	}{
		{"pcm-player", ref, func() []int16 { return playPCM(b, ref, lost) }},
		{"opus-plc", opusClean, func() []int16 { return playOpus(b, noFEC, lost, 10) }},
		{"opus-plc-fec", opusClean, func() []int16 { return playOpus(b, withFEC, lost, 10) }},
		{"opus-lossless", opusClean, func() []int16 { return playOpus(b, withFEC, none, 10) }},
	} {
		b.Run(v.name, func(b *testing.B) {
			var r concealResult
			for i := 0; i < b.N; i++ {
				r = judge(ref, v.own, align(ref, v.run()), lost)
			}
			quality.WriteWAV(filepath.Join(dir, "conceal-"+v.name+".wav"), r.out, 24000)
			b.ReportMetric(100*float64(nl)/float64(n), "loss_%")
			b.ReportMetric(float64(r.lostFrames), "lost_speech_frames")
			b.ReportMetric(r.lsdAll, "LSD_dB")
			b.ReportMetric(r.ncc, "NCC")
			b.ReportMetric(r.lsdLost, "LSD_lost_dB")
			b.ReportMetric(r.lsdOwn, "LSD_lost_vs_lossless_dB")
		})
	}
}

// TestConcealmentBeatsSilence: on a lossy trace, Opus concealment through
// the DecodingSink is closer to the original around the lost packets than
// the PCM player's fade-to-silence, and FEC is no worse than PLC alone.
func TestConcealmentBeatsSilence(t *testing.T) {
	ref, err := quality.Speech(quality.SpeechText, 24000)
	if errors.Is(err, quality.ErrNoSpeechSynth) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	ref = ref[:len(ref)/frame24*frame24]
	lost := lossTrace(len(ref)/frame24, 0.05, 0.01, 3, 7)
	pcm := judge(ref, ref, align(ref, playPCM(t, ref, lost)), lost)
	clean := align(ref, playOpus(t, encodeTTS(t, ref, true), make([]bool, len(lost)), 10))
	plc := judge(ref, clean, align(ref, playOpus(t, encodeTTS(t, ref, false), lost, 10)), lost)
	fec := judge(ref, clean, align(ref, playOpus(t, encodeTTS(t, ref, true), lost, 10)), lost)
	t.Logf("LSD over the %d lost speech packets vs the original: PCM player %.2f dB, Opus PLC %.2f dB, Opus PLC+FEC %.2f dB", pcm.lostFrames, pcm.lsdLost, plc.lsdLost, fec.lsdLost)
	if !(plc.lsdLost < pcm.lsdLost) || fec.lsdLost > plc.lsdLost+0.5 {
		t.Errorf("want Opus PLC below the PCM player and FEC no worse than PLC")
	}
}

// TestOpusPathsNoAllocs: the real encoder in the write pump's encode step
// and the real decoder through DecodingSink into the player (with loss,
// so PLC and FEC run too) do not allocate.
func TestOpusPathsNoAllocs(t *testing.T) {
	c, err := New(Config{URL: "ws://127.0.0.1:1/v1/robot", DeviceID: "r"}, clock.NewReal(), nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := opus.NewEncoder(opus.EncoderConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c.micEnc = micCodec{enc: enc, pcm: make([]int16, 320), out: make([]byte, protocol.HeaderSize+maxPacket), errors: c.micEnc.errors}
	pcm := make([]byte, 640)
	for i := range pcm {
		pcm[i] = byte(i * 7)
	}
	f := protocol.AppendFrame(nil, protocol.Header{Kind: protocol.KindMicAudio, Stream: 1}, pcm)
	if n := testing.AllocsPerRun(200, func() { c.encodeMic(f) }); n != 0 {
		t.Errorf("encodeMic with libopus allocates %v times", n)
	}

	p := newBenchPlayer(t)
	s := NewDecodingSink(p, func() (PacketDecoder, error) { return opus.NewDecoder(24000) }, nil, nil)
	s.SetDownFormat(protocol.AudioParams{Format: protocol.FormatOpus, SampleRate: 24000, Channels: 1})
	ref := make([]int16, 24000)
	for i := range ref {
		ref[i] = int16(i*13%2000 - 1000)
	}
	pkts := encodeTTS(t, ref, true)
	out := make([]int16, frame24)
	i := 0
	n := testing.AllocsPerRun(200, func() {
		i += 1 + i%3/2 // every third step skips a packet: concealment runs
		s.PushPacket(1, uint32(i), pkts[i%len(pkts)])
		p.Fill(out)
		p.Fill(out)
	})
	if n != 0 {
		t.Errorf("PushPacket with libopus allocates %v times", n)
	}
	if s.concealed.Value() == 0 {
		t.Error("no concealment ran")
	}
}

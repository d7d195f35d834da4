package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"time"

	"github.com/robot-agent/robot-agent/capture"
	"github.com/robot-agent/robot-agent/clipguard"
	"github.com/robot-agent/robot-agent/metrics"
)

// writeSummary prints what the run did, for people.
func (a *agent) writeSummary(w io.Writer) {
	v := a.reg.Value
	el := a.stopped.Sub(a.started).Round(100 * time.Millisecond)
	done, interrupted := a.progress.counts()
	fmt.Fprintf(w, "\nrobot-agent summary (%v)\n", el)
	sessions := v("robot_agent_uplink_connects_total")
	fmt.Fprintf(w, "  uplink:    %d session(s), %d reconnect(s), %d failed connection attempt(s), link up at shutdown: %v\n",
		sessions, max(0, sessions-1), v("robot_agent_uplink_dial_errors_total"), a.upAtStop)
	fmt.Fprintf(w, "  mic:       %d utterances, %d frames sent, %d dropped\n",
		v("robot_agent_capture_utterances_total"), v("robot_agent_uplink_mic_frames_sent_total"),
		micDropped(v))
	if n := v(capture.MetricSilentFrames); n > 0 {
		fmt.Fprintf(w, "  mic:       %.1f s of digital silence (every sample 0: the mic delivered nothing, lost or not yet open, or is muted; or a simulated room without noise); outages: nothing learnt from them\n",
			float64(n)*float64(captureConfig(a.cfg.Audio).FrameMS)/1000)
	}
	if n := v(capture.MetricBackgroundFrames); n > 0 {
		fmt.Fprintf(w, "  vad:       speech-like background (babble, a television) for %.1f s: speech had to be louder than it (audio.vad.background_db)\n",
			float64(n)*float64(captureConfig(a.cfg.Audio).FrameMS)/1000)
	}
	if n := v(capture.MetricTransients); n > 0 {
		fmt.Fprintf(w, "  vad:       %d knock(s), clap(s) or clunk(s) held back: no utterance started on them (audio.vad.transient_decay_db)\n", n)
	}
	fmt.Fprintf(w, "  tts:       %.1f s received, %d responses played to the end, %d interrupted (barge-in)\n",
		ttsSeconds(v), done, interrupted)
	fmt.Fprintf(w, "  speaker:   %.1f s played, %d underruns, %d samples concealed, %d stale frames dropped\n",
		float64(v("robot_agent_playback_played_samples_total"))/24000, v("robot_agent_playback_underruns_total"),
		v("robot_agent_playback_concealed_samples_total"), v("robot_agent_playback_stale_frames_dropped_total"))
	if n := v("robot_agent_audio_output_lost_total"); n > 0 {
		line := fmt.Sprintf("  speaker:   the output device was lost %d time(s), reopened %d: what the robot said meanwhile did not play", n, v("robot_agent_audio_output_reopened_total"))
		if a.aecTap != nil {
			line += fmt.Sprintf(" (%.1f s; the echo canceller took it for silence)", a.aecTap.Unplayed().Seconds())
		}
		fmt.Fprintln(w, line)
	}
	if n := v(clipguard.MetricClips); n > 0 {
		fmt.Fprintf(w, "  speaker:   the robot's echo clipped the mic in %d frames of 10 ms; its voice was lowered %d time(s), %d dB down at exit (duplex.clip_guard: turn the speaker or the mic gain down)\n",
			n, v(clipguard.MetricDown), v(clipguard.MetricBackoff))
	}
	if a.aecSrc != nil {
		if n := a.aecSrc.RefLate(); n > 0 {
			fmt.Fprintf(w, "  speaker:   %d mic read(s) held as the robot's echo: the speaker had been handed audio the echo canceller's reference did not hold yet (its writer ran late: a loaded machine)\n", n)
		}
		if n := a.aecSrc.SilentSpeakers(); n > 0 {
			fmt.Fprintf(w, "  speaker:   the mic heard nothing of the robot's voice %d time(s) although the output device played (an amplifier without power, a mute switch, a cable out?); the echo canceller took the speaker for silent meanwhile (duplex.silent_speaker)\n", n)
		}
		if l := roomLine(a.aecSrc.RoomRT60(), a.aecSrc.ReverbHeld(), a.room != nil && a.room.restored); l != "" {
			fmt.Fprintln(w, l)
		}
	}
	st := a.player.Stats()
	fmt.Fprintf(w, "  buffer:    peak %.1f s of %.0f s cap (%.1f MiB allocated), %.1f s time-stretched, %d samples lost to overflow in %d response(s)\n",
		float64(st.Peak)/24000, float64(a.player.CapacitySamples())/24000, float64(st.AllocatedSamples)*2/(1<<20),
		float64(st.Stretched)/24000, st.Lost, v("robot_agent_playback_truncated_responses_total"))
	fmt.Fprintf(w, "  control:   %d acked, %d unacked at exit, %d bad gateway messages\n",
		v("robot_agent_control_acked_total"), a.client.Outbox().Len(),
		v("robot_agent_uplink_bad_messages_total")+v("robot_agent_uplink_bad_frames_total")+v("robot_agent_uplink_unknown_types_total"))
	if a.robot != nil {
		fmt.Fprintf(w, "  robot:     %d state events, %d face_info, %d greetings; skills %d ok, %d refused or failed; function calls %d raised, %d delegated; %d dead-man resets\n",
			v("robot_agent_state_events_total"), v("robot_agent_identity_face_info_total"), v("robot_agent_identity_greet_total"),
			v("robot_agent_skills_ok_total"), v("robot_agent_skills_refused_total"),
			v("robot_agent_function_calls_total"), v("robot_agent_function_calls_delegated_total"), v("robot_agent_skills_deadman_total"))
	}
	a.writeCodecSummary(w)
	writeDeviceTiming(w, a.reg)
	a.video.writeSummary(w)
	if a.gw != nil {
		if p50, p99, n := percentiles(a.gw.MicLatencies()); n > 0 {
			fmt.Fprintf(w, "  latency:   mic frame end → gateway p50 %v p99 %v (%d frames; VAD pre-roll frames are sent late by design)\n", p50, p99, n)
		}
	}
	if p50, p99, n := a.player.Latencies(); n > 0 {
		fmt.Fprintf(w, "  latency:   TTS slot receipt → handed to device p50 %v p99 %v (%d slots; includes queueing when the gateway streams faster than real time)\n", p50.Round(time.Microsecond*100), p99.Round(time.Microsecond*100), n)
	}
	if a.opts.sim && a.cfg.Sim.SpeakerWAV != "" {
		fmt.Fprintf(w, "  played audio: %s\n", a.cfg.Sim.SpeakerWAV)
	}
	if a.ops.metricsURL != "" {
		fmt.Fprintf(w, "  metrics:   %s\n", a.ops.metricsURL)
	}
}

// micDropped is the number of mic frames the uplink refused. The capture
// pump counts each refusal too (robot_agent_capture_dropped_frames_total):
// the same frames, so the two are not added.
func micDropped(v func(string) int64) int64 {
	return v("robot_agent_uplink_mic_frames_dropped_total")
}

func percentiles(d []time.Duration) (p50, p99 time.Duration, n int) {
	if len(d) == 0 {
		return 0, 0, 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return at(0.50).Round(10 * time.Microsecond), at(0.99).Round(10 * time.Microsecond), len(s)
}

// writeDeviceTiming prints the real audio devices' callback timing (from
// PortAudio's time info, hw/portaudio) when a device stream ran: start
// lateness against the device cadence, device-level under/overflows as
// PortAudio flags them, and the output ring running dry (Go side late).
func writeDeviceTiming(w io.Writer, reg *metrics.Registry) {
	snap := reg.Snapshot()
	for _, dir := range []string{"output", "input"} {
		p := "robot_agent_audio_" + dir + "_"
		n, ok := snap[p+"callback_lateness_seconds_count"]
		if !ok || n == 0 {
			continue
		}
		h := reg.Histogram(p+"callback_lateness_seconds", "", nil)
		line := fmt.Sprintf("  device:    %-6s %d callbacks, lateness p50 %s p99 %s max %v; device underflows %d, overflows %d",
			dir, n, histBound(h, 0.5), histBound(h, 0.99), time.Duration(snap[p+"callback_lateness_max_microseconds"])*time.Microsecond,
			snap[p+"device_underflows_total"], snap[p+"device_overflows_total"])
		if dir == "output" {
			line += fmt.Sprintf("; ring ran dry %d", snap[p+"underruns_total"])
		} else {
			line += fmt.Sprintf("; ring overrun %d frames", snap[p+"overrun_frames_total"])
		}
		fmt.Fprintln(w, line+fmt.Sprintf("; device delay %v", time.Duration(snap[p+"device_delay_microseconds"])*time.Microsecond))
	}
}

// histBound describes the histogram bucket holding quantile q: "<= its
// upper bound", or "> the last bound" for the overflow bucket.
func histBound(h *metrics.Histogram, q float64) string {
	bounds, cum := h.Buckets()
	n := cum[len(cum)-1]
	for i, c := range cum {
		if float64(c) >= q*float64(n) {
			if math.IsInf(bounds[i], 1) {
				return fmt.Sprintf("> %v", time.Duration(bounds[i-1]*float64(time.Second)))
			}
			return fmt.Sprintf("<= %v", time.Duration(bounds[i]*float64(time.Second)))
		}
	}
	return "?"
}

// roomLine is the summary's line on the reverberation guard's room: its
// reverberation time (rt, s; 0 while not learnt) and how it was come by
// (restored: from duplex.room_file), and the reads it held; "" when there
// is nothing to say (not learnt, nothing held).
func roomLine(rt float64, held int64, restored bool) string {
	const heldText = "read(s) of the robot's own late reverberation kept from starting an utterance (duplex.reverb_guard)"
	switch {
	case rt > 0 && restored:
		return fmt.Sprintf("  room:      reverberation time %.2f s restored from duplex.room_file and learnt on from the mic; %d %s", rt, held, heldText)
	case rt > 0:
		return fmt.Sprintf("  room:      reverberation time %.2f s learnt from the mic; %d %s", rt, held, heldText)
	case held > 0:
		return fmt.Sprintf("  room:      not learnt yet (a typical small room assumed); %d %s", held, heldText)
	}
	return ""
}

//go:build webrtcapm && cgo

#include "webrtc_apm.h"

#include <string.h>
#include <webrtc/modules/audio_processing/include/audio_processing.h>
#include <webrtc/modules/interface/module_common_types.h>

struct aec_apm {
	webrtc::AudioProcessing* apm;
	webrtc::AudioFrame nearf, farf;
	int rate;
};

extern "C" aec_apm* aec_apm_new(int rate, int ns, int agc, int suppression, int delay_agnostic, int extended) {
	webrtc::Config cfg;
	// Extended filter: 32 partitions of 64 samples (128 ms at 16 kHz)
	// instead of 12 (48 ms). Delay-agnostic mode: the APM runs its own
	// delay estimator and moves its far-end read pointer when the echo
	// falls outside the filter (PulseAudio's module-echo-cancel and
	// Chromium turn both on); without it the APM trusts the reported
	// stream delay, which Source already took out (docs/audio.md).
	cfg.Set<webrtc::ExtendedFilter>(new webrtc::ExtendedFilter(extended != 0));
	cfg.Set<webrtc::DelayAgnostic>(new webrtc::DelayAgnostic(delay_agnostic != 0));
	webrtc::AudioProcessing* apm = webrtc::AudioProcessing::Create(cfg);
	if (!apm) return NULL;
	apm->high_pass_filter()->Enable(true);
	apm->echo_cancellation()->enable_drift_compensation(false);
	apm->echo_cancellation()->set_suppression_level(
		suppression <= 0 ? webrtc::EchoCancellation::kLowSuppression :
		suppression == 1 ? webrtc::EchoCancellation::kModerateSuppression : webrtc::EchoCancellation::kHighSuppression);
	apm->echo_cancellation()->Enable(true);
	apm->noise_suppression()->set_level(webrtc::NoiseSuppression::kModerate);
	apm->noise_suppression()->Enable(ns != 0);
	apm->gain_control()->set_mode(webrtc::GainControl::kAdaptiveDigital);
	apm->gain_control()->Enable(agc != 0);
	apm->voice_detection()->set_likelihood(webrtc::VoiceDetection::kLowLikelihood);
	apm->voice_detection()->Enable(true);
	aec_apm* a = new aec_apm;
	a->apm = apm;
	a->rate = rate;
	webrtc::AudioFrame* fs[2] = {&a->nearf, &a->farf};
	for (int i = 0; i < 2; i++) {
		fs[i]->sample_rate_hz_ = rate;
		fs[i]->samples_per_channel_ = rate / 100;
		fs[i]->num_channels_ = 1;
	}
	return a;
}

extern "C" int aec_apm_process(aec_apm* a, int16_t* out, const int16_t* nearend, const int16_t* farend, int delay_ms) {
	size_t n = a->rate / 100;
	memcpy(a->farf.data_, farend, n * sizeof(int16_t));
	a->farf.samples_per_channel_ = n;
	int err = a->apm->ProcessReverseStream(&a->farf);
	if (err != 0) return err;
	memcpy(a->nearf.data_, nearend, n * sizeof(int16_t));
	a->nearf.samples_per_channel_ = n;
	a->apm->set_stream_delay_ms(delay_ms);
	err = a->apm->ProcessStream(&a->nearf);
	memcpy(out, a->nearf.data_, n * sizeof(int16_t));
	return err;
}

extern "C" void aec_apm_set_suppression(aec_apm* a, int suppression) {
	a->apm->echo_cancellation()->set_suppression_level(
		suppression <= 0 ? webrtc::EchoCancellation::kLowSuppression :
		suppression == 1 ? webrtc::EchoCancellation::kModerateSuppression : webrtc::EchoCancellation::kHighSuppression);
}

extern "C" int aec_apm_voice(aec_apm* a) { return a->apm->voice_detection()->stream_has_voice() ? 1 : 0; }

extern "C" void aec_apm_free(aec_apm* a) {
	if (!a) return;
	delete a->apm;
	delete a;
}

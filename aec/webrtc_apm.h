// C interface over WebRTC's AudioProcessing (libwebrtc-audio-processing 0.3).
#ifndef ROBOT_AGENT_AEC_WEBRTC_APM_H
#define ROBOT_AGENT_AEC_WEBRTC_APM_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
typedef struct aec_apm aec_apm;
// aec_apm_new returns NULL on failure.
// suppression: 0 low, 1 moderate, 2 high (the NLP's aggressiveness);
// delay_agnostic, extended: the APM's DelayAgnostic and ExtendedFilter.
aec_apm* aec_apm_new(int rate, int ns, int agc, int suppression, int delay_agnostic, int extended);
// aec_apm_set_suppression changes the NLP's aggressiveness (cheap).
void aec_apm_set_suppression(aec_apm* a, int suppression);
// aec_apm_process: 10 ms frames; returns 0 or the library's error code.
int aec_apm_process(aec_apm* a, int16_t* out, const int16_t* nearend, const int16_t* farend, int delay_ms);
// aec_apm_voice: the APM's voice detector verdict on the last frame.
int aec_apm_voice(aec_apm* a);
void aec_apm_free(aec_apm* a);
#ifdef __cplusplus
}
#endif
#endif

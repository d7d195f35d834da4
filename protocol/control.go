package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Control message type names (the "type" field).
const (
	// Both directions.
	TypeHello = "hello"
	TypeAck   = "ack"
	TypeError = "error"

	// Robot → gateway.
	TypeFaceInfo         = "face_info"
	TypeGreetSignal      = "greet_signal"
	TypeState            = "state"
	TypeFunctionCall     = "function_call"
	TypeSkillResult      = "skill_result"
	TypePlaybackProgress = "playback_progress"

	// Gateway → robot.
	TypeASR             = "asr"
	TypeLLMDelta        = "llm_delta"
	TypeLLMDone         = "llm_done"
	TypeVLMDelta        = "vlm_delta"
	TypeVLMDone         = "vlm_done"
	TypeTTS             = "tts"
	TypeTTSDone         = "tts_done"
	TypeGreetVLMDelta   = "greet_vlm_delta"
	TypeGreetVLMDone    = "greet_vlm_done"
	TypeGreetTTS        = "greet_tts_delta"
	TypeGreetTTSDone    = "greet_tts_done"
	TypeInterrupt       = "interrupt"
	TypeArbiter         = "function_call_arbiter"
	TypeSkill           = "skill"
	TypeKeyframeRequest = "keyframe_request"
	TypeGoAway          = "go_away"
)

// Error codes carried in Error.Code.
const (
	CodeBadFrame        = "bad_frame"      // binary header invalid
	CodeBadMessage      = "bad_message"    // JSON invalid or a field has the wrong type/value
	CodeUnknownType     = "unknown_type"   // control type not known to the receiver
	CodeTooLarge        = "too_large"      // message over its class limit
	CodeUnsupported     = "unsupported"    // valid but not supported (e.g. audio format)
	CodeUnauthorized    = "unauthorized"   // bad token or device id
	CodeRateLimited     = "rate_limited"   // too many messages of a class
	CodeUnknownSkill    = "unknown_skill"  // skill not on the robot's allowlist
	CodeBadArgument     = "bad_argument"   // skill argument missing, wrong type or out of range
	CodeDeviceError     = "device_error"   // hardware failed to carry out a command
	CodeUnavailable     = "unavailable"    // module or device not available right now
	CodeInternal        = "internal"       // bug on the sender's side
	CodeStaleResponse   = "stale_response" // audio for a response that was interrupted
	CodeVersionMismatch = "version_mismatch"
)

// Capability strings a robot lists in RobotHello.Capabilities. Receivers
// ignore strings they do not know.
const (
	CapMicAudio         = "mic_audio"         // sends kind 1 mic frames
	CapTTSAudio         = "tts_audio"         // plays binary kind 3 TTS frames
	CapTTSBase64        = "tts_base64"        // plays JSON tts / greet_tts_delta audio
	CapVideoH264        = "video_h264"        // sends kind 2 flag 2 frames
	CapVideoImage       = "video_image"       // sends kind 2 flag 3 frames
	CapState            = "state"             // sends state
	CapFaceInfo         = "face_info"         // sends face_info
	CapGreet            = "greet"             // sends greet_signal, plays greet_* replies
	CapFunctionCall     = "function_call"     // sends function_call, obeys function_call_arbiter
	CapSkill            = "skill"             // carries out skill, answers skill_result
	CapPlaybackProgress = "playback_progress" // sends playback_progress
)

// Meta is the envelope every control message carries.
type Meta struct {
	Type    string `json:"type"`
	EventID string `json:"event_id,omitempty"`
	// TS is the sender's monotonic clock in microseconds when the event
	// happened (robot) or was sent (gateway).
	TS int64 `json:"ts,omitempty"`
}

// Message is any decoded control message.
type Message interface {
	Envelope() *Meta
}

// Envelope implements Message.
func (m *Meta) Envelope() *Meta { return m }

// FormatPCM16LE is the audio format every v1 peer supports.
const FormatPCM16LE = "pcm16le"

// AudioParams describes an audio stream. New optional fields (for example
// codec parameters) may be added in minor versions; receivers ignore the
// ones they do not know.
type AudioParams struct {
	Format     string `json:"format"` // "pcm16le" (v1), or "opus" (§17, codec.go)
	SampleRate int    `json:"sample_rate"`
	Channels   int    `json:"channels"`
	FrameMS    int    `json:"frame_ms,omitempty"`
	// Opus parameters (§17): bit/s chosen or offered, the range a gateway
	// may choose from, discontinuous transmission, in-band FEC.
	Bitrate    int  `json:"bitrate,omitempty"`
	BitrateMin int  `json:"bitrate_min,omitempty"`
	BitrateMax int  `json:"bitrate_max,omitempty"`
	DTX        bool `json:"dtx,omitempty"`
	FEC        bool `json:"fec,omitempty"`
}

// RobotHello is the robot's first message (agent_meta).
type RobotHello struct {
	Meta
	Protocol        int           `json:"protocol"`
	DeviceID        string        `json:"device_id"`
	Model           string        `json:"model,omitempty"`
	AgentVersion    string        `json:"agent_version"`
	FirmwareVersion string        `json:"firmware_version,omitempty"`
	BootID          string        `json:"boot_id,omitempty"`
	Capabilities    []string      `json:"capabilities"`
	AudioUp         AudioParams   `json:"audio_up"`
	AudioDown       []AudioParams `json:"audio_down"`
	ResumeSession   string        `json:"resume_session,omitempty"`
	// PlaybackBufferMS is the most TTS audio (ms at 24 kHz) the robot
	// holds unplayed; gateways pace to it (§7.7, protocol/pacing.go).
	PlaybackBufferMS int `json:"playback_buffer_ms,omitempty"`
	// Minor is the protocol minor version the robot speaks (v1.1: 1).
	// Absent (0) is v1.0. See docs/protocol.md §10.
	Minor int `json:"protocol_minor,omitempty"`
	// Audio, if present, offers formats in order of preference (v1.1
	// negotiation, §3.9). The v1 fields AudioUp/AudioDown stay filled with
	// the PCM formats so that v1.0 gateways keep working.
	Audio *AudioOffer `json:"audio,omitempty"`
}

// AudioOffer is the robot's v1.1 audio negotiation section: every format it
// can send (Up) and play (Down), most preferred first. PCM16LE (16 kHz up,
// 24 kHz down) is always present.
type AudioOffer struct {
	Up   []AudioParams `json:"up"`
	Down []AudioParams `json:"down"`
}

// AudioChoice is the gateway's answer to an AudioOffer: one format each way,
// taken from the robot's offer.
type AudioChoice struct {
	Up   AudioParams `json:"up"`
	Down AudioParams `json:"down"`
}

// Keepalive is the gateway's keepalive policy.
type Keepalive struct {
	IntervalMS int `json:"interval_ms"`
	TimeoutMS  int `json:"timeout_ms"`
}

// GatewayHello is the gateway's answer to RobotHello.
type GatewayHello struct {
	Meta
	Protocol  int         `json:"protocol"`
	SessionID string      `json:"session_id"`
	Resumed   bool        `json:"resumed,omitempty"`
	AudioUp   AudioParams `json:"audio_up"`
	AudioDown AudioParams `json:"audio_down"`
	Keepalive Keepalive   `json:"keepalive"`
	// Minor is the minor version the gateway speaks (absent: v1.0). The
	// session runs at min(robot minor, gateway minor).
	Minor int `json:"protocol_minor,omitempty"`
	// Capabilities lists optional gateway features (Gateway* constants);
	// receivers ignore strings they do not know.
	Capabilities []string `json:"capabilities,omitempty"`
	// Audio, if present, is the gateway's choice from the robot's
	// AudioOffer; it then replaces AudioUp/AudioDown (§3.9).
	Audio *AudioChoice `json:"audio,omitempty"`
}

// Gateway capability strings (GatewayHello.Capabilities, v1.1).
const (
	GatewayCapResume    = "resume"     // honours resume_session (§3.5)
	GatewayCapGoAway    = "go_away"    // sends go_away before a planned shutdown
	GatewayCapRateLimit = "rate_limit" // answers floods with rate_limited
)

// MinorVersion is the protocol minor version this package speaks (v1.1).
const MinorVersion = 1

// Negotiated is what a hello exchange settles (§3.9).
type Negotiated struct {
	Minor     int         // min(robot minor, gateway minor)
	AudioUp   AudioParams // mic format
	AudioDown AudioParams // TTS format
	Keepalive Keepalive   // with the defaults applied per field
	Resumed   bool
}

// Negotiate works out the session parameters from the robot's hello and
// the gateway's answer, applying the v1.1 rules: the minor version is the
// smaller of the two; audio comes from the gateway's "audio" choice when
// present (it must be one of the robot's offers) and otherwise is the v1
// PCM pair; each keepalive field that is 0 or absent takes its default on
// its own. The error wraps ErrUnsupported and names the field.
func Negotiate(r *RobotHello, g *GatewayHello, defaults Keepalive) (Negotiated, error) {
	n := Negotiated{Minor: min(r.Minor, g.Minor), Keepalive: g.Keepalive, Resumed: g.Resumed}
	if n.Keepalive.IntervalMS <= 0 {
		n.Keepalive.IntervalMS = defaults.IntervalMS
	}
	if n.Keepalive.TimeoutMS <= 0 {
		n.Keepalive.TimeoutMS = defaults.TimeoutMS
	}
	n.AudioUp = AudioParams{Format: FormatPCM16LE, SampleRate: 16000, Channels: 1, FrameMS: r.AudioUp.FrameMS}
	n.AudioDown = AudioParams{Format: FormatPCM16LE, SampleRate: 24000, Channels: 1}
	if g.Audio == nil {
		return n, nil
	}
	up, down := []AudioParams{r.AudioUp}, r.AudioDown
	if r.Audio != nil {
		up, down = r.Audio.Up, r.Audio.Down
	}
	if !offered(up, g.Audio.Up) {
		return n, fmt.Errorf("%w: field \"audio.up\" %s was not offered by the robot", ErrUnsupported, g.Audio.Up)
	}
	if !offered(down, g.Audio.Down) {
		return n, fmt.Errorf("%w: field \"audio.down\" %s was not offered by the robot", ErrUnsupported, g.Audio.Down)
	}
	n.AudioUp, n.AudioDown = g.Audio.Up, g.Audio.Down
	if n.AudioUp.FrameMS == 0 {
		n.AudioUp.FrameMS = r.AudioUp.FrameMS
	}
	return n, nil
}

func offered(list []AudioParams, p AudioParams) bool {
	for _, o := range list {
		if o.Format == p.Format && o.SampleRate == p.SampleRate && o.Channels == p.Channels {
			return true
		}
	}
	return false
}

// String formats p for error messages.
func (p AudioParams) String() string {
	return fmt.Sprintf("%s/%d Hz/%d ch", p.Format, p.SampleRate, p.Channels)
}

// Ack acknowledges the control message whose event_id it carries.
type Ack struct{ Meta }

// Error reports a problem with a message (Ref) or the session.
type Error struct {
	Meta
	Code string `json:"code"`
	Msg  string `json:"msg"`
	Ref  string `json:"ref,omitempty"`
}

// Identity is one face or voiceprint recognised by the robot.
type Identity struct {
	UID        string  `json:"uid"`
	Kind       string  `json:"kind"` // "face" or "voiceprint"
	Confidence float64 `json:"confidence,omitempty"`
}

// FaceInfo reports identities currently recognised.
type FaceInfo struct {
	Meta
	Identities []Identity      `json:"identities"`
	Param      json.RawMessage `json:"param,omitempty"`
}

// GreetSignal asks the gateway to greet a person.
type GreetSignal struct {
	Meta
	UID   string          `json:"uid,omitempty"`
	Param json.RawMessage `json:"param,omitempty"`
}

// State is one (state_name, state_value) event.
type State struct {
	Meta
	StateName  string          `json:"state_name"`
	StateValue json.RawMessage `json:"state_value"`
}

// FunctionCallInfo mirrors the gateway SDK's FunctionCallInfo.
type FunctionCallInfo struct {
	Source string          `json:"source"`
	Policy string          `json:"policy"`
	Type   string          `json:"type"`
	Value  string          `json:"value"`
	Param  json.RawMessage `json:"param,omitempty"`
}

// FunctionCall is raised by the robot.
type FunctionCall struct {
	Meta
	FunctionCall FunctionCallInfo `json:"function_call"`
}

// Arbiter decisions.
const (
	DecisionDelegate = "delegate"
	DecisionOverride = "override"
	DecisionIllegal  = "illegal"
)

// Arbiter is the gateway's decision on a robot function call (Ref).
type Arbiter struct {
	Meta
	Ref      string          `json:"ref"`
	Decision string          `json:"decision"`
	Param    json.RawMessage `json:"param,omitempty"`
}

// Skill asks the robot to carry out a named skill.
type Skill struct {
	Meta
	Skill string          `json:"skill"`
	Args  json.RawMessage `json:"args,omitempty"`
}

// SkillResult answers a Skill (Ref is the skill's event_id).
type SkillResult struct {
	Meta
	Ref    string          `json:"ref"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *ErrorBody      `json:"error,omitempty"`
}

// ErrorBody is a structured error inside another message.
type ErrorBody struct {
	Code string `json:"code"`
	Msg  string `json:"msg"`
}

// PlaybackProgress reports how much of a response the speaker really played.
type PlaybackProgress struct {
	Meta
	ResponseID    uint32 `json:"response_id"`
	SamplesPlayed int64  `json:"samples_played"`
	Done          bool   `json:"done,omitempty"`
	Interrupted   bool   `json:"interrupted,omitempty"`
	// LostSamples is how many samples of the response the robot dropped
	// because its buffer was full (§7.7); a final report with
	// LostSamples > 0 has Interrupted set.
	LostSamples int64 `json:"lost_samples,omitempty"`
	// SessionID (v1.1, final reports) is the session the response belongs
	// to; it differs from the current one when the response was cut or
	// finished while the link was down (§3.5).
	SessionID string `json:"session_id,omitempty"`
}

// ASR is recognised user speech.
type ASR struct {
	Meta
	// UtteranceID is the stream id of the mic utterance recognised (0:
	// not known).
	UtteranceID uint32 `json:"utterance_id,omitempty"`
	ResponseID  uint32 `json:"response_id,omitempty"`
	Text        string `json:"text"`
	Final       bool   `json:"final,omitempty"`
}

// Text is an LLM/VLM text delta or done marker (types llm_delta, llm_done,
// vlm_delta, vlm_done, greet_vlm_delta, greet_vlm_done).
type Text struct {
	Meta
	ResponseID uint32 `json:"response_id"`
	Text       string `json:"text,omitempty"`
}

// TTS is a chunk of TTS audio as base64 PCM16LE 24 kHz mono (types tts and
// greet_tts_delta). Audio holds the decoded bytes after Decode.
type TTS struct {
	Meta
	ResponseID uint32 `json:"response_id"`
	AudioB64   string `json:"audio"`
	Last       bool   `json:"last,omitempty"`
	// SampleRate, if present, must be 24000.
	SampleRate int `json:"sample_rate,omitempty"`
	// Audio is the decoded PCM, filled by DecodeFromGateway.
	Audio []byte `json:"-"`
}

// TTSDone ends a response's audio (types tts_done, greet_tts_done).
type TTSDone struct {
	Meta
	ResponseID uint32 `json:"response_id"`
}

// Interrupt stops playback of ResponseID and everything before it
// (ResponseID 0: everything received so far).
type Interrupt struct {
	Meta
	ResponseID uint32 `json:"response_id,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// KeyframeRequest asks the robot's video encoder for an IDR frame.
type KeyframeRequest struct{ Meta }

// GoAway tells the robot the gateway will close the session.
type GoAway struct {
	Meta
	Reason           string `json:"reason,omitempty"`
	ReconnectAfterMS int    `json:"reconnect_after_ms,omitempty"`
}

// Marshal encodes m, setting the envelope type if it is empty. Types shared
// by several names (Text, and TTS/TTSDone for greetings) must have Type set
// by the caller unless the default (tts, tts_done) is meant; Marshal fails
// if the type is empty and cannot be inferred.
func Marshal(m Message) ([]byte, error) {
	e := m.Envelope()
	if e.Type == "" {
		e.Type = typeOf(m)
		if e.Type == "" {
			return nil, fmt.Errorf("protocol: cannot marshal %T: field \"type\" is empty", m)
		}
	}
	return json.Marshal(m)
}

func typeOf(m Message) string {
	switch m.(type) {
	case *Ack:
		return TypeAck
	case *Error:
		return TypeError
	case *FaceInfo:
		return TypeFaceInfo
	case *GreetSignal:
		return TypeGreetSignal
	case *State:
		return TypeState
	case *FunctionCall:
		return TypeFunctionCall
	case *SkillResult:
		return TypeSkillResult
	case *PlaybackProgress:
		return TypePlaybackProgress
	case *RobotHello, *GatewayHello:
		return TypeHello
	case *ASR:
		return TypeASR
	case *TTS:
		return TypeTTS
	case *TTSDone:
		return TypeTTSDone
	case *Interrupt:
		return TypeInterrupt
	case *Arbiter:
		return TypeArbiter
	case *Skill:
		return TypeSkill
	case *KeyframeRequest:
		return TypeKeyframeRequest
	case *GoAway:
		return TypeGoAway
	}
	return ""
}

// decodeInto checks size and encoding, then unmarshals data into dst and
// translates errors into ones that name the field.
func decodeInto(data []byte, limit int, dst any) error {
	if len(data) > limit {
		return fmt.Errorf("%w: control message of %d bytes exceeds the limit of %d", ErrTooLarge, len(data), limit)
	}
	if !utf8.Valid(data) {
		return fmt.Errorf("%w: control message is not valid UTF-8", ErrMalformed)
	}
	if err := json.Unmarshal(data, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field == "" {
				return fmt.Errorf("%w: control message is a JSON %s, want an object", ErrMalformed, te.Value)
			}
			return fmt.Errorf("%w: field %q: JSON %s is not a valid %s", ErrMalformed, te.Field, te.Value, te.Type)
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("%w: invalid JSON at byte %d: %v", ErrMalformed, se.Offset, se)
		}
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return nil
}

// PeekType returns the envelope of a control message without decoding the
// rest. The message must be a JSON object with a string "type".
func PeekType(data []byte, limit int) (Meta, error) {
	var m Meta
	if err := decodeInto(data, limit, &m); err != nil {
		return m, err
	}
	if m.Type == "" {
		return m, fmt.Errorf("%w: field \"type\" is missing or empty", ErrMalformed)
	}
	return m, nil
}

// RefOf returns the event_id to put in the "ref" of an error answering
// data: the value of a top-level string member "event_id" when data is a
// JSON object that has one, whatever else is wrong with the message (no
// type, a field of the wrong type, too large). Otherwise "". It implements
// the rule of docs/protocol.md §9.1.
func RefOf(data []byte) string {
	var probe struct {
		EventID json.RawMessage `json:"event_id"`
	}
	if json.Unmarshal(data, &probe) != nil {
		// A field of the wrong type elsewhere still leaves event_id
		// decoded; only syntax errors and non-objects end here.
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil {
			return ""
		}
		probe.EventID = obj["event_id"]
	}
	var id string
	if len(probe.EventID) == 0 || json.Unmarshal(probe.EventID, &id) != nil || len(id) > MaxEventID {
		return ""
	}
	return id
}

// MaxEventID is the longest event_id a sender may use (bytes).
const MaxEventID = 128

func required(field, v string) error {
	if v == "" {
		return fmt.Errorf("%w: field %q is missing or empty", ErrMalformed, field)
	}
	return nil
}

func requiredID(field string, v uint32) error {
	if v == 0 {
		return fmt.Errorf("%w: field %q must be a response id > 0", ErrMalformed, field)
	}
	return nil
}

func validJSONValue(field string, v json.RawMessage, mustHave bool) error {
	if len(bytes.TrimSpace(v)) == 0 {
		if mustHave {
			return fmt.Errorf("%w: field %q is missing", ErrMalformed, field)
		}
		return nil
	}
	return nil
}

// DecodeFromGateway decodes a control message sent by the gateway.
// Unknown types give an error wrapping ErrUnsupported that names the type.
func DecodeFromGateway(data []byte) (Message, error) {
	meta, err := PeekType(data, MaxDownlink)
	if err != nil {
		return nil, err
	}
	var m Message
	switch meta.Type {
	case TypeHello:
		m = &GatewayHello{}
	case TypeAck:
		m = &Ack{}
	case TypeError:
		m = &Error{}
	case TypeASR:
		m = &ASR{}
	case TypeLLMDelta, TypeLLMDone, TypeVLMDelta, TypeVLMDone, TypeGreetVLMDelta, TypeGreetVLMDone:
		m = &Text{}
	case TypeTTS, TypeGreetTTS:
		m = &TTS{}
	case TypeTTSDone, TypeGreetTTSDone:
		m = &TTSDone{}
	case TypeInterrupt:
		m = &Interrupt{}
	case TypeArbiter:
		m = &Arbiter{}
	case TypeSkill:
		m = &Skill{}
	case TypeKeyframeRequest:
		m = &KeyframeRequest{}
	case TypeGoAway:
		m = &GoAway{}
	default:
		return nil, fmt.Errorf("%w: control type %q from the gateway is unknown", ErrUnknownType, meta.Type)
	}
	if meta.Type != TypeTTS && meta.Type != TypeGreetTTS && len(data) > MaxControl {
		return nil, fmt.Errorf("%w: %s message of %d bytes exceeds the limit of %d", ErrTooLarge, meta.Type, len(data), MaxControl)
	}
	if err := decodeInto(data, MaxDownlink, m); err != nil {
		return nil, fmt.Errorf("%s: %w", meta.Type, err)
	}
	if err := validateFromGateway(m); err != nil {
		return nil, fmt.Errorf("%s: %w", meta.Type, err)
	}
	return m, nil
}

func validateFromGateway(m Message) error {
	switch v := m.(type) {
	case *GatewayHello:
		if v.Protocol != Version {
			return fmt.Errorf("%w: field \"protocol\" is %d, want %d", ErrVersionMismatch, v.Protocol, Version)
		}
		if err := required("session_id", v.SessionID); err != nil {
			return err
		}
		if v.Keepalive.IntervalMS < 0 || v.Keepalive.TimeoutMS < 0 {
			return fmt.Errorf("%w: field \"keepalive\" has a negative duration", ErrMalformed)
		}
		if v.Minor < 0 {
			return fmt.Errorf("%w: field \"protocol_minor\" is %d, must be >= 0", ErrMalformed, v.Minor)
		}
		if v.Audio != nil {
			// v1.1: the choice replaces audio_up/audio_down; whether it
			// was offered is checked against the robot's hello
			// (Negotiate).
			if err := validParams("audio.up", v.Audio.Up); err != nil {
				return err
			}
			if err := validParams("audio.down", v.Audio.Down); err != nil {
				return err
			}
			if err := validateChosen("audio.up", v.Audio.Up, MicRate); err != nil {
				return err
			}
			return validateChosen("audio.down", v.Audio.Down, TTSRate)
		}
		return validateAudio("audio_down", v.AudioDown, 24000)
	case *Ack:
		return required("event_id", v.EventID)
	case *Error:
		return required("code", v.Code)
	case *Text:
		return requiredID("response_id", v.ResponseID)
	case *TTS:
		if err := requiredID("response_id", v.ResponseID); err != nil {
			return err
		}
		if v.SampleRate != 0 && v.SampleRate != 24000 {
			return fmt.Errorf("%w: field \"sample_rate\" is %d, want 24000", ErrUnsupported, v.SampleRate)
		}
		b, err := base64.StdEncoding.DecodeString(v.AudioB64)
		if err != nil {
			return fmt.Errorf("%w: field \"audio\" is not valid base64: %v", ErrMalformed, err)
		}
		if len(b)%2 != 0 {
			return fmt.Errorf("%w: field \"audio\" decodes to %d bytes, not whole PCM16 samples", ErrMalformed, len(b))
		}
		if len(b) > MaxTTSFrame-HeaderSize {
			return fmt.Errorf("%w: field \"audio\" decodes to %d bytes, over the limit of %d", ErrTooLarge, len(b), MaxTTSFrame-HeaderSize)
		}
		v.Audio = b
	case *TTSDone:
		return requiredID("response_id", v.ResponseID)
	case *Arbiter:
		if err := required("ref", v.Ref); err != nil {
			return err
		}
		switch v.Decision {
		case DecisionDelegate, DecisionOverride, DecisionIllegal:
		default:
			return fmt.Errorf("%w: field \"decision\" is %q, want delegate, override or illegal", ErrMalformed, v.Decision)
		}
	case *Skill:
		if err := required("event_id", v.EventID); err != nil {
			return err
		}
		return required("skill", v.Skill)
	}
	return nil
}

// validParams checks that an AudioParams of any format is complete.
func validParams(field string, p AudioParams) error {
	if p.Format == "" {
		return fmt.Errorf("%w: field %q has no format", ErrMalformed, field)
	}
	if p.SampleRate <= 0 || p.Channels <= 0 {
		return fmt.Errorf("%w: field %q is %d Hz x %d channels, want both > 0", ErrMalformed, field, p.SampleRate, p.Channels)
	}
	return nil
}

func validateAudio(field string, p AudioParams, rate int) error {
	if p.Format != "pcm16le" {
		return fmt.Errorf("%w: field %q format %q, want pcm16le", ErrUnsupported, field, p.Format)
	}
	if p.SampleRate != rate || p.Channels != 1 {
		return fmt.Errorf("%w: field %q is %d Hz x %d channels, want %d Hz mono", ErrUnsupported, field, p.SampleRate, p.Channels, rate)
	}
	return nil
}

// DecodeFromRobot decodes a control message sent by the robot (used by
// gateways, including the embedded one).
func DecodeFromRobot(data []byte) (Message, error) {
	meta, err := PeekType(data, MaxControl)
	if err != nil {
		return nil, err
	}
	var m Message
	switch meta.Type {
	case TypeHello:
		m = &RobotHello{}
	case TypeAck:
		m = &Ack{}
	case TypeError:
		m = &Error{}
	case TypeFaceInfo:
		m = &FaceInfo{}
	case TypeGreetSignal:
		m = &GreetSignal{}
	case TypeState:
		m = &State{}
	case TypeFunctionCall:
		m = &FunctionCall{}
	case TypeSkillResult:
		m = &SkillResult{}
	case TypePlaybackProgress:
		m = &PlaybackProgress{}
	default:
		return nil, fmt.Errorf("%w: control type %q from the robot is unknown", ErrUnknownType, meta.Type)
	}
	if err := decodeInto(data, MaxControl, m); err != nil {
		return nil, fmt.Errorf("%s: %w", meta.Type, err)
	}
	if err := validateFromRobot(m); err != nil {
		return nil, fmt.Errorf("%s: %w", meta.Type, err)
	}
	return m, nil
}

func validateFromRobot(m Message) error {
	switch v := m.(type) {
	case *RobotHello:
		if v.Protocol != Version {
			return fmt.Errorf("%w: field \"protocol\" is %d, want %d", ErrVersionMismatch, v.Protocol, Version)
		}
		if err := required("device_id", v.DeviceID); err != nil {
			return err
		}
		if v.PlaybackBufferMS < 0 {
			return fmt.Errorf("%w: field \"playback_buffer_ms\" is %d, must be >= 0", ErrMalformed, v.PlaybackBufferMS)
		}
		if v.Minor < 0 {
			return fmt.Errorf("%w: field \"protocol_minor\" is %d, must be >= 0", ErrMalformed, v.Minor)
		}
		if v.Audio != nil {
			for i, p := range v.Audio.Up {
				if err := validParams(fmt.Sprintf("audio.up[%d]", i), p); err != nil {
					return err
				}
			}
			for i, p := range v.Audio.Down {
				if err := validParams(fmt.Sprintf("audio.down[%d]", i), p); err != nil {
					return err
				}
			}
			if err := validateOffers(v.Audio); err != nil {
				return err
			}
		}
		return validateAudio("audio_up", v.AudioUp, 16000)
	case *Ack:
		return required("event_id", v.EventID)
	case *Error:
		return required("code", v.Code)
	case *FaceInfo:
		if err := required("event_id", v.EventID); err != nil {
			return err
		}
		if len(v.Identities) == 0 {
			return fmt.Errorf("%w: field \"identities\" is empty", ErrMalformed)
		}
		for i, id := range v.Identities {
			if id.UID == "" {
				return fmt.Errorf("%w: field \"identities[%d].uid\" is empty", ErrMalformed, i)
			}
			if id.Kind != "face" && id.Kind != "voiceprint" {
				return fmt.Errorf("%w: field \"identities[%d].kind\" is %q, want face or voiceprint", ErrMalformed, i, id.Kind)
			}
		}
	case *GreetSignal:
		return required("event_id", v.EventID)
	case *State:
		if err := required("event_id", v.EventID); err != nil {
			return err
		}
		if err := required("state_name", v.StateName); err != nil {
			return err
		}
		return validJSONValue("state_value", v.StateValue, true)
	case *FunctionCall:
		if err := required("event_id", v.EventID); err != nil {
			return err
		}
		return required("function_call.type", v.FunctionCall.Type)
	case *SkillResult:
		if err := required("event_id", v.EventID); err != nil {
			return err
		}
		if err := required("ref", v.Ref); err != nil {
			return err
		}
		if !v.OK && v.Error == nil {
			return fmt.Errorf("%w: field \"error\" is required when ok is false", ErrMalformed)
		}
	case *PlaybackProgress:
		if err := requiredID("response_id", v.ResponseID); err != nil {
			return err
		}
		if v.SamplesPlayed < 0 {
			return fmt.Errorf("%w: field \"samples_played\" is %d, must be >= 0", ErrMalformed, v.SamplesPlayed)
		}
		if v.LostSamples < 0 {
			return fmt.Errorf("%w: field \"lost_samples\" is %d, must be >= 0", ErrMalformed, v.LostSamples)
		}
	}
	return nil
}

// ErrorCode maps a decode error to the protocol error code to send back.
func ErrorCode(err error) string {
	switch {
	case errors.Is(err, ErrUnknownType):
		return CodeUnknownType
	case errors.Is(err, ErrVersionMismatch):
		return CodeVersionMismatch
	case errors.Is(err, ErrTooLarge):
		return CodeTooLarge
	case errors.Is(err, ErrUnsupported):
		return CodeUnsupported
	default:
		return CodeBadMessage
	}
}

package identity

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"unicode/utf8"

	"github.com/robot-agent/robot-agent/protocol"
)

// Observation is one recogniser result: a JSON object on one line.
//
//	{"uid":"alice","kind":"face","confidence":0.93,"param":{"bbox":[10,20,64,64]}}
//
// uid: 1..128 bytes of [A-Za-z0-9_.:@-]; kind: "face" or "voiceprint";
// confidence: 0..1 (optional); param: an optional JSON object of at most
// 1 KiB passed through to the face_info event.
type Observation struct {
	UID        string          `json:"uid"`
	Kind       string          `json:"kind"`
	Confidence *float64        `json:"confidence,omitempty"`
	Param      json.RawMessage `json:"param,omitempty"`
}

// Errors returned for bad recogniser input. Use errors.Is.
var (
	ErrMalformed   = errors.New("identity: malformed observation")
	ErrTooLarge    = errors.New("identity: observation too large")
	ErrRateLimited = errors.New("identity: too many observations")
)

// maxParam bounds Observation.Param.
const maxParam = 1024

// Code returns the protocol error code for an error from this package.
func Code(err error) string {
	switch {
	case errors.Is(err, ErrTooLarge):
		return protocol.CodeTooLarge
	case errors.Is(err, ErrRateLimited):
		return protocol.CodeRateLimited
	case errors.Is(err, ErrMalformed):
		return protocol.CodeBadMessage
	}
	return protocol.CodeInternal
}

func validUID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '@' || c == '-') {
			return false
		}
	}
	return true
}

// ParseObservation decodes and validates one line (without its newline).
// Errors wrap ErrMalformed or ErrTooLarge and name the field and value.
func ParseObservation(line []byte, maxLen int) (Observation, error) {
	var o Observation
	line = bytes.TrimSpace(line)
	if len(line) > maxLen {
		return o, fmt.Errorf("%w: line of %d bytes exceeds max_line %d", ErrTooLarge, len(line), maxLen)
	}
	if len(line) == 0 {
		return o, fmt.Errorf("%w: empty line", ErrMalformed)
	}
	if !utf8.Valid(line) {
		return o, fmt.Errorf("%w: line is not valid UTF-8", ErrMalformed)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			return o, fmt.Errorf("%w: field %q: JSON %s is not a valid %s", ErrMalformed, te.Field, te.Value, te.Type)
		case errors.As(err, &se):
			return o, fmt.Errorf("%w: invalid JSON at byte %d: %v", ErrMalformed, se.Offset, se)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return o, fmt.Errorf("%w: invalid JSON: the line ends inside a value", ErrMalformed)
		}
		return o, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if dec.More() {
		return o, fmt.Errorf("%w: more than one JSON value on the line", ErrMalformed)
	}
	switch {
	case !validUID(o.UID):
		return o, fmt.Errorf("%w: field \"uid\" is %q, want 1..128 characters of A-Z a-z 0-9 _ . : @ -", ErrMalformed, truncate(o.UID))
	case o.Kind != "face" && o.Kind != "voiceprint":
		return o, fmt.Errorf("%w: field \"kind\" is %q, want face or voiceprint", ErrMalformed, truncate(o.Kind))
	case o.Confidence != nil && (math.IsNaN(*o.Confidence) || *o.Confidence < 0 || *o.Confidence > 1):
		return o, fmt.Errorf("%w: field \"confidence\" is %v, want 0..1", ErrMalformed, *o.Confidence)
	}
	if p := bytes.TrimSpace(o.Param); len(p) > 0 {
		if bytes.Equal(p, []byte("null")) {
			o.Param = nil
		} else if p[0] != '{' {
			return o, fmt.Errorf("%w: field \"param\" must be a JSON object", ErrMalformed)
		} else if len(p) > maxParam {
			return o, fmt.Errorf("%w: field \"param\" is %d bytes, limit %d", ErrTooLarge, len(p), maxParam)
		}
	}
	return o, nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

package gateway

import (
	"strings"
	"testing"

	"github.com/robot-agent/robot-agent/codec/opus"
)

func TestCodecConfig(t *testing.T) {
	for _, c := range []string{"", CodecPCM} {
		if err := (Config{Codec: c}).Validate(); err != nil {
			t.Errorf("codec %q: %v", c, err)
		}
	}
	if err := (Config{Codec: "aac"}).Validate(); err == nil || !strings.Contains(err.Error(), `codec "aac" is not pcm or opus`) {
		t.Errorf("codec aac: %v", err)
	}
	err := (Config{Codec: CodecOpus}).Validate()
	if opus.Available() != (err == nil) {
		t.Errorf("codec opus with Opus built in = %v: %v", opus.Available(), err)
	}
	if err != nil && !strings.Contains(err.Error(), "-tags opus") {
		t.Errorf("codec opus without Opus: %v, want the build hint", err)
	}
}

package field

import (
	"errors"
	"testing"
)

func TestErrorFormat(t *testing.T) {
	cases := []struct {
		e    *Error
		want string
	}{
		{&Error{Path: "audio.frame_ms", Value: "25", Problem: "want 10, 20, 40 or 60"}, "audio.frame_ms: 25: want 10, 20, 40 or 60"},
		{&Error{Path: "gateway.tokenfile", Problem: "unknown key", Hint: "did you mean token_file?", Line: 3}, "gateway.tokenfile: unknown key (did you mean token_file?; line 3)"},
		{New("log.level", "loud", "want debug, info, warn or error", ""), `log.level: "loud": want debug, info, warn or error`},
		{New("x", nil, "missing", "add it"), "x: missing (add it)"},
	}
	for _, tc := range cases {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
		if !errors.Is(tc.e, ErrInvalid) {
			t.Errorf("%q does not wrap ErrInvalid", tc.want)
		}
	}
}

func TestUnderAndAll(t *testing.T) {
	var l List
	l.Add("frame_ms", 15, "bad", "")
	l.Add("vad.start_db", 99.5, "bad", "")
	l = append(l, errors.New("plain"))
	err := Under("audio", l.Err())
	all := All(err)
	if len(all) != 3 || all[0].Error() != "audio.frame_ms: 15: bad" || all[1].Error() != "audio.vad.start_db: 99.5: bad" || all[2].Error() != "plain" {
		t.Fatalf("Under: %q", all)
	}
	if l[0].Error() != "frame_ms: 15: bad" {
		t.Fatal("Under modified the original")
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"url", "token_file", "tls", "tts_mode", "speed", "allow_insecure_ws"}
	cases := map[string]string{
		"tokenfile":        "token_file",
		"token-file":       "token_file",
		"urll":             "url",
		"tts_mdoe":         "tts_mode",
		"allow_insecure":   "allow_insecure_ws",
		"allow_insecure_w": "allow_insecure_ws",
		"Speed":            "speed",
		"zzzz":             "",
		"":                 "",
	}
	for in, want := range cases {
		if got := Suggest(in, known); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

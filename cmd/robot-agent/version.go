package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// buildTags lists the optional features compiled in (constants set by the
// tags_*.go twins).
func buildTags() []string {
	var tags []string
	for _, t := range []string{tagPortAudio, tagX264, tagWebRTCAPM, tagSpeexDSP, tagOpus} {
		if t != "" {
			tags = append(tags, t)
		}
	}
	return tags
}

func versionString() string {
	cgo := "false"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "CGO_ENABLED" {
				cgo = map[string]string{"1": "true", "0": "false"}[s.Value]
			}
		}
	}
	tags := strings.Join(buildTags(), ",")
	if tags == "" {
		tags = "none"
	}
	return fmt.Sprintf("robot-agent %s (%s/%s, %s, cgo=%s, tags=%s) %s", version, runtime.GOOS, runtime.GOARCH, runtime.Version(), cgo, tags, duplexShort())
}

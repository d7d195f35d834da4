//go:build x264

package main

// tagX264 names the x264 build tag in `version` when it is set.
const tagX264 = "x264"

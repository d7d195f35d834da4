//go:build !x264

package main

const tagX264 = ""

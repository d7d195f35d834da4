//go:build !opus

package main

const tagOpus = ""

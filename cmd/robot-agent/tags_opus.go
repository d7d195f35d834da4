//go:build opus

package main

// tagOpus names the opus build tag in `version` when it is set.
const tagOpus = "opus"

package main

import (
	"fmt"
	"io"
)

func cmdDoctor(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "robot-agent doctor: not available yet")
	return 1
}

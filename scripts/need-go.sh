#!/usr/bin/env bash
# Fails with a clear message when no Go toolchain is on PATH.
if ! command -v go >/dev/null 2>&1; then
  for d in /usr/local/go/bin /usr/lib/go/bin; do [ -x "$d/go" ] && { echo "go is in $d but not on PATH: export PATH=\$PATH:$d" >&2; exit 1; }; done
  echo "robot-agent needs Go 1.26 or newer: https://go.dev/doc/install (or apt-get install golang-go on a newer Debian)" >&2
  exit 1
fi

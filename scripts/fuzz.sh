#!/usr/bin/env bash
# make fuzz: runs every Fuzz target in the module for $1 (default 20s) each.
set -euo pipefail
cd "$(dirname "$0")/.."
t="${1:-20s}"
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //'); do
    echo "== $pkg $f ($t)"
    go test -tags "$(scripts/detect-tags.sh)" -run '^$' -fuzz "^${f}\$" -fuzztime "$t" "$pkg"
  done
done

#!/usr/bin/env bash
# The project's test command (make test): installs what is missing, checks
# formatting and vet (cgo and pure-Go), the pure-Go build, then runs the
# whole suite with -race.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/need-go.sh
scripts/deps.sh
export PATH="$PATH:/usr/local/go/bin"

echo "== lint"
make -s lint
echo "== pure-Go build (CGO_ENABLED=0)"
CGO_ENABLED=0 go build ./...
echo "== go test -race"
go test -race -count=1 -timeout 20m ./...

# robot-agent — see README.md.
# The two set-up commands: `make run` (simulated robot + embedded gateway)
# and `make test` (the whole test suite, installing what it needs).

GO        ?= go
VERSION   ?= $(shell build/version.sh 2>/dev/null || echo 0.0.0~unknown)
LDFLAGS   := -s -w -X main.version=$(VERSION)
BIN       := bin/robot-agent
RUN_FOR   ?= 20s
# Build tags for the full (cgo) binary; detected from installed libraries.
TAGS      ?= $(shell scripts/detect-tags.sh)

.PHONY: all run run-real build build-sim test test-full-duplex test-go bench bench-duplex lint fmt vet tidy layers fuzz clean hil deps chaos

# Cross builds, emulated ARM tests, .deb packages, unit checks (issue 6).
include build/build.mk

all: lint test build

## run: simulated mic and speaker against the embedded gateway, then a summary.
## The simulated speaker is heard by the simulated mic through a moderate echo
## path; the echo canceller is on where its library is installed (TAGS).
run:
	@scripts/need-go.sh
	$(GO) run -tags '$(TAGS)' ./cmd/robot-agent run --sim --duration $(RUN_FOR)

## run-real: like run, but with real audio devices (PortAudio) on a private
## PulseAudio and the development gateway; the summary shows device timing.
run-real:
	@scripts/need-go.sh
	RUN_FOR=$(RUN_FOR) scripts/run-real.sh

## build: the agent for this machine (real devices where their libraries exist).
build:
	@scripts/need-go.sh
	$(GO) build -trimpath -tags '$(TAGS)' -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/robot-agent
	@echo "built $(BIN) (tags: $(or $(TAGS),none))"

## build-sim: pure-Go binary (simulated devices only), CGO_ENABLED=0.
build-sim:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/robot-agent-sim ./cmd/robot-agent

## test: everything CI runs (installs packages and starts a private PulseAudio).
test:
	@scripts/test.sh

## test-full-duplex: the PulseAudio full-duplex echo-path test alone (make test runs it once, without -race), 5 runs.
test-full-duplex:
	@scripts/deps.sh && go test -c -tags "$$(scripts/detect-tags.sh)" -o bin/fullduplex.test ./cmd/robot-agent && \
		cd cmd/robot-agent && for i in 1 2 3 4 5; do ../../scripts/with-pulse.sh ../../bin/fullduplex.test -test.run 'TestRealFullDuplexEchoPath$$' -test.v -test.count 1 || exit 1; done

## test-go: only the Go test suite with -race, no system set-up.
test-go:
	$(GO) test -race -count=1 ./...

## chaos: the long fault-injection run (200 kill -9 cycles, 20 gateway restarts
## in a 10-minute stream, network faults, a corrupted spool); prints a table.
chaos:
	@mkdir -p out
	CHAOS=long $(GO) test -count=1 -timeout 60m -v ./internal/chaos/ 2>&1 | tee out/chaos.txt | grep -E '^(\||--- |ok|FAIL|PASS)'

## bench: benchmarks; results go in docs/benchmarks.md.
bench:
	@scripts/bench.sh

## bench-duplex: echo cancellation, barge-in and VAD figures (docs/benchmarks.md).
bench-duplex:
	@scripts/bench-duplex.sh

## fuzz: run every fuzz target for FUZZTIME each (default 20s).
FUZZTIME ?= 20s
fuzz:
	@scripts/fuzz.sh $(FUZZTIME)

lint: fmt vet tidy layers
## layers: no package imports against the intended layering (layering/layering_test.go).
layers:
	$(GO) test -count=1 ./layering/
## tidy: go.mod and go.sum are exactly what the code needs (direct/indirect marked).
tidy:
	$(GO) mod tidy -diff
fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
vet:
	$(GO) vet ./...
	CGO_ENABLED=0 $(GO) vet ./...

## hil: hardware-in-the-loop check on a board with a USB mic, speaker and camera.
hil:
	@scripts/hil.sh

clean:
	rm -rf bin out dist

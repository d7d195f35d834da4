#!/usr/bin/env bash
# Control spool (issue 13): the append-only log against bbolt, same
# workloads and durability contract: events/s, p50/p99 time to durable,
# bytes to the block device per event (/proc/self/io write_bytes) and per
# day at make run's rate (11/s) and a busy robot's (100/s). The benchmark
# directory is t.TempDir (set TMPDIR to measure another file system).
set -euo pipefail
go test -run '^$' -bench Spool -benchtime 1x -count "${2:-3}" ./spool/

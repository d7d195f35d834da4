#!/usr/bin/env bash
# Control spool (issue 13): the append-only log against bbolt, same
# workloads and durability contract: events/s, p50/p99 time to durable,
# bytes written per event and per day at make run's rate (11/s) and a busy
# robot's (100/s).
#
# Bytes to the device: as root, the stores run on a private loop-mounted
# ext4 (image in /dev/shm) and the benchmark reads that device's sectors
# written (journal and metadata included: blk-B/event). Otherwise only the
# process's /proc/self/io write_bytes is reported (dev-B/event; no journal).
set -euo pipefail
count="${2:-3}"
if [ "$(id -u)" = 0 ] && command -v mkfs.ext4 >/dev/null && command -v losetup >/dev/null; then
  img="$(mktemp /dev/shm/spool-bench.XXXXXX)"
  mnt="$(mktemp -d)"
  cleanup() { umount "$mnt" 2>/dev/null || true; rmdir "$mnt"; rm -f "$img"; }
  trap cleanup EXIT
  truncate -s 512M "$img"
  mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$img"
  mount -o loop "$img" "$mnt"
  dev="$(basename "$(findmnt -n -o SOURCE "$mnt")")"
  echo "# spool benchmark on a private ext4 loop device ($dev)"
  SPOOL_BENCH_DEV="$dev" SPOOL_BENCH_DIR="$mnt" go test -run '^$' -bench Spool -benchtime 1x -count "$count" ./spool/
else
  echo "# spool benchmark in \$TMPDIR (not root: process write_bytes only)"
  go test -run '^$' -bench Spool -benchtime 1x -count "$count" ./spool/
fi

# build/build.mk: cross builds, emulated ARM tests and .deb packages.
# Included from the top-level Makefile (`include build/build.mk`). Every
# target installs the Debian packages it needs itself (install-cross-deps.sh).
#
#   make cross       pure-Go and cgo binaries for amd64, arm64, armv7 in dist/
#   make test-arm    go test (-short) for arm64 and armv7 under qemu-user, and
#                    each ARM binary's `version` and a 5 s `run --sim` under qemu
#   make deb         .deb for amd64, arm64, armhf in dist/, then check-deb
#   make check-deb   control fields, contents, Depends, sysusers, unit of dist/*.deb
#   make check-unit  systemd-analyze verify + security (exposure <= 3.0)
#   make test-deb-upgrade  install -> upgrade (edited conffile kept) -> remove
#                    -> purge of the .deb with dpkg in a scratch root (root
#                    only; skipped with a message otherwise)
#
# Variables: VERSION (build/version.sh), CGO_TAGS (portaudio,x264,webrtcapm,speexdsp,opus), DIST
# (dist), DEB_FLAVOR (cgo|pure), TEST_ARM_FLAGS (-short), TEST_ARM_TARGETS
# (arm64 armv7).

# Keep the including Makefile's default goal whether this file is included
# before or after its first target.
build_mk_default_goal := $(.DEFAULT_GOAL)

GO ?= go
VERSION ?= $(shell build/version.sh 2>/dev/null || echo 0.0.0~unknown)
CGO_TAGS ?= portaudio,x264,webrtcapm,speexdsp,opus
DIST ?= $(CURDIR)/dist
DEB_FLAVOR ?= cgo
export GO VERSION CGO_TAGS DIST

.PHONY: cross-deps cross test-arm deb check-deb check-unit test-deb-upgrade clean-dist

cross-deps:
	@build/install-cross-deps.sh

cross: cross-deps
	build/cross.sh

test-arm: cross
	build/test-arm.sh

deb: cross
	FLAVOR=$(DEB_FLAVOR) build/package-deb.sh
	build/check-deb.sh

check-deb: cross-deps
	build/check-deb.sh

check-unit: cross-deps
	build/check-unit.sh

test-deb-upgrade: cross-deps
	build/test-deb-upgrade.sh

clean-dist:
	rm -rf $(DIST)

.DEFAULT_GOAL := $(build_mk_default_goal)

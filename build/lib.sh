# shellcheck shell=bash
# Shared settings for the build/ scripts. Source it; it defines no commands
# that run on their own.

# Repository root (the directory above build/).
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIST=${DIST:-$ROOT/dist}
GO=${GO:-go}
# The package built into the robot-agent binary, and the directory (module)
# go build runs in.
PKG=${PKG:-./cmd/robot-agent}
SRC_DIR=${SRC_DIR:-$ROOT}
# Build tags of the full (cgo) build: PortAudio and the libx264 H.264
# encoder (package codec/h264). Its .deb depends on libx264-164: Debian 12,
# Raspberry Pi OS bookworm, Ubuntu 24.04 (Ubuntu 22.04 has libx264-163).
# Tag opus (codec/opus) links libopus0 and libopusfile0.
CGO_TAGS=${CGO_TAGS:-portaudio,x264,webrtcapm,speexdsp,opus}
# Highest glibc symbol version a cgo binary may need: Debian 12 has 2.36,
# Ubuntu 22.04 2.35, Raspberry Pi OS bookworm 2.36.
GLIBC_FLOOR=${GLIBC_FLOOR:-2.34}

# version: VERSION from the environment, else the one cross.sh recorded
# (when USE_BUILT_VERSION=1), else git describe, else 0.0.0-dev.
if [[ -z ${VERSION:-} && ${USE_BUILT_VERSION:-} == 1 && -s $DIST/VERSION ]]; then
	VERSION=$(cat "$DIST/VERSION")
fi
if [[ -z ${VERSION:-} ]]; then
	VERSION=$(git -C "$ROOT" describe --tags --always --dirty 2>/dev/null || true)
	VERSION=${VERSION:-0.0.0-dev}
fi

# deb_version turns a git describe string into a Debian version:
# v1.2.3 -> 1.2.3, v1.2.3-4-gabc-dirty -> 1.2.3+4.gabc.dirty,
# v2.0.0-rc1 -> 2.0.0~rc1, 0e3010b-dirty (no tag yet) -> 0.0.0+git0e3010b.dirty.
deb_version() {
	local v=$1
	if [[ $v =~ ^v?[0-9]+\.[0-9]+ ]]; then
		v=${v#v}
	else
		v="0.0.0+git$v"
	fi
	if [[ $v == *-* ]]; then
		local head=${v%%-*} tail=${v#*-}
		if [[ $head == *+* ]]; then
			v="$head.${tail//-/.}"
		elif [[ $tail =~ ^(rc|alpha|beta|pre) ]]; then
			v="$head~${tail//-/.}" # pre-releases sort before the release
		else
			v="$head+${tail//-/.}"
		fi
	fi
	echo "$v"
}

# shellcheck disable=SC2034 # the variables are used by the scripts sourcing this
# target_vars TARGET sets GOARCH_, GOARM_, TRIPLET, DEBARCH, QEMU, FILEPAT for
# one of amd64, arm64, armv7.
target_vars() {
	case $1 in
	amd64) GOARCH_=amd64 GOARM_='' TRIPLET=x86_64-linux-gnu DEBARCH=amd64 QEMU='' FILEPAT='ELF 64-bit LSB .*x86-64' ;;
	arm64) GOARCH_=arm64 GOARM_='' TRIPLET=aarch64-linux-gnu DEBARCH=arm64 QEMU=qemu-aarch64 FILEPAT='ELF 64-bit LSB .*ARM aarch64' ;;
	armv7) GOARCH_=arm GOARM_=7 TRIPLET=arm-linux-gnueabihf DEBARCH=armhf QEMU=qemu-arm FILEPAT='ELF 32-bit LSB .*ARM, EABI5' ;;
	*)
		echo "build: unknown target $1 (want amd64, arm64 or armv7)" >&2
		return 1
		;;
	esac
}

# binary_path TARGET FLAVOR prints where cross.sh puts that binary.
binary_path() {
	if [[ $2 == cgo ]]; then
		echo "$DIST/robot-agent-linux-$1-cgo"
	else
		echo "$DIST/robot-agent-linux-$1"
	fi
}

# run_emulated TARGET SECONDS CMD... runs a binary of TARGET, under qemu-user
# when foreign, killed after SECONDS. qemu runs without -L: the multiarch
# libraries and loaders are in the host's own /lib and /usr/lib/<triplet>
# (with -L /usr/<triplet> a cgo binary hung at 100 % CPU, an armhf one
# crashed).
run_emulated() {
	local target=$1 secs=$2
	shift 2
	target_vars "$target"
	if [[ -n $QEMU ]]; then
		timeout -s KILL "$secs" "$QEMU" "$@"
	else
		timeout -s KILL "$secs" "$@"
	fi
}

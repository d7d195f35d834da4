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

# git_version [DIR] prints the version of the commit checked out in DIR
# (default: the repository), from semver tags vX.Y.Z[-pre]. It is a Debian
# upstream version, so the binary's `version` and the package's Version are
# the same string, and dpkg orders builds as history does:
#
#   at tag v1.2.3                  1.2.3
#   at tag v2.0.0-rc.1             2.0.0~rc.1          (~: before 2.0.0)
#   5 commits after v1.2.3         1.2.4~dev.5.gabc1234  (after 1.2.3, before 1.2.4)
#   5 commits after v2.0.0-rc.1    2.0.0~rc.1.dev.5.gabc1234
#   no tag yet, commit number 42   0.0.0~dev.42.gabc1234
#   uncommitted changes            ... .dirty appended (sorts after the clean build)
#
# The dev number is the commit count since the tag (git describe), or of
# the whole history when there is no tag: a child commit always counts more
# than its parent, so later builds on one branch always sort higher (commit
# dates can go backwards; hashes are random). A shallow clone would count
# wrong, so it is refused.
git_version() {
	local dir=${1:-$ROOT} desc tag n hash dirty='' base pre maj min pat
	git -C "$dir" rev-parse --git-dir >/dev/null 2>&1 || return 1
	if [[ $(git -C "$dir" rev-parse --is-shallow-repository 2>/dev/null) == true ]]; then
		echo "version: $dir is a shallow clone; the dev build number needs the full history (git fetch --unshallow)" >&2
		return 1
	fi
	[[ -z $(git -C "$dir" status --porcelain --untracked-files=no 2>/dev/null) ]] || dirty=.dirty
	hash=$(git -C "$dir" rev-parse --short=7 HEAD)
	if desc=$(git -C "$dir" describe --tags --long --match 'v[0-9]*.[0-9]*.[0-9]*' 2>/dev/null); then
		tag=${desc%-*-g*} n=${desc%-g*} n=${n##*-}
		tag=${tag#v}
		base=${tag%%-*} pre=''
		[[ $tag == *-* ]] && pre=${tag#*-}
		if [[ ! $base =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
			echo "version: tag v$tag is not vMAJOR.MINOR.PATCH[-PRERELEASE]" >&2
			return 1
		fi
		pre=${pre//-/.}
		if [[ $n == 0 ]]; then
			if [[ -n $pre ]]; then echo "$base~$pre$dirty"; else echo "$base$dirty"; fi
			return 0
		fi
		if [[ -n $pre ]]; then
			echo "$base~$pre.dev.$n.g$hash$dirty"
		else
			IFS=. read -r maj min pat <<<"$base"
			echo "$maj.$min.$((pat + 1))~dev.$n.g$hash$dirty"
		fi
		return 0
	fi
	n=$(git -C "$dir" rev-list --count HEAD)
	echo "0.0.0~dev.$n.g$hash$dirty"
}

# version: VERSION from the environment, else the one cross.sh recorded
# (when USE_BUILT_VERSION=1), else git_version, else 0.0.0~unknown.
if [[ -z ${VERSION:-} && ${USE_BUILT_VERSION:-} == 1 && -s $DIST/VERSION ]]; then
	VERSION=$(cat "$DIST/VERSION")
fi
if [[ -z ${VERSION:-} ]]; then
	VERSION=$(git_version "$ROOT" || true)
	VERSION=${VERSION:-0.0.0~unknown}
fi

# deb_version turns a version into a Debian upstream version. git_version's
# output is one already (returned as is); a raw git describe string or a
# semver string is converted: v1.2.3 -> 1.2.3, 2.0.0-rc.1 -> 2.0.0~rc.1,
# 1.2.3+meta -> 1.2.3+meta.
deb_version() {
	local v=${1#v}
	if [[ ! $v =~ ^[0-9]+\.[0-9]+ ]]; then
		v="0.0.0~git$v"
	fi
	if [[ $v == *-* ]]; then
		local head=${v%%-*} tail=${v#*-}
		v="$head~${tail//-/.}"
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

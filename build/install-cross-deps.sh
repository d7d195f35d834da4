#!/usr/bin/env bash
# Installs, from Debian 12's own packages, what cross builds, .deb packaging
# and the emulated tests need: cross compilers, multiarch PortAudio and x264
# -dev packages (PortAudio, x264, WebRTC audio processing, speexdsp, Opus) for
# arm64 and armhf (and amd64), qemu-user, file, binutils, systemd (for
# systemd-analyze and systemd-sysusers), dpkg-dev (dpkg-parsechangelog, for
# check-deb). Idempotent and quiet: when everything is installed it only
# runs dpkg-query. Used by make and by
# .ci/run.
set -euo pipefail

foreign_arches=(arm64 armhf)
pkgs=(
	gcc-aarch64-linux-gnu g++-aarch64-linux-gnu
	gcc-arm-linux-gnueabihf g++-arm-linux-gnueabihf
	gcc g++ pkg-config binutils file bc qemu-user systemd dpkg-dev
	portaudio19-dev libx264-dev
	portaudio19-dev:arm64 libx264-dev:arm64
	portaudio19-dev:armhf libx264-dev:armhf
	libwebrtc-audio-processing-dev libspeexdsp-dev
	libwebrtc-audio-processing-dev:arm64 libspeexdsp-dev:arm64
	libwebrtc-audio-processing-dev:armhf libspeexdsp-dev:armhf
	libopus-dev libopusfile-dev
	libopus-dev:arm64 libopusfile-dev:arm64
	libopus-dev:armhf libopusfile-dev:armhf
)

missing=()
for p in "${pkgs[@]}"; do
	if [[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null) != ii* ]]; then
		missing+=("$p")
	fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=
if [[ $(id -u) -ne 0 ]]; then
	command -v sudo >/dev/null || {
		echo "install-cross-deps: need root to install: ${missing[*]}" >&2
		exit 1
	}
	sudo=sudo
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "install-cross-deps: installing ${missing[*]}"
added=0
for a in "${foreign_arches[@]}"; do
	if ! dpkg --print-foreign-architectures | grep -qx "$a"; then
		$sudo dpkg --add-architecture "$a"
		added=1
	fi
done
apt_opts=(-o DPkg::Lock::Timeout=600 -o Acquire::Retries=3 -q)
# A partial index failure (a mirror in sync) is not fatal: the install
# below fails clearly if it matters.
update() { $sudo apt-get "${apt_opts[@]}" update >>"$log" 2>&1 || echo "install-cross-deps: apt-get update reported errors (continuing)" >&2; }
# Update when an architecture was added or the lists are old (a day).
if [[ $added -eq 1 ]] || [[ -z $(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -mmin -1440 -print -quit 2>/dev/null) ]]; then
	update
fi
install() {
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install -y --no-install-recommends "${missing[@]}" >>"$log" 2>&1
}
# Stale lists are the usual cause of a failure (a package version gone), or
# a mirror caught mid-sync (an index of the wrong size): refresh and try
# again, waiting 30, 60 and 90 s (CROSS_DEPS_RETRY_S, default 30) for the
# mirror.
step=${CROSS_DEPS_RETRY_S:-30}
installed=0
for attempt in 1 2 3 4; do
	if install; then
		installed=1
		break
	fi
	if [[ $attempt -lt 4 ]]; then
		echo "install-cross-deps: apt-get install failed; refreshing the package lists in $((attempt * step)) s (attempt $((attempt + 1)) of 4)" >&2
		sleep $((attempt * step))
		update
	fi
done
if [[ $installed -eq 0 ]]; then
	# A Multi-Arch: same library must have one version on every
	# architecture. When a foreign architecture's index lags the native one
	# (a security update of libssl3 listed for amd64 but not yet for armhf
	# on the mirror), apt cannot choose one by itself and reports the
	# foreign package as "not going to be installed". Ask for the newest
	# version every architecture has, once, without downgrading anything.
	align=()
	for lib in $(grep -oE 'Depends: [a-z0-9.+-]+:(arm64|armhf)' "$log" | awk '{print $2}' | cut -d: -f1 | sort -u); do
		for v in $(apt-cache madison "$lib" | awk -F'|' '{gsub(/ /, "", $2); print $2}'); do
			ok=1
			for a in "${foreign_arches[@]}"; do
				apt-cache madison "$lib:$a" | awk -F'|' '{gsub(/ /, "", $2); print $2}' | grep -qxF -- "$v" || ok=0
			done
			if [[ $ok -eq 1 ]]; then
				align+=("$lib=$v")
				for a in "${foreign_arches[@]}"; do align+=("$lib:$a=$v"); done
				break
			fi
		done
	done
	if [[ ${#align[@]} -eq 0 ]] || ! {
		echo "install-cross-deps: apt-get install failed; trying once more with one version on every architecture: ${align[*]}" >&2
		$sudo env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install -y --no-install-recommends "${missing[@]}" "${align[@]}" >>"$log" 2>&1
	}; then
		tail -30 "$log" >&2
		echo "install-cross-deps: apt-get install failed ($attempt attempts)" >&2
		exit 1
	fi
fi
echo "install-cross-deps: done"

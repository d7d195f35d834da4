#!/usr/bin/env bash
# Checks built robot-agent .deb packages: control fields (dpkg-deb -f),
# contents (dpkg-deb -c), conffiles, that Depends covers every shared
# library the binary needs (libportaudio2 for a PortAudio build), that the
# binary is of the package's architecture and reports the package's version,
# that the sysusers file creates the service user in its groups, and the
# packaged unit (build/check-unit.sh on it).
#
# usage: build/check-deb.sh [DEB ...]   (default: dist/robot-agent_*.deb)
set -euo pipefail
USE_BUILT_VERSION=1
. "$(dirname "$0")/lib.sh"

debs=("$@")
if [[ ${#debs[@]} -eq 0 ]]; then
	shopt -s nullglob
	debs=("$DIST"/robot-agent_*.deb)
fi
[[ ${#debs[@]} -gt 0 ]] || {
	echo "check-deb: no packages in $DIST: run build/package-deb.sh (make deb)" >&2
	exit 1
}
fail=0 debfail=0
bad() {
	echo "check-deb: $deb: $*" >&2
	fail=1 debfail=1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for deb in "${debs[@]}"; do
	debfail=0
	rm -rf "$work/x" "$work/ctl" "$work/sys"
	mkdir -p "$work/x" "$work/ctl"
	field() { dpkg-deb -f "$deb" "$1"; }

	# Control fields.
	[[ $(field Package) == robot-agent ]] || bad "Package is '$(field Package)'"
	arch=$(field Architecture)
	case $arch in
	amd64) target=amd64 ;;
	arm64) target=arm64 ;;
	armhf) target=armv7 ;;
	*)
		bad "Architecture '$arch' is not amd64, arm64 or armhf"
		continue
		;;
	esac
	target_vars "$target"
	ver=$(field Version)
	[[ $ver =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || bad "Version '$ver' is not a Debian upstream version"
	[[ $(field Maintainer) =~ ^.+\ \<[^@\>]+@[^\>]+\>$ ]] || bad "Maintainer '$(field Maintainer)' is not 'Name <email>'"
	[[ -n $(field Description) ]] || bad "no Description"
	depends=$(field Depends)
	# Package names in Depends, one per line, without version constraints.
	depnames=$(sed 's/(.*)//; s/ //g' <<<"${depends//[,|]/$'\n'}" | grep -v '^$' || true)
	has_dep() { grep -Fqx -- "$1" <<<"$depnames"; }

	# Contents.
	listing=$(dpkg-deb -c "$deb")
	for want in \
		'-rwxr-xr-x root/root .* ./usr/bin/robot-agent$' \
		'-rw-r--r-- root/root .* ./etc/robot-agent/config.yaml$' \
		'-rw-r--r-- root/root .* ./lib/systemd/system/robot-agent.service$' \
		'-rw-r--r-- root/root .* ./usr/lib/sysusers.d/robot-agent.conf$' \
		'-rw-r--r-- root/root .* ./lib/udev/rules.d/60-robot-agent.rules$' \
		'-rw-r--r-- root/root .* ./usr/share/robot-agent/config.yaml$' \
		'-rw-r--r-- root/root .* ./usr/share/doc/robot-agent/copyright$' \
		'-rw-r--r-- root/root .* ./usr/share/doc/robot-agent/changelog.Debian.gz$'; do
		grep -Eq -- "$want" <<<"$listing" || bad "contents lack /$want/"
	done
	dpkg-deb -e "$deb" "$work/ctl"
	grep -qx /etc/robot-agent/config.yaml "$work/ctl/conffiles" 2>/dev/null || bad "/etc/robot-agent/config.yaml is not a conffile"
	for s in postinst prerm postrm; do
		if [[ ! -x $work/ctl/$s ]] || ! sh -n "$work/ctl/$s"; then
			bad "maintainer script $s missing or not valid sh"
		fi
	done

	# The binary: architecture, Depends, version.
	dpkg-deb -x "$deb" "$work/x"
	bin=$work/x/usr/bin/robot-agent
	desc=$(file -b "$bin")
	grep -Eq "$FILEPAT" <<<"$desc" || bad "binary is '$desc', not $arch"
	if grep -q 'dynamically linked' <<<"$desc"; then
		kind=cgo
		for lib in $(readelf -d "$bin" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
			owner=
			for path in "/usr/lib/$TRIPLET/$lib" "/lib/$TRIPLET/$lib" "/lib/$lib" "/usr/lib/$lib"; do
				[[ -e $path ]] && owner=$(dpkg -S "$path" 2>/dev/null | head -1 | cut -d: -f1) && [[ -n $owner ]] && break
			done
			if [[ -z $owner ]]; then
				bad "cannot tell which package provides $lib"
			elif ! has_dep "$owner"; then
				bad "binary needs $lib ($owner) but Depends is '$depends'"
			fi
		done
		grep -Eq '(^|, )libc6 \(>= [0-9.]+\)' <<<"$depends" || bad "Depends lacks a versioned libc6: '$depends'"
		if [[ ,$CGO_TAGS, == *,portaudio,* ]] && ! has_dep libportaudio2; then
			bad "a cgo build with tag portaudio must depend on libportaudio2 (is the PortAudio code built in?); Depends is '$depends'"
		fi
		if [[ ,$CGO_TAGS, == *,opus,* ]] && ! has_dep libopus0; then
			bad "a cgo build with tag opus must depend on libopus0 (is the Opus codec built in?); Depends is '$depends'"
		fi
	else
		kind=pure
		[[ -z $depends ]] || bad "static binary but Depends is '$depends'"
	fi
	# The changelog's first entry is this version; the copyright file names
	# every Go module linked into the binary.
	if ! clv=$(zcat "$work/x/usr/share/doc/robot-agent/changelog.Debian.gz" | dpkg-parsechangelog -l - -S Version 2>&1); then
		bad "changelog.Debian.gz does not parse: $clv"
	elif [[ $clv != "$ver" ]]; then
		bad "changelog.Debian.gz's first entry is $clv, package Version is $ver"
	fi
	mapfile -t pats < <(sed -n 's/^Files: //p' "$work/x/usr/share/doc/robot-agent/copyright" | tr ' ' '\n' | grep -vx '\*')
	while read -r mod; do
		covered=
		for p in "${pats[@]}"; do
			# shellcheck disable=SC2053 # p is a glob
			[[ $mod == $p ]] && covered=1 && break
		done
		[[ -n $covered ]] || bad "the binary links Go module $mod, which build/copyright does not name"
	done < <("$GO" version -m "$bin" | awk '$1 == "dep" {print $2}')
	out=$(run_emulated "$target" 60 "$bin" version 2>&1) || bad "version failed: $out"
	binver=$(awk '{print $2}' <<<"$out")
	[[ $ver == "$(deb_version "$binver")" ]] ||
		bad "package Version $ver does not match the binary's version '$binver'"

	# The service user: sysusers on a root with Debian's base groups.
	mkdir -p "$work/sys/etc"
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$work/sys/etc/passwd"
	printf 'root:x:0:\naudio:x:29:\nvideo:x:44:\n' >"$work/sys/etc/group"
	if systemd-sysusers --root="$work/sys" "$work/x/usr/lib/sysusers.d/robot-agent.conf" >/dev/null 2>&1; then
		grep -q '^robot-agent:x:[0-9]*:[0-9]*:.*:/var/lib/robot-agent:/usr/sbin/nologin$' "$work/sys/etc/passwd" || bad "sysusers did not create the robot-agent user"
		for g in audio video gpio i2c; do
			grep -Eq "^$g:x:[0-9]+:(.*,)?robot-agent(,|$)" "$work/sys/etc/group" || bad "sysusers did not put robot-agent in group $g"
		done
	else
		bad "systemd-sysusers failed on the packaged file"
	fi

	# The packaged unit is the checked one, and passes check-unit.
	cmp -s "$work/x/lib/systemd/system/robot-agent.service" "$ROOT/build/systemd/robot-agent.service" ||
		bad "packaged unit differs from build/systemd/robot-agent.service"
	uout=$("$ROOT/build/check-unit.sh" "$work/x/lib/systemd/system/robot-agent.service" /bin/true 2>&1) || bad "unit: $uout"

	[[ $debfail -ne 0 ]] || echo "check-deb: ${deb#"$ROOT"/}: ok: $arch $ver, $kind, Depends: ${depends:-none}"
done
[[ $fail -eq 0 ]] || {
	echo "check-deb: FAILED" >&2
	exit 1
}
echo "check-deb: ok (${#debs[@]} packages)"

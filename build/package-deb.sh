#!/usr/bin/env bash
# Builds robot-agent .deb packages with nfpm (run through `go run` at a
# pinned version, so go.mod is untouched) from the binaries cross.sh built.
#
# usage: build/package-deb.sh [TARGET ...]    TARGET: amd64 arm64 armv7
#   (default: all three; armv7 gives the armhf package)
# env: FLAVOR (cgo: PortAudio + encoder, the default; pure: CGO_ENABLED=0),
#      VERSION (default: the one cross.sh recorded), MAINTAINER, DIST,
#      CONFIG (the default config packaged as the conffile; build/config.yaml).
# /usr/share/doc/robot-agent gets copyright (build/copyright) and
# changelog.Debian.gz (build/changelog.sh, from git history).
# Depends are read off the binary: the Debian package owning each shared
# library it needs (dpkg -S on the multiarch library), and libc6 at the
# highest glibc symbol version it uses.
set -euo pipefail
USE_BUILT_VERSION=1
. "$(dirname "$0")/lib.sh"

NFPM=${NFPM:-"$GO run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2"}
FLAVOR=${FLAVOR:-cgo}
CONFIG=${CONFIG:-$ROOT/build/config.yaml}
MAINTAINER=${MAINTAINER:-robot-agent maintainers <maintainers@robot-agent.invalid>}
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(amd64 arm64 armv7)

# depends BINARY TRIPLET prints the nfpm depends list for a dynamic binary.
depends() {
	local bin=$1 triplet=$2 lib path pkg glibc
	local -A seen=()
	glibc=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
	echo "  - libc6 (>= $glibc)"
	seen[libc6]=1
	for lib in $(readelf -d "$bin" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
		pkg=
		for path in "/usr/lib/$triplet/$lib" "/lib/$triplet/$lib" "/lib/$lib" "/usr/lib/$lib"; do
			[[ -e $path ]] || continue
			pkg=$(dpkg -S "$path" 2>/dev/null | head -1 | cut -d: -f1) && [[ -n $pkg ]] && break
		done
		if [[ -z $pkg ]]; then
			echo "package-deb: no installed package provides $lib for $triplet: run build/install-cross-deps.sh" >&2
			return 1
		fi
		[[ -n ${seen[$pkg]:-} ]] && continue
		seen[$pkg]=1
		echo "  - $pkg"
	done
}

debver=$(deb_version "$VERSION")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
VERSION=$debver MAINTAINER=$MAINTAINER "$ROOT/build/changelog.sh" "$work/changelog.Debian.gz"
for t in "${targets[@]}"; do
	target_vars "$t"
	bin=$(binary_path "$t" "$FLAVOR")
	[[ -x $bin ]] || {
		echo "package-deb: $bin missing: run build/cross.sh $FLAVOR-$t (make cross)" >&2
		exit 1
	}
	deps=
	tags=CGO_ENABLED=0
	if [[ $FLAVOR == cgo ]]; then
		deps=$(depends "$bin" "$TRIPLET")
		tags="tags $CGO_TAGS"
	fi
	cfg=$work/nfpm-$DEBARCH.yaml
	# Fill the template; | is not in any value.
	sed -e "s|@ARCH@|$DEBARCH|" -e "s|@VERSION@|$debver|" -e "s|@MAINTAINER@|$MAINTAINER|" \
		-e "s|@BINARY@|$bin|" -e "s|@FLAVOR@|$FLAVOR|" -e "s|@TAGS@|$tags|" \
		-e "s|@CONFIG@|$CONFIG|" -e "s|@CHANGELOG@|$work/changelog.Debian.gz|" \
		"$ROOT/build/nfpm.yaml.in" >"$cfg.tmp"
	awk -v deps="$deps" '$0 == "@DEPENDS@" { if (deps != "") print deps; next } { print }' "$cfg.tmp" >"$cfg"
	out=$DIST/robot-agent_${debver}_$DEBARCH.deb
	# Only this build's package of this architecture stays in DIST.
	rm -f "$DIST"/robot-agent_*_"$DEBARCH".deb
	(cd "$ROOT" && $NFPM package --config "$cfg" --packager deb --target "$out" >"$work/nfpm.log" 2>&1) || {
		cat "$work/nfpm.log" >&2
		exit 1
	}
	echo "package-deb: ${out#"$ROOT"/} ($FLAVOR; depends: $(paste -sd, - <<<"${deps//  - /}"))"
done

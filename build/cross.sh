#!/usr/bin/env bash
# Cross-compiles robot-agent for linux/amd64, linux/arm64 and linux/arm
# (GOARM=7), pure Go (CGO_ENABLED=0) and full (cgo: PortAudio and the H.264
# encoder, with Debian's cross compilers and multiarch -dev packages), then
# checks each binary's architecture with file(1) and the glibc symbol
# versions of the cgo ones.
#
# usage: build/cross.sh [FLAVOR-TARGET ...]
#   FLAVOR is pure or cgo, TARGET amd64, arm64 or armv7; default: all six.
# env: VERSION, PKG (./cmd/robot-agent), SRC_DIR (repo root), CGO_TAGS,
#      DIST (dist/), GO.
# Run build/install-cross-deps.sh first (make cross does).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

specs=("$@")
if [[ ${#specs[@]} -eq 0 ]]; then
	specs=(pure-amd64 pure-arm64 pure-armv7 cgo-amd64 cgo-arm64 cgo-armv7)
fi
mkdir -p "$DIST"
# test-arm.sh and package-deb.sh read the version the binaries carry here.
echo "$VERSION" >"$DIST/VERSION"
ldflags="-s -w -X main.version=$VERSION"

for spec in "${specs[@]}"; do
	flavor=${spec%%-*} target=${spec#*-}
	target_vars "$target"
	out=$(binary_path "$target" "$flavor")
	start=$SECONDS
	case $flavor in
	pure)
		(cd "$SRC_DIR" && CGO_ENABLED=0 GOOS=linux GOARCH=$GOARCH_ GOARM=$GOARM_ \
			"$GO" build -trimpath -ldflags "$ldflags" -o "$out" "$PKG")
		want="$FILEPAT.*statically linked"
		;;
	cgo)
		cc=$TRIPLET-gcc cxx=$TRIPLET-g++
		if [[ $target == amd64 ]]; then cc=gcc cxx=g++; fi
		for tool in "$cc" "$cxx"; do
			command -v "$tool" >/dev/null || {
				echo "cross: $tool missing: run build/install-cross-deps.sh" >&2
				exit 1
			}
		done
		# pkg-config must find the target's .pc files, never the host's.
		(cd "$SRC_DIR" && CGO_ENABLED=1 GOOS=linux GOARCH=$GOARCH_ GOARM=$GOARM_ CC=$cc CXX=$cxx \
			PKG_CONFIG_LIBDIR=/usr/lib/$TRIPLET/pkgconfig:/usr/share/pkgconfig PKG_CONFIG_PATH='' \
			"$GO" build -trimpath -tags "$CGO_TAGS" -ldflags "$ldflags" -o "$out" "$PKG")
		want="$FILEPAT.*dynamically linked"
		;;
	*)
		echo "cross: unknown flavor in $spec (want pure-TARGET or cgo-TARGET)" >&2
		exit 1
		;;
	esac

	desc=$(file -b "$out")
	if ! grep -Eq "$want" <<<"$desc"; then
		echo "cross: $out: file says '$desc', want /$want/" >&2
		exit 1
	fi
	link="statically linked"
	if [[ $flavor == cgo ]]; then
		need=$(objdump -T "$out" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
		if [[ $(printf '%s\n%s\n' "$need" "$GLIBC_FLOOR" | sort -V | tail -1) != "$GLIBC_FLOOR" ]]; then
			echo "cross: $out needs glibc $need, above the documented floor $GLIBC_FLOOR" >&2
			exit 1
		fi
		link="dynamically linked, needs glibc >= $need"
	fi
	printf 'cross: %-36s %4ds  %s, %s\n' "${out#"$ROOT"/}" $((SECONDS - start)) "$(cut -d, -f1-2 <<<"$desc")" "$link"
done

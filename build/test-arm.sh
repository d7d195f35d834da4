#!/usr/bin/env bash
# Tests the ARM builds under qemu-user emulation on an x86-64 host:
#   gotest    the pure-Go test suite for each target, via go test -exec qemu
#   binaries  each cross-built binary (pure and cgo): `version`, then a
#             `run --sim --duration 5s` session, which must exit 0 and last
#             at least the duration
# usage: build/test-arm.sh [gotest|binaries]...   (default: both)
# env: TEST_ARM_TARGETS ("arm64 armv7"), TEST_ARM_FLAGS ("-short": real-time
#      tests are skipped, emulation is 5-20x slower), TEST_ARM_PKGS ("./..."),
#      SIM_SECONDS (5), SIM_EXPECT (regex the session's output must match:
#      mic frames reached the embedded gateway), VERSION (default: the one
#      cross.sh recorded).
# Needs build/install-cross-deps.sh and, for binaries, build/cross.sh first.
set -euo pipefail
USE_BUILT_VERSION=1
. "$(dirname "$0")/lib.sh"

read -ra targets <<<"${TEST_ARM_TARGETS:-arm64 armv7}"
read -ra flags <<<"${TEST_ARM_FLAGS--short}"
read -ra pkgs <<<"${TEST_ARM_PKGS:-./...}"
sim=${SIM_SECONDS:-5}
expect=${SIM_EXPECT:-[1-9][0-9]* frames sent}
steps=("$@")
[[ ${#steps[@]} -gt 0 ]] || steps=(gotest binaries)
fail=0

gotest() {
	local t=$1 start=$SECONDS
	target_vars "$t"
	echo "test-arm: go test ${flags[*]} ${pkgs[*]} for linux/$GOARCH_${GOARM_:+ GOARM=$GOARM_} under $QEMU"
	# timeout -s KILL: a test binary that hangs under emulation is killed
	# rather than left spinning; go test's own -timeout would only panic it.
	if (cd "$ROOT" && CGO_ENABLED=0 GOOS=linux GOARCH=$GOARCH_ GOARM=$GOARM_ \
		"$GO" test "${flags[@]}" -exec "timeout -s KILL 900 $QEMU" "${pkgs[@]}"); then
		echo "test-arm: go test linux/$t passed in $((SECONDS - start))s"
	else
		echo "test-arm: go test linux/$t FAILED after $((SECONDS - start))s" >&2
		fail=1
	fi
}

binaries() {
	local t=$1 flavor bin out want rc start elapsed tmp
	target_vars "$t"
	for flavor in pure cgo; do
		bin=$(binary_path "$t" "$flavor")
		if [[ ! -x $bin ]]; then
			echo "test-arm: $bin missing: run build/cross.sh (make cross)" >&2
			fail=1
			continue
		fi
		cgo=false
		[[ $flavor == cgo ]] && cgo=true
		want="^robot-agent [^ ]+ \(linux/$GOARCH_, go[0-9][^,]*, cgo=${cgo}[,)]"
		if out=$(run_emulated "$t" 60 "$bin" version 2>&1) && grep -Eq "$want" <<<"$out" &&
			[[ $out == "robot-agent $VERSION ("* ]]; then
			echo "test-arm: ${bin#"$ROOT"/} version: $out"
		else
			echo "test-arm: ${bin#"$ROOT"/} version FAILED: got '$out', want version $VERSION and /$want/" >&2
			fail=1
			continue
		fi
		# A cgo binary must report the optional features it was built with.
		if [[ $flavor == cgo ]]; then
			have=,$(sed -n 's/.*tags=\([^ )]*\).*/\1/p' <<<"$out"),
			for tag in ${CGO_TAGS//,/ }; do
				if [[ $have != *,$tag,* ]]; then
					echo "test-arm: ${bin#"$ROOT"/} was built with -tags $CGO_TAGS but its version reports tags=${have//\,/}: is the $tag code wired into cmd/robot-agent?" >&2
					fail=1
				fi
			done
		fi

		tmp=$(mktemp -d)
		start=$(date +%s.%N)
		rc=0
		(cd "$tmp" && run_emulated "$t" $((sim + 120)) "$bin" run --sim --duration "${sim}s" >"$tmp/log" 2>&1) || rc=$?
		elapsed=$(echo "$(date +%s.%N) - $start" | bc)
		if [[ $rc -eq 0 ]] && (($(echo "$elapsed >= $sim" | bc))) && grep -Eq "$expect" "$tmp/log"; then
			printf 'test-arm: %s run --sim --duration %ss: exit 0 after %.1fs, %s\n' "${bin#"$ROOT"/}" "$sim" "$elapsed" "$(grep -Eo "$expect" "$tmp/log" | head -1)"
		else
			printf 'test-arm: %s run --sim --duration %ss FAILED: exit %d after %.1fs (want 0, >= %ss, output matching /%s/); log tail:\n' \
				"${bin#"$ROOT"/}" "$sim" "$rc" "$elapsed" "$sim" "$expect" >&2
			tail -20 "$tmp/log" >&2
			fail=1
		fi
		rm -rf "$tmp"
	done
}

for step in "${steps[@]}"; do
	case $step in
	gotest | binaries)
		for t in "${targets[@]}"; do "$step" "$t"; done
		;;
	*)
		echo "test-arm: unknown step $step (want gotest or binaries)" >&2
		exit 2
		;;
	esac
done
if [[ $fail -ne 0 ]]; then
	echo "test-arm: FAILED" >&2
	exit 1
fi
echo "test-arm: all passed"

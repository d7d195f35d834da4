#!/usr/bin/env bash
# Writes the Debian changelog of the package (changelog.Debian.gz for
# /usr/share/doc/robot-agent) from git history: one entry for this build's
# VERSION with the commits since the last release tag, then one entry per
# earlier release tag vX.Y.Z[-pre] with the commits it added (at most
# MAX_LINES subjects each). Dates are the commits' own, and gzip -n stores
# no time stamp, so the same commit gives the same bytes. Without git
# history (a source tarball) the entry says so.
#
# usage: build/changelog.sh OUT.gz
# env: VERSION, MAINTAINER, MAX_LINES (40)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
out=${1:?usage: build/changelog.sh OUT.gz}
MAINTAINER=${MAINTAINER:-robot-agent maintainers <maintainers@robot-agent.invalid>}
MAX_LINES=${MAX_LINES:-40}

# entry VERSION DATE < subjects
entry() {
	echo "robot-agent ($1) unstable; urgency=medium"
	echo
	local n=0 line
	while IFS= read -r line; do
		n=$((n + 1))
		if ((n > MAX_LINES)); then
			# Read on to the end: a writer left with more than a pipe
			# buffer of subjects would die of SIGPIPE (pipefail: exit 141).
			((n == MAX_LINES + 1)) && echo "  * ... and more (see the git history)."
			continue
		fi
		echo "  * $line" | fold -s -w 78 | sed -e 's/ *$//' -e '2,$s/^/    /'
	done
	((n > 0)) || echo "  * No changes recorded."
	echo
	echo " -- $MAINTAINER  $2"
	echo
}

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
	# Release tags, newest first, with the commit each points at.
	mapfile -t tags < <(git -C "$ROOT" tag --list 'v[0-9]*.[0-9]*.[0-9]*' --merged HEAD --sort=-creatordate)
	if [[ ${#tags[@]} -gt 0 && $(git -C "$ROOT" rev-parse "${tags[0]}^{commit}") == $(git -C "$ROOT" rev-parse HEAD) ]]; then
		: # HEAD is a release: its own entry comes from the tag loop
	else
		range=HEAD
		[[ ${#tags[@]} -gt 0 ]] && range="${tags[0]}..HEAD"
		git -C "$ROOT" log --no-merges --format=%s "$range" |
			entry "$VERSION" "$(git -C "$ROOT" log -1 --format=%aD HEAD)" >>"$tmp"
	fi
	for i in "${!tags[@]}"; do
		t=${tags[$i]} range=${tags[$i]}
		[[ $((i + 1)) -lt ${#tags[@]} ]] && range="${tags[$((i + 1))]}..$t"
		git -C "$ROOT" log --no-merges --format=%s "$range" |
			entry "$(deb_version "$t")" "$(git -C "$ROOT" log -1 --format=%aD "$t")" >>"$tmp"
	done
else
	echo "Built from a source tree without git history." | entry "$VERSION" "$(date -R)" >>"$tmp"
fi
gzip -9n <"$tmp" >"$out"

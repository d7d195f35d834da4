#!/usr/bin/env bash
# Prints robot-agent's version for the commit checked out in DIR (default:
# this repository): a Debian upstream version derived from semver tags, the
# same string for the binary (`robot-agent version`) and the .deb. See
# git_version in build/lib.sh for the scheme; build/version_test.go checks
# with dpkg --compare-versions that it orders builds as history does.
#
# usage: build/version.sh [DIR]
set -euo pipefail
VERSION=x # lib.sh must not compute it on its own here
. "$(dirname "$0")/lib.sh"
git_version "${1:-$ROOT}"

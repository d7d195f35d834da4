#!/usr/bin/env bash
# Install -> upgrade -> config kept -> remove -> purge test of the .deb in a
# scratch root: builds three packages of this tree (versions
# 0.0.1~test.1..3, pure-Go binary for this machine; the third ships a
# changed default config) and drives real dpkg on them with
# --root=<scratch> --force-script-chrootless. The maintainer scripts then
# run on the host with DPKG_ROOT=<scratch> and must keep every change under
# it (the test also checks that the host's /etc/passwd is untouched).
#
# Checks: files, version, copyright and changelog.Debian.gz after install;
# the service user created by systemd-sysusers; a conffile edited by the user
# survives an upgrade whose default config is unchanged (no prompt) and one
# whose default changed (kept with --force-confold, as `apt-get upgrade -y`
# with Dpkg::Options::=--force-confold does; the new default lands in
# config.yaml.dpkg-dist); remove keeps the config and the state directory;
# purge removes both.
#
# usage: build/test-deb-upgrade.sh    (root; skipped with a message otherwise)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [[ $EUID -ne 0 ]]; then
	echo "test-deb-upgrade: SKIPPED: dpkg must run as root to install into a scratch root (run: sudo make test-deb-upgrade)"
	exit 0
fi
for tool in dpkg dpkg-deb dpkg-query "$GO" systemd-sysusers; do
	command -v "$tool" >/dev/null || {
		echo "test-deb-upgrade: $tool missing (build/install-cross-deps.sh installs systemd)" >&2
		exit 1
	}
done

case $(dpkg --print-architecture) in
amd64) target=amd64 ;;
arm64) target=arm64 ;;
armhf) target=armv7 ;;
*)
	echo "test-deb-upgrade: SKIPPED: no package target for $(dpkg --print-architecture)"
	exit 0
	;;
esac
target_vars "$target"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
	echo "test-deb-upgrade: FAIL: $*" >&2
	[[ -s $work/dpkg.out ]] && sed 's/^/  dpkg: /' "$work/dpkg.out" >&2
	exit 1
}
step() { echo "test-deb-upgrade: $*"; }

# Three packages. nfpm is built once (package-deb.sh would `go run` it each
# time).
GOBIN=$work/bin "$GO" install github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2
export NFPM=$work/bin/nfpm
cp "$ROOT/build/config.yaml" "$work/config-new.yaml"
printf '\n# (a later default config: this line differs)\n' >>"$work/config-new.yaml"
for i in 1 2 3; do
	v=0.0.1~test.$i
	mkdir -p "$work/dist$i"
	bin=$work/dist$i/robot-agent-linux-$target
	(cd "$ROOT" && CGO_ENABLED=0 GOARCH=$GOARCH_ GOARM=$GOARM_ "$GO" build -trimpath \
		-ldflags "-s -w -X main.version=$v" -o "$bin" ./cmd/robot-agent)
	cfg=$ROOT/build/config.yaml
	[[ $i == 3 ]] && cfg=$work/config-new.yaml
	DIST=$work/dist$i VERSION=$v FLAVOR=pure CONFIG=$cfg "$ROOT/build/package-deb.sh" "$target" >/dev/null
	debs[i]=$(ls "$work/dist$i"/robot-agent_*_"$DEBARCH".deb)
done

# The scratch root: an empty dpkg database and Debian's base users/groups.
R=$work/root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/triggers" "$R/etc" "$R/var/log"
: >"$R/var/lib/dpkg/status"
: >"$R/var/lib/dpkg/available"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$R/etc/passwd"
printf 'root:x:0:\naudio:x:29:\nvideo:x:44:\n' >"$R/etc/group"
host_passwd=$(sha256sum /etc/passwd /etc/group)

dpkg_() {
	dpkg --root="$R" --log="$work/dpkg.log" --force-script-chrootless --force-not-root "$@" </dev/null >"$work/dpkg.out" 2>&1 ||
		fail "dpkg $* failed"
}
status() { dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${db:Status-Abbrev}${Version}' robot-agent 2>/dev/null || true; }
conf=$R/etc/robot-agent/config.yaml

step "install 0.0.1~test.1"
dpkg_ -i "${debs[1]}"
[[ $(status) == "ii 0.0.1~test.1" ]] || fail "after install, status is '$(status)'"
out=$("$R/usr/bin/robot-agent" version) || fail "installed binary: $out"
[[ $out == "robot-agent 0.0.1~test.1 ("* ]] || fail "installed binary says '$out'"
for f in /usr/bin/robot-agent /etc/robot-agent/config.yaml /lib/systemd/system/robot-agent.service \
	/usr/share/doc/robot-agent/copyright /usr/share/doc/robot-agent/changelog.Debian.gz; do
	[[ -s $R$f ]] || fail "$f not installed"
done
grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' "$R/usr/share/doc/robot-agent/copyright" ||
	fail "copyright is not a machine-readable copyright file"
zcat "$R/usr/share/doc/robot-agent/changelog.Debian.gz" >"$work/changelog"
clv=$(dpkg-parsechangelog -l "$work/changelog" -S Version 2>/dev/null || head -1 "$work/changelog")
[[ $clv == *0.0.1~test.1* ]] || fail "changelog's first entry is '$clv', want version 0.0.1~test.1"
grep -q "^ /etc/robot-agent/config.yaml [0-9a-f]*$" <(dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${Conffiles}\n' robot-agent) ||
	fail "/etc/robot-agent/config.yaml is not a registered conffile"
tok=$R/etc/robot-agent/gateway-token
[[ -e $tok && ! -s $tok ]] || fail "postinst did not create the empty token placeholder (LoadCredential= needs the file)"
[[ $(stat -c %a "$tok") == 600 ]] || fail "token placeholder has mode $(stat -c %a "$tok"), want 600"
grep -q '^robot-agent:x:' "$R/etc/passwd" || fail "postinst did not create the robot-agent user in the scratch root"
grep -Eq '^gpio:x:[0-9]+:(.*,)?robot-agent' "$R/etc/group" || fail "robot-agent is not in group gpio"

step "edit the conffile as an installer would"
sed -i 's/^  level: info$/  level: debug/' "$conf"
printf '# edited on this robot\n' >>"$conf"
grep -q '^  level: debug$' "$conf" || fail "test could not edit $conf"
edited=$(sha256sum <"$conf")

printf 's3cret\n' >"$tok"

step "upgrade to 0.0.1~test.2 (same default config): no prompt, edit kept"
mkdir -p "$R/var/lib/robot-agent/bundles"
echo state >"$R/var/lib/robot-agent/bundles/keep"
dpkg_ -i "${debs[2]}"
[[ $(status) == "ii 0.0.1~test.2" ]] || fail "after upgrade, status is '$(status)'"
[[ $("$R/usr/bin/robot-agent" version) == "robot-agent 0.0.1~test.2 ("* ]] || fail "binary not upgraded"
[[ $(sha256sum <"$conf") == "$edited" ]] || fail "upgrade changed the edited $conf"
[[ ! -e $conf.dpkg-dist ]] || fail "unexpected $conf.dpkg-dist"
[[ $(cat "$tok") == s3cret ]] || fail "upgrade touched the token"

step "upgrade to 0.0.1~test.3 (new default config) with --force-confdef --force-confold: edit kept"
dpkg_ --force-confdef --force-confold -i "${debs[3]}"
[[ $(status) == "ii 0.0.1~test.3" ]] || fail "after the second upgrade, status is '$(status)'"
[[ $(sha256sum <"$conf") == "$edited" ]] || fail "upgrade replaced the edited $conf"
cmp -s "$conf.dpkg-dist" "$work/config-new.yaml" || fail "the new default config is not in $conf.dpkg-dist"
cmp -s "$R/usr/share/robot-agent/config.yaml" "$work/config-new.yaml" || fail "/usr/share/robot-agent/config.yaml is not the new default"

step "remove: binary gone, config and state kept"
dpkg_ -r robot-agent
[[ ! -e $R/usr/bin/robot-agent ]] || fail "binary left after remove"
[[ $(sha256sum <"$conf") == "$edited" ]] || fail "remove touched $conf"
[[ -e $R/var/lib/robot-agent/bundles/keep ]] || fail "remove deleted the state directory"
[[ $(status) == "rc 0.0.1~test.3" ]] || fail "after remove, status is '$(status)'"

step "purge: config and state gone"
dpkg_ -P robot-agent
[[ ! -e $conf && ! -e $conf.dpkg-dist ]] || fail "purge left $conf"
[[ ! -e $R/var/lib/robot-agent ]] || fail "purge left /var/lib/robot-agent"
[[ ! -e $tok ]] || fail "purge left the token file"
[[ -z $(status) || $(status) == "pn"* || $(status) == "un"* ]] || fail "after purge, status is '$(status)'"

[[ $(sha256sum /etc/passwd /etc/group) == "$host_passwd" ]] || fail "the maintainer scripts changed the host's /etc/passwd or /etc/group"
echo "test-deb-upgrade: ok (install, 2 upgrades with the edited conffile kept, remove, purge; $DEBARCH)"

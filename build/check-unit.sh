#!/usr/bin/env bash
# Checks the systemd unit: the settings the deployment relies on are there,
# `systemd-analyze verify` is silent, and `systemd-analyze security` rates
# its exposure at most MAX_EXPOSURE (3.0).
#
# usage: build/check-unit.sh [UNIT [BINARY]]
#   UNIT defaults to build/systemd/robot-agent.service. verify needs the
#   ExecStart binary to exist, so it runs on a copy whose ExecStart points at
#   BINARY (default: the amd64 binary in dist/ if built, else /bin/true).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

unit=${1:-$ROOT/build/systemd/robot-agent.service}
bin=${2:-}
if [[ -z $bin ]]; then
	bin=$(binary_path amd64 pure)
	[[ -x $bin ]] || bin=/bin/true
fi
max=${MAX_EXPOSURE:-3.0}
command -v systemd-analyze >/dev/null || {
	echo "check-unit: systemd-analyze missing: run build/install-cross-deps.sh" >&2
	exit 1
}
fail=0
bad() {
	echo "check-unit: $*" >&2
	fail=1
}

# 1. Settings the agent and the deployment rely on.
want=(
	'^Type=notify$' '^NotifyAccess=main$' '^WatchdogSec=' '^Restart=on-failure$' '^RestartSec=5$'
	'^User=robot-agent$' '^LoadCredential=gateway-token:/etc/robot-agent/gateway-token$'
	'^StateDirectory=robot-agent$' '^NoNewPrivileges=yes$' '^ProtectSystem=strict$' '^PrivateTmp=yes$'
	'^ProtectKernelTunables=yes$' '^ProtectKernelModules=yes$' '^ProtectKernelLogs=yes$'
	'^RestrictAddressFamilies=' '^DevicePolicy=closed$' '^CapabilityBoundingSet=$'
	'^ExecStart=/usr/bin/robot-agent run --config /etc/robot-agent/config.yaml$'
	# Real-time audio callbacks (docs/deploy.md): SCHED_FIFO up to the
	# agent's default audio_devices.realtime_priority (20).
	'^RestrictRealtime=no$' '^LimitRTPRIO=(2[0-9]|[3-9][0-9])$' '^SystemCallFilter=.*sched_setscheduler'
)
for re in "${want[@]}"; do
	grep -Eq "$re" "$unit" || bad "$unit lacks a line matching /$re/"
done
allowed=$(grep -E '^DeviceAllow=' "$unit" | sort | tr '\n' ' ')
expected="DeviceAllow=char-alsa rw DeviceAllow=char-gpiochip rw DeviceAllow=char-i2c rw DeviceAllow=char-video4linux rw "
[[ $allowed == "$expected" ]] || bad "DeviceAllow is '$allowed', want exactly '$expected'"
if grep -E '^(ExecStart|Environment)' "$unit" | grep -qiE 'token|secret|password'; then
	bad "a secret is passed on the command line or in the environment"
fi

# 2. systemd-analyze verify, on a copy whose ExecStart exists here.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed "s#^ExecStart=/usr/bin/robot-agent#ExecStart=$bin#" "$unit" >"$work/robot-agent.service"
if ! out=$(systemd-analyze verify "$work/robot-agent.service" 2>&1) || [[ -n $out ]]; then
	bad "systemd-analyze verify: ${out:-non-zero exit}"
else
	echo "check-unit: systemd-analyze verify: clean"
fi

# 3. systemd-analyze security (offline: no running systemd needed).
sec=$(systemd-analyze security --offline=true "$work/robot-agent.service" 2>&1) || true
score=$(sed -n 's/.*Overall exposure level for robot-agent.service: \([0-9.]*\).*/\1/p' <<<"$sec")
if [[ -z $score ]]; then
	bad "systemd-analyze security gave no score: $sec"
elif (($(echo "$score > $max" | bc))); then
	bad "exposure $score above $max; unmet:"
	grep '✗' <<<"$sec" >&2 || true
else
	echo "check-unit: systemd-analyze security: exposure $score (max $max)"
fi

[[ $fail -eq 0 ]] || {
	echo "check-unit: FAILED" >&2
	exit 1
}
echo "check-unit: ok"

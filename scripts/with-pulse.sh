#!/usr/bin/env bash
# with-pulse.sh CMD [ARGS...]: runs CMD with a private PulseAudio daemon whose
# default sink is a null sink (ci_sink, 48 kHz stereo) and whose default
# source is that sink's monitor, so what the agent plays can be recorded back.
# PortAudio reaches it through ALSA's pulse plugin (devices "pulse" and
# "default"). The daemon is stopped by its PID afterwards and CMD's exit code
# is returned. Without pulseaudio installed, CMD simply runs (tests that need
# audio then skip).
#
# Exported to CMD: XDG_RUNTIME_DIR and HOME (private, so the client finds the
# daemon's socket and cookie), JACK_NO_START_SERVER=1 (keeps PortAudio's JACK
# probe quiet), ROBOT_AGENT_REQUIRE_AUDIO=1 (audio tests fail instead of
# skipping), ROBOT_AGENT_PULSE_SINK / ROBOT_AGENT_PULSE_SOURCE (names for
# pactl/parec). The Go caches are pinned to their usual places so the private
# HOME does not cause a rebuild.
#
# See scripts/pulse/ci.pa and ../docs/audio.md.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ $# -eq 0 ]; then
  echo "usage: $0 command [args...]" >&2
  exit 2
fi
if ! command -v pulseaudio >/dev/null 2>&1 || ! command -v pactl >/dev/null 2>&1; then
  echo "with-pulse: pulseaudio/pactl not installed; running without a sound server" >&2
  exec "$@"
fi

# Pin the Go environment before HOME moves (GOPATH, GOCACHE and the go env
# file default to paths under HOME).
if command -v go >/dev/null 2>&1; then
  for v in GOPATH GOCACHE GOMODCACHE GOENV; do
    export "$v=$(go env "$v")"
  done
fi

dir="$(mktemp -d "${TMPDIR:-/tmp}/robot-agent-pulse.XXXXXX")"
export XDG_RUNTIME_DIR="$dir/run" HOME="$dir/home" JACK_NO_START_SERVER=1
mkdir -p -m 700 "$XDG_RUNTIME_DIR" "$HOME"
log="$dir/pulseaudio.log"
pid=""

# running PID: true while PID exists and is not a zombie (the daemon's parent
# is init, which may be slow to reap it).
running() {
  local st
  st="$(ps -o stat= -p "$1" 2>/dev/null || true)"
  [ -n "$st" ] && [ "${st#Z}" = "$st" ]
}

stop_daemon() {
  if [ -n "$pid" ] && running "$pid"; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do running "$pid" || break; sleep 0.05; done
    if running "$pid"; then kill -9 "$pid" 2>/dev/null || true; fi
  fi
  rm -rf "$dir"
}
trap stop_daemon EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ! pulseaudio --daemonize=yes --system=false --exit-idle-time=-1 --disallow-exit=yes \
    -n -F "$here/pulse/ci.pa" --log-target="file:$log" 2>>"$log"; then
  echo "with-pulse: pulseaudio failed to start:" >&2
  cat "$log" >&2
  exit 1
fi
pidfile="$XDG_RUNTIME_DIR/pulse/pid"
for _ in $(seq 100); do
  [ -s "$pidfile" ] && pactl info >/dev/null 2>&1 && break
  sleep 0.05
done
pid="$(cat "$pidfile" 2>/dev/null || true)"
if [ -z "$pid" ] || ! pactl info >/dev/null 2>&1; then
  echo "with-pulse: pulseaudio did not come up within 5 s:" >&2
  cat "$log" >&2
  exit 1
fi
# Restart the sink clock so the keepalive's 10 ms latency applies at once.
pactl suspend-sink ci_sink 1 && pactl suspend-sink ci_sink 0

export ROBOT_AGENT_REQUIRE_AUDIO=1 ROBOT_AGENT_PULSE_SINK=ci_sink ROBOT_AGENT_PULSE_SOURCE=ci_sink.monitor
echo "with-pulse: private PulseAudio $(pactl info | sed -n 's/^Server Version: //p') (pid $pid) in $dir" >&2
rc=0
"$@" || rc=$?
exit "$rc"

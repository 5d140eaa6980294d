#!/usr/bin/env bash
# Runs moto's S3-compatible server on 127.0.0.1 for tests and the demo.
#   s3.sh start NAME   start server NAME on a free port of 127.0.0.1 (S3_HOST: another
#                      address of this machine, e.g. the host end of the test node's link);
#                      prints url=, pid=
#   s3.sh stop NAME    stop it by PID
#   s3.sh logs NAME    print its log
set -euo pipefail
source "$(dirname "$0")/lib.sh"

cmd=${1:-}; name=${2:-}
if [ -z "$cmd" ] || [ -z "$name" ]; then die "usage: $0 start|stop|logs NAME"; fi
run="$BIN_DIR/run/s3-$name"

running() { [ -f "$run/pid" ] && kill -0 "$(cat "$run/pid")" 2>/dev/null; }

start() {
  mkdir -p "$run"
  if ! running; then
    local server port
    server=$(bash "$ROOT_DIR/hack/install-s3.sh")
    host=${S3_HOST:-127.0.0.1}
    port=$(python3 -c "import socket; s=socket.socket(); s.bind(('$host', 0)); print(s.getsockname()[1])")
    echo "$host:$port" >"$run/address"
    setsid "$server" -H "$host" -p "$port" >"$run/s3.log" 2>&1 </dev/null &
    echo $! >"$run/pid"
    for _ in $(seq 1 100); do
      curl -fsS -o /dev/null "http://$host:$port/" 2>/dev/null && break
      running || { cat "$run/s3.log" >&2; die "moto_server exited"; }
      sleep 0.2
    done
  fi
  echo "url=http://$(cat "$run/address")"
  echo "pid=$(cat "$run/pid")"
}

stop() {
  running || return 0
  local pid; pid=$(cat "$run/pid")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -rf "$run"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  logs) cat "$run/s3.log" ;;
  *) die "unknown command $cmd" ;;
esac

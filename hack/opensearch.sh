#!/usr/bin/env bash
# Runs local OpenSearch nodes (with k-NN) on 127.0.0.1 for tests and the demo.
#   opensearch.sh start NAME    start (or restart) node NAME; prints url=, pid=, simd=
#   opensearch.sh stop NAME     stop it by PID, keeping its data (a later start resumes it)
#   opensearch.sh destroy NAME  stop it and remove its data
#   opensearch.sh logs NAME     print its log
#   opensearch.sh url NAME      print its URL
# Each node has its own folder under bin/run/opensearch-NAME (config, data, log, pid, ports).
# Settings appended to opensearch.yml: the file named by OPENSEARCH_EXTRA_CONFIG, if set.
# Secure settings (keystore): key=value lines in the file named by OPENSEARCH_KEYSTORE, if set.
# JVM vector options: OPENSEARCH_VECTOR_OPTS, if set (empty: Lucene's scalar vector code),
# else the vector module (Panama) at the CPU's widest vectors.
# OPENSEARCH_CLUSTER="A B ...": the named nodes form one cluster (this one among them, the
# first bootstrapping it), each started on its own; unset, a node is a cluster of one.
# start waits for health yellow; OPENSEARCH_WAIT_FOR=http waits only for an HTTP answer (a
# node whose indexes are red, e.g. after losing its data, until they are restored).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

OPENSEARCH_HEAP=${OPENSEARCH_HEAP:-1g}
START_TIMEOUT=${OPENSEARCH_START_TIMEOUT:-180}
RUN_USER_ID=${OPENSEARCH_UID:-65534} # OpenSearch refuses to run as root

java_bin() {
  # The 3.x line needs JDK 21+ (Lucene 10's Panama vector code); Temurin 25 is the machine's.
  # The 2.x line runs under the Java security manager, which JDK 24 removed: JDK 17 to 23
  # (hack/install-opensearch.sh installs Debian's 17).
  local j candidates=(/usr/lib/jvm/temurin-25-jdk-* /usr/lib/jvm/temurin-2[1-9]-* /usr/lib/jvm/java-2[1-9]-*) wanted="21+"
  if [ "${OPENSEARCH_VERSION%%.*}" -lt 3 ]; then
    candidates=(/usr/lib/jvm/java-17-openjdk-* /usr/lib/jvm/temurin-17-* /usr/lib/jvm/java-21-openjdk-* /usr/lib/jvm/temurin-21-*) wanted="17 to 23"
  fi
  for j in ${OPENSEARCH_JAVA_HOME:-} "${candidates[@]}"; do
    [ -x "$j/bin/java" ] && { echo "$j/bin/java"; return 0; }
  done
  die "no JDK $wanted for OpenSearch $OPENSEARCH_VERSION found under /usr/lib/jvm (set OPENSEARCH_JAVA_HOME)"
}

cmd=${1:-}; name=${2:-}
# java-home: the JDK nodes run with (the e2e image carries the same one).
if [ "$cmd" = java-home ]; then dirname "$(dirname "$(java_bin)")"; exit 0; fi
if [ -z "$cmd" ] || [ -z "$name" ]; then die "usage: $0 start|stop|destroy|logs|url NAME | java-home"; fi
run="$BIN_DIR/run/opensearch-$name"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

running() { [ -f "$run/pid" ] && kill -0 "$(cat "$run/pid")" 2>/dev/null; }

url() { echo "http://127.0.0.1:$(cat "$run/http.port")"; }

# ports_of DIR gives a node's folder its ports, once.
ports_of() {
  mkdir -p "$1"
  [ -f "$1/http.port" ] || free_port >"$1/http.port"
  [ -f "$1/transport.port" ] || free_port >"$1/transport.port"
}

# discovery is how the node finds its cluster: alone, or the members' transport ports (each
# member's folder gets its ports now, so whichever starts first knows the others').
discovery() {
  local members first seeds=() m
  read -ra members <<<"${OPENSEARCH_CLUSTER:-}"
  if ((${#members[@]} == 0)); then
    printf 'cluster.name: vectorpilot-%s\ndiscovery.type: single-node\n' "$name"
    return
  fi
  [[ " ${members[*]} " == *" $name "* ]] || die "node $name is not among OPENSEARCH_CLUSTER ($OPENSEARCH_CLUSTER)"
  first=${members[0]}
  for m in "${members[@]}"; do
    ports_of "$BIN_DIR/run/opensearch-$m"
    seeds+=("127.0.0.1:$(cat "$BIN_DIR/run/opensearch-$m/transport.port")")
  done
  printf 'cluster.name: vectorpilot-%s\ndiscovery.seed_hosts: [%s]\ncluster.initial_cluster_manager_nodes: [%s]\n' \
    "$first" "$(IFS=,; echo "${seeds[*]}")" "$first"
}

write_config() {
  mkdir -p "$run/config" "$run/data" "$run/logs" "$run/repo" "$run/tmp"
  ports_of "$run"
  cp "$ROOT_DIR/hack/opensearch/log4j2.properties" "$run/config/"
  cat >"$run/config/opensearch.yml" <<YML
node.name: $name
network.host: 127.0.0.1
http.port: $(cat "$run/http.port")
transport.port: $(cat "$run/transport.port")
$(discovery)
path.data: $run/data
path.logs: $run/logs
path.repo: [$run/repo]
YML
  if [ -n "${OPENSEARCH_EXTRA_CONFIG:-}" ]; then cat "$OPENSEARCH_EXTRA_CONFIG" >>"$run/config/opensearch.yml"; fi
}

start() {
  if running; then log "node $name already running"; report; return 0; fi
  local home java
  home=$(bash "$ROOT_DIR/hack/install-opensearch.sh")
  java=$(java_bin)
  write_config
  if [ -n "${OPENSEARCH_KEYSTORE:-}" ]; then
    "$java" -cp "$home/lib/*" "$ROOT_DIR/hack/opensearch/Keystore.java" "$run/config" <"$OPENSEARCH_KEYSTORE" \
      || die "writing the keystore of node $name failed"
  fi
  local as_user=()
  if [ "$(id -u)" = 0 ]; then
    chown -R "$RUN_USER_ID:$RUN_USER_ID" "$run"
    as_user=(setpriv --reuid="$RUN_USER_ID" --regid="$RUN_USER_ID" --clear-groups)
  fi
  : >"$run/opensearch.log"
  # --add-modules jdk.incubator.vector turns on Lucene's SIMD (Panama) vector code.
  local vector_opts
  read -ra vector_opts <<<"${OPENSEARCH_VECTOR_OPTS---add-modules=jdk.incubator.vector}"
  # The k-NN engines' native libraries are loaded from the plugin's lib/, as the official
  # distribution sets it (LD_LIBRARY_PATH, which the JVM's library path starts with).
  LD_LIBRARY_PATH="$home/plugins/opensearch-knn/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  setsid "${as_user[@]}" "$java" -Xms"$OPENSEARCH_HEAP" -Xmx"$OPENSEARCH_HEAP" \
    "${vector_opts[@]}" --enable-native-access=ALL-UNNAMED \
    -XX:+UseG1GC -Dfile.encoding=UTF-8 -Djava.io.tmpdir="$run/tmp" \
    -Dlog4j2.disable.jmx=true -Dlog4j.shutdownHookEnabled=false \
    -Dopensearch.path.home="$home" -Dopensearch.path.conf="$run/config" \
    -Dopensearch.distribution.type=tar -Dopensearch.bundled_jdk=false \
    -cp "$home/lib/*" org.opensearch.bootstrap.OpenSearch \
    >>"$run/opensearch.log" 2>&1 </dev/null &
  echo $! >"$run/pid"
  wait_ready
  report
}

wait_ready() {
  local deadline=$((SECONDS + START_TIMEOUT))
  while ((SECONDS < deadline)); do
    if ! running; then
      tail -n 40 "$run/opensearch.log" >&2
      die "node $name exited during start-up (log: $run/opensearch.log)"
    fi
    if [ "${OPENSEARCH_WAIT_FOR:-yellow}" = http ]; then
      curl -fsS "$(url)/" >/dev/null 2>&1 && return 0
    elif curl -fsS "$(url)/_cluster/health?wait_for_status=yellow&timeout=1s" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  tail -n 40 "$run/opensearch.log" >&2
  die "node $name not ready after ${START_TIMEOUT}s (log: $run/opensearch.log)"
}

# simd_status reads from the node's start-up log whether Lucene's Panama SIMD code is on.
simd_status() {
  local line
  line=$(grep -m1 -oE 'Java vector incubator API enabled; uses preferredBitSize=[0-9]+[^"]*' "$run/opensearch.log" || true)
  if [ -n "$line" ]; then echo "lucene-panama-enabled (${line#*uses })"
  elif grep -q 'vector incubator module is not readable' "$run/opensearch.log"; then echo "lucene-panama-disabled (module not readable)"
  else echo "lucene-panama-unknown"; fi
}

report() {
  echo "url=$(url)"
  echo "pid=$(cat "$run/pid")"
  echo "version=$(curl -fsS "$(url)" | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"]["number"])')"
  echo "simd=$(simd_status)"
}

stop() {
  running || { rm -f "$run/pid"; return 0; }
  local pid; pid=$(cat "$run/pid")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$run/pid"
  log "node $name stopped (pid $pid)"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  destroy) stop; rm -rf "$run" ;;
  logs) cat "$run/opensearch.log" ;;
  url) url ;;
  *) die "unknown command $cmd" ;;
esac

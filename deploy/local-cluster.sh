#!/usr/bin/env bash
# A local KRaft cluster on loopback: 3 dedicated controllers + 3 brokers, as processes.
#
#   deploy/local-cluster.sh start    format (once) and start every node
#   deploy/local-cluster.sh stop     SIGTERM every node (controlled shutdown), wait for them
#   deploy/local-cluster.sh status   which nodes run, and the quorum (metadata-quorum --status)
#   deploy/local-cluster.sh clean    stop, then delete the data under $SPARKLOG_CLUSTER_DIR
#
# Formatting follows Kafka's dynamic-quorum recipe (KIP-853): one cluster id from
# `storage random-uuid`, a directory id per controller, controllers formatted with
# --initial-controllers, brokers with --no-initial-controllers. Configs: deploy/cluster/.
# Logs and pid files go to $SPARKLOG_CLUSTER_DIR (default /tmp/sparklog-cluster), which must
# match log.dirs in the configs.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
DIR=${SPARKLOG_CLUSTER_DIR:-/tmp/sparklog-cluster}
CONF=deploy/cluster
CONTROLLERS=(controller-1 controller-2 controller-3)
BROKERS=(broker-4 broker-5 broker-6)
sparklog() { "$PY" -m sparklog.cli.main "$@"; }

node_port() { sed -n 's/^listeners=[A-Z]*:\/\/[^:]*:\([0-9]*\).*/\1/p' "$CONF/$1.properties"; }

format() {
  [ -f "$DIR/cluster.id" ] && return 0
  mkdir -p "$DIR"
  local cluster_id voters="" name id
  cluster_id=$(sparklog storage random-uuid)
  for name in "${CONTROLLERS[@]}"; do
    id=${name#controller-}
    voters+="${voters:+,}$id@127.0.0.1:$(node_port "$name"):$(sparklog storage random-uuid)"
  done
  for name in "${CONTROLLERS[@]}"; do
    sparklog storage format --cluster-id "$cluster_id" --config "$CONF/$name.properties" \
      --initial-controllers "$voters"
  done
  for name in "${BROKERS[@]}"; do
    sparklog storage format --cluster-id "$cluster_id" --config "$CONF/$name.properties" \
      --no-initial-controllers
  done
  echo "$cluster_id" > "$DIR/cluster.id"
}

running() { [ -f "$DIR/$1.pid" ] && kill -0 "$(cat "$DIR/$1.pid")" 2>/dev/null; }

start() {
  format
  for name in "${CONTROLLERS[@]}" "${BROKERS[@]}"; do
    if running "$name"; then echo "$name already running"; continue; fi
    nohup "$PY" -m sparklog.cli.main server start "$CONF/$name.properties" \
      >> "$DIR/$name.log" 2>&1 &
    echo $! > "$DIR/$name.pid"
    echo "started $name (pid $!, log $DIR/$name.log)"
  done
}

stop() {
  local name pid
  for name in "${BROKERS[@]}" "${CONTROLLERS[@]}"; do
    running "$name" || continue
    pid=$(cat "$DIR/$name.pid")
    kill -TERM "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
    rm -f "$DIR/$name.pid"
    echo "stopped $name"
  done
}

status() {
  local name
  for name in "${CONTROLLERS[@]}" "${BROKERS[@]}"; do
    if running "$name"; then echo "$name: running (pid $(cat "$DIR/$name.pid"))"
    else echo "$name: stopped"; fi
  done
  sparklog metadata-quorum --bootstrap-controller "127.0.0.1:$(node_port controller-1)" \
    describe --status || true
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  clean) stop; rm -rf "$DIR" ;;
  *) echo "usage: $0 start|stop|status|clean" >&2; exit 2 ;;
esac

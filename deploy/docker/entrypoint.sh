#!/bin/sh
# The container's entry point: format the node's directories on first start, then run it.
#
#   SPARKLOG_CONFIG               the node's server.properties (default /etc/sparklog/server.properties)
#   CLUSTER_ID                    the cluster id every node of the cluster is formatted with
#   SPARKLOG_INITIAL_CONTROLLERS  controllers: the initial voters, id@host:port:directory-id,...
#   SPARKLOG_STANDALONE=true      a single combined node that is its own quorum (--standalone)
#   (neither)                     a broker, or a controller that joins later (--no-initial-controllers)
#
# Formatting is skipped when `storage info` finds the directories formatted, so a restarted
# container keeps its data; a directory formatted for another cluster stops the node with the
# server's own message. The node runs as PID 1's replacement (exec), so `docker stop` sends it
# SIGTERM and it shuts down in a controlled way.
set -eu
CONFIG=${SPARKLOG_CONFIG:-/etc/sparklog/server.properties}
SPARKLOG=${SPARKLOG_BIN:-sparklog}

if ! $SPARKLOG storage info --config "$CONFIG" >/dev/null 2>&1; then
  if [ -z "${CLUSTER_ID:-}" ]; then
    echo "sparklog: $CONFIG is not formatted and CLUSTER_ID is not set (make one with: sparklog storage random-uuid)" >&2
    exit 2
  fi
  if [ -n "${SPARKLOG_INITIAL_CONTROLLERS:-}" ]; then
    $SPARKLOG storage format --cluster-id "$CLUSTER_ID" --config "$CONFIG" \
      --initial-controllers "$SPARKLOG_INITIAL_CONTROLLERS"
  elif [ "${SPARKLOG_STANDALONE:-false}" = "true" ]; then
    $SPARKLOG storage format --cluster-id "$CLUSTER_ID" --config "$CONFIG" --standalone
  else
    $SPARKLOG storage format --cluster-id "$CLUSTER_ID" --config "$CONFIG" --no-initial-controllers
  fi
fi
exec $SPARKLOG server start "$CONFIG"

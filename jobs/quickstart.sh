#!/usr/bin/env bash
# The main job on embedded defaults: set up a virtual environment, then run jobs/quickstart.py:
# a local node tiering to file://, a librdkafka producer and consumer, a Spark streaming query
# (available-now) and a backfill from the object store alone, with their results. Spark needs
# Java 17+ on PATH (or JAVA_HOME).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  "$PY" -m venv .venv
fi
echo "== installing sparklog"
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[clients,spark]'
exec .venv/bin/python jobs/quickstart.py "$@"

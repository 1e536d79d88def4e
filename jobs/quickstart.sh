#!/usr/bin/env bash
# The main job on embedded defaults: set up a virtual environment, format and start a local
# node, produce and consume a sample with a real Kafka client (librdkafka), print what happened.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  "$PY" -m venv .venv
fi
echo "== installing sparklog"
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[clients]'
exec .venv/bin/python jobs/quickstart.py "$@"

#!/usr/bin/env bash
# The whole test suite on a fresh machine: system packages, a virtual environment, lint, types,
# then every test (unit, property, simulation, integration with real clients and processes).
# Usage: bash tests/run.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v kcat >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    echo "== installing kcat (Debian) for the kcat interoperability tests"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat) >/dev/null
  else
    echo "== kcat not installed and not root: the kcat tests will be skipped"
  fi
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  "$PY" -m venv .venv
fi
echo "== installing sparklog and its test dependencies"
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'

echo "== ruff"
.venv/bin/ruff check .
echo "== mypy"
.venv/bin/mypy
echo "== pytest"
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"

#!/usr/bin/env bash
# The whole test suite on a fresh machine: system packages, a virtual environment, lint, types,
# then every test (unit, property, simulation, integration with real clients and processes).
# Usage: bash tests/run.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."

# kcat for the interoperability tests; iptables for the chaos test's network cuts; chromium
# (headless) for the web console's screenshots.
missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
command -v iptables >/dev/null 2>&1 || missing+=(iptables)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "== installing ${missing[*]} (Debian)"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >/dev/null
  else
    echo "== ${missing[*]} not installed and not root: the tests that need them are skipped"
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
exec .venv/bin/python -m pytest -q -p no:cacheprovider --durations=40 "$@"

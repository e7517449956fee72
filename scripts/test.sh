#!/usr/bin/env bash
# Installs what is missing, then runs the test suite (unit and functional, local Spark).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/bootstrap.sh
exec .venv/bin/python -m pytest "$@"

#!/usr/bin/env bash
# Installs what dbt-openmirror needs on a fresh machine: Java for Spark, a virtualenv in .venv
# with the adapter and its test dependencies. Safe to run again.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

if ! command -v java >/dev/null 2>&1; then
  echo "bootstrap: installing Java 17 for Spark"
  if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q ".[test]"
echo "bootstrap: $(.venv/bin/dbt --version 2>/dev/null | grep -E 'openmirror|spark' | tr -s ' ' | paste -sd ' ')"

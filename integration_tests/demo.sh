#!/usr/bin/env bash
# Installs dbt-openmirror and publishes the jaffle shop into a local landing zone
# (integration_tests/.landing_zone) with a local Spark session: a first build, then a
# second run that finds nothing to publish.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/../scripts/bootstrap.sh"
cd "$here"
export PATH="$here/../.venv/bin:$PATH"
rm -rf .landing_zone .spark target

dbt build --profiles-dir .
dbt run --profiles-dir .
python show_landing_zone.py .landing_zone

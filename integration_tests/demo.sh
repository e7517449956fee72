#!/usr/bin/env bash
# Installs dbt-openmirror and publishes the jaffle shop into a local landing zone
# (integration_tests/.landing_zone) with a local Spark session: a first build, a second run
# that finds nothing to publish, then a replay into local Delta tables (integration_tests/.mirror)
# compared with the models' output.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/../scripts/bootstrap.sh"
cd "$here"
export PATH="$here/../.venv/bin:$PATH"
rm -rf .landing_zone .spark .mirror target

dbt build --profiles-dir .
dbt run --profiles-dir .
dbt-openmirror replay .landing_zone --target .mirror
dbt-openmirror status .landing_zone --target .mirror
python show_landing_zone.py .landing_zone --mirror .mirror --warehouse .spark/warehouse/jaffle_shop.db

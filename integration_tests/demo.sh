#!/usr/bin/env bash
# Installs dbt-openmirror, then runs the jaffle shop's four scenario days (scenario.py) on the
# embedded default: a local Spark session publishing into a local landing zone. Each day ends
# with a replay into local Delta tables compared with the models' output. Everything is written
# under integration_tests/.scenario/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/../scripts/bootstrap.sh"
cd "$here"
export PATH="$here/../.venv/bin:$PATH"

python scenario.py --workdir .scenario
dbt-openmirror status .scenario/.landing_zone --target .scenario/.mirror
dbt-openmirror validate .scenario/.landing_zone

"""A one-model dbt project driven by separate `dbt run` processes, as scheduled jobs would run.

The model reads its rows from the `rows` var, so a test knows the output without asking Spark.
"""

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from tests.support.faulty import faulty_command, faulty_env
from tests.support.mirror import normalized

Row = tuple[int, str, int]

MODEL = """
{{ config(materialized='open_mirror', unique_key='id', max_rows_per_file=2,
          lease_wait_seconds=var('lease_wait', 0)) }}
select * from values {{ var('rows') }} as t(id, name, amount)
"""


def write_project(root: Path, target: dict) -> Path:
    """A project named `jobs` with the model `customers` and a profile for `target`; returns the
    table folder the model publishes to."""
    (root / "models").mkdir(parents=True)
    (root / "models" / "customers.sql").write_text(MODEL)
    (root / "dbt_project.yml").write_text(
        yaml.safe_dump({"name": "jobs", "version": "1.0", "config-version": 2, "profile": "jobs"})
    )
    target = {"schema": "jobs", "landing_zone": str(root / "landing_zone"), **target}
    Path(target["landing_zone"]).mkdir(parents=True, exist_ok=True)
    (root / "profiles.yml").write_text(yaml.safe_dump({"jobs": {"target": "dev", "outputs": {"dev": target}}}))
    return Path(target["landing_zone"]) / f"{target['schema']}.schema" / "customers"


def dbt_run_command(project: Path, rows: Sequence[Row], **dbt_vars) -> list[str]:
    values = ", ".join(f"({i}, '{n}', {a})" for i, n, a in rows)
    return [
        str(Path(sys.executable).parent / "dbt"),
        "run",
        "--project-dir",
        str(project),
        "--profiles-dir",
        str(project),
        "--vars",
        json.dumps({"rows": values, **dbt_vars}),
    ]


def dbt_run(
    project: Path, rows: Sequence[Row], fail_at: int | None = None, mode: str = "raise", log: Path | None = None
) -> subprocess.CompletedProcess:
    """`dbt run` in its own process; failing at operation `fail_at` when given (tests/support/faulty.py)."""
    command = dbt_run_command(project, rows)
    if fail_at is not None:
        command = faulty_command(["dbt", *command[1:]], fail_at, mode, log)
    return subprocess.run(command, cwd=project, env=faulty_env(), capture_output=True, text=True, timeout=600)


def expected(rows: Sequence[Row]):
    return normalized([{"id": i, "name": n, "amount": a} for i, n, a in rows])

"""Runs staged as package mode stages them (change files and manifest rows), written with pyarrow
so that `dbt-openmirror publish` can be tested without Spark."""

import json
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from dbt.adapters.openmirror.package.publish import MANIFEST_FOLDER, MANIFEST_SCHEMA, StagedRun

FOLDER = "sales.schema/orders"


def stage_run(
    landing_zone: Path,
    run_id: str,
    sequence: int,
    rows: list[dict],
    base_run_id: str | None = None,
    load: str = "incremental",
    states=("staging", "staged"),
    table_folder: str = FOLDER,
    parts: int = 1,
    recorded_folder: str | None = None,
    model: str = "orders",
    reason: str = "",
    relation: str | None = None,
) -> StagedRun:
    """A staged folder with `parts` change files sharing `rows` (id, amount, __rowMarker__) and
    the manifest rows of `states`, one file each as Spark's inserts write them. The rows record
    `recorded_folder` as the staged folder when given (a manifest someone edited)."""
    staged_folder = f"_scratchPad/dbt-openmirror/{run_id}"
    (landing_zone / staged_folder).mkdir(parents=True, exist_ok=True)
    schema = pa.schema([("id", pa.int32()), ("amount", pa.int64()), ("__rowMarker__", pa.int32())])
    for part in range(parts):
        table = pa.Table.from_pylist(rows[part::parts], schema=schema)
        pq.write_table(table, landing_zone / staged_folder / f"part-{part:05d}.parquet")
    counts: dict[str, int] = {}
    for row in rows:
        counts[str(row["__rowMarker__"])] = counts.get(str(row["__rowMarker__"]), 0) + 1
    run = StagedRun(
        run_id=run_id,
        model=model,
        table_folder=table_folder,
        key_columns=["id"],
        base_run_id=base_run_id,
        load=load,
        reason=reason,
        staged_sequence=sequence,
        staged_folder=staged_folder if recorded_folder is None else recorded_folder,
        rows=len(rows),
        marker_counts=counts,
        state=states[-1],
        recorded_at=datetime.now(timezone.utc),
        relation=relation,
    )
    (landing_zone / MANIFEST_FOLDER).mkdir(parents=True, exist_ok=True)
    for state in states:
        table = pa.Table.from_pylist([run.to_row(state)], schema=MANIFEST_SCHEMA)
        pq.write_table(table, landing_zone / MANIFEST_FOLDER / f"part-{run_id}-{state}.parquet")
    return run


def write_manifest_rows(landing_zone: Path, name: str, rows: list[dict], schema=MANIFEST_SCHEMA) -> None:
    """Manifest rows as anyone with access to the landing zone could write them."""
    (landing_zone / MANIFEST_FOLDER).mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), landing_zone / MANIFEST_FOLDER / name)


def record(landing_zone: Path, table_folder: str = FOLDER) -> dict:
    return json.loads((landing_zone / table_folder / "_dbt_openmirror.json").read_text())

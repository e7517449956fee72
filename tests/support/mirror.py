"""Helpers for functional tests: set a model's input, read the model output, replay the mirror."""

import datetime
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from dbt.adapters.openmirror.storage import LocalStorage
from dbt.adapters.openmirror.tools.local_mirror.replay import LocalMirror
from dbt.adapters.openmirror.tools.validate import validate
from tests.support.delta_reader import read_delta
from tests.support.mirror_oracle import data_files, replay


class Warehouse:
    """SQL through the test project's dbt connection, whatever its method (session or thrift).

    Query results come back as Parquet written by Spark and read with pyarrow, so values keep
    their types (agate would turn them into its own).
    """

    def __init__(self, project, scratch: Path) -> None:
        self.project = project
        self.scratch = scratch
        self.schema = project.test_schema

    def run(self, sql: str) -> None:
        self.project.run_sql(sql)

    def _export(self, sql: str) -> pq.ParquetDataset:
        folder = Path(tempfile.mkdtemp(dir=self.scratch))
        self.run("set spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS")
        self.run(f"insert overwrite directory 'file://{folder}' using parquet select * from ({sql}) q")
        return pq.ParquetDataset(folder)

    def rows(self, sql: str) -> list[dict[str, Any]]:
        return self._export(sql).read().to_pylist()

    def columns(self, relation: str) -> list[str]:
        return self._export(f"select * from {relation} limit 0").schema.names


#: A source for `--sample` runs (`event_time='updated_at'`).
SAMPLED_SOURCE = "select * from values {rows} as t(id, name, updated_at)"
#: One row changed within the last day, one long before: a sample of a day sees only the first.
SAMPLED_ROWS = "(1, 'a', timestamp'2020-01-01'), (2, 'b', current_timestamp() - interval 1 hour)"
#: A model with an `event_time` over that source, and an `open_mirror` model reading it.
SAMPLED_MODELS = {
    "events.sql": "{{ config(materialized='table', event_time='updated_at') }}\nselect * from {{ target.schema }}.src",
    "customers.sql": "{{ config(materialized='open_mirror', unique_key='id') }}\nselect * from {{ ref('events') }}",
}


def set_source(warehouse: Warehouse, schema: str, select_sql: str, name: str = "src") -> None:
    """(Re)create the table the test models read from."""
    warehouse.run(f"drop table if exists {schema}.{name}")
    warehouse.run(f"create table {schema}.{name} using parquet as {select_sql}")


def settle(*roots: Path) -> None:
    """Date every file under `roots` written in the last minute an hour back, as files written
    well before a run would be (a digest of what a model reads vouches only for settled files,
    spark/model_inputs.py). Files keep their order in time, so a file written again still differs."""
    recent = time.time() - 60
    for root in roots:
        for path in [root, *root.rglob("*")] if root.is_dir() else [root]:
            stat = path.stat()
            if stat.st_mtime >= recent:
                os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns - 3600 * 10**9))


def table_folder(landing_zone: Path, schema: str, table: str) -> Path:
    return landing_zone / f"{schema}.schema" / table


def _normal(value: Any) -> Any:
    """One representation for what Spark rows and pyarrow give for the same value."""
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    return value


def _sortable(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, default=repr)


def normalized(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(({k: _normal(v) for k, v in row.items()} for row in rows), key=_sortable)


def model_output(warehouse: Warehouse, sql: str) -> list[dict[str, Any]]:
    return normalized(warehouse.rows(sql))


def assert_mirror_equals(warehouse, folder: Path, expected_sql: str) -> list[dict[str, Any]]:
    """Replaying the table folder gives exactly the rows `expected_sql` returns."""
    expected = model_output(warehouse, expected_sql)
    mirrored = normalized(replay(folder))
    assert mirrored == expected
    return mirrored


def file_markers(folder: Path) -> list[list[int]]:
    """Each data file's row markers, in file order; a file without the marker column is all
    INSERTs (0), as the mirror reads it."""
    markers = []
    for path in data_files(folder):
        table = pq.read_table(path)
        marked = "__rowMarker__" in table.column_names
        markers.append(table.column("__rowMarker__").to_pylist() if marked else [0] * table.num_rows)
    return markers


def marked_files(folder: Path) -> list[bool]:
    """Whether each data file, in file order, carries a `__rowMarker__` column."""
    return ["__rowMarker__" in pq.read_schema(path).names for path in data_files(folder)]


def relations(warehouse, schema: str) -> dict[str, str]:
    """The schema's relations by name: 'table' or 'view'."""
    run_sql = warehouse.project.run_sql
    views = {row[1] for row in run_sql(f"show views in {schema}", fetch="all")}
    return {
        row[1]: "view" if row[1] in views else "table"
        for row in run_sql(f"show tables in {schema}", fetch="all")
        if not row[2]
    }


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under `root` with a hash of its bytes: equal digests mean nothing changed."""
    if not root.exists():
        return {}
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def assert_local_mirror_equals(
    warehouse, landing_zone: Path, target: Path, schema: str, table: str, expected_sql: str
) -> None:
    """`dbt-openmirror replay` brings the Delta table to exactly the model output (read back
    with a Delta reader other than the writer)."""
    LocalMirror(LocalStorage(landing_zone), target).replay()
    assert normalized(read_delta(target / schema / table)) == model_output(warehouse, expected_sql)


def findings_for(landing_zone: Path, folder: Path) -> list[str]:
    """What `dbt-openmirror validate` reports about one table folder."""
    prefix = str(folder.relative_to(landing_zone))
    return [str(f) for f in validate(LocalStorage(landing_zone)) if f.where.startswith(prefix)]


def sorted_bucket_scans(project) -> str:
    """The session's value of the setting the hash diff turns on while it runs (macros/sql/hash_diff.sql)."""
    [(_, value)] = project.run_sql("set spark.sql.legacy.bucketedTableScan.outputOrdering", fetch="all")
    return str(value)


def rewrite_key_hashes(
    warehouse: Warehouse,
    hashes: str,
    key: str,
    *,
    hash1_offset: int = 0,
    run_id: str | None = None,
    buckets: int | None = None,
) -> None:
    """Rewrite a key hashes table (its columns are those macros/sql/hash_diff.sql writes): the
    first hash shifted by `hash1_offset` (wrong for every row unless 0), bucketed into `buckets`
    (or not bucketed) without sort columns, as versions before sorted buckets wrote them, stamped
    as written by `run_id` (or by the run that wrote it)."""
    clustering = f"clustered by ({key}) into {buckets} buckets" if buckets else ""
    warehouse.run(
        f"create table {hashes}_rewritten using parquet {clustering} as select {key}, "
        f"__openmirror_hash1 + {hash1_offset} as __openmirror_hash1, __openmirror_hash2 from {hashes}"
    )
    properties = dict(warehouse.project.run_sql(f"show tblproperties {hashes}", fetch="all"))
    stamp = {
        "openmirror.run_id": run_id or properties["openmirror.run_id"],
        "openmirror.hash_columns": properties["openmirror.hash_columns"],
    }
    # Spark string literals; run_sql formats the statement, so their braces are doubled too.
    literals = {
        name: value.replace("\\", "\\\\").replace("'", "\\'").replace("{", "{{").replace("}", "}}")
        for name, value in stamp.items()
    }
    warehouse.run(f"drop table {hashes}")
    warehouse.run(f"alter table {hashes}_rewritten rename to {hashes}")
    warehouse.run(
        f"alter table {hashes} set tblproperties ("
        + ", ".join(f"'{name}' = '{value}'" for name, value in literals.items())
        + ")"
    )


@contextmanager
def watching_mirror(landing_zone: Path, target: Path, interval: float = 0.5) -> Iterator[subprocess.Popen]:
    """`dbt-openmirror replay --watch` as its own process, mirroring `landing_zone` the way the
    service does (and, for a `.../Files/LandingZone` folder, writing the service's status files
    beside it), until the block ends."""
    command = [
        str(Path(sys.executable).parent / "dbt-openmirror"),
        "replay",
        str(landing_zone),
        "--target",
        str(target),
        "--watch",
        "--interval",
        str(interval),
    ]
    watcher = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        yield watcher
    finally:
        watcher.terminate()
        output = watcher.communicate(timeout=60)[0]
        assert watcher.returncode in (0, 1, -15), output[-3000:]


def wait_until_mirrored(landing_zone: Path, target: Path, folders: list[Path], timeout: float = 120.0) -> None:
    """Until the watching mirror has applied every file the journal of each table folder names."""
    deadline = time.monotonic() + timeout
    status_path = target / "Monitoring" / "tables.json"
    while True:
        wanted = {
            (folder.parent.name[: -len(".schema")], folder.name): json.loads(
                (folder / "_dbt_openmirror.json").read_text()
            )["lastSequenceNumber"]
            for folder in folders
        }
        try:
            tables = json.loads(status_path.read_text())["tables"]
        except (FileNotFoundError, ValueError):
            tables = []
        applied = {(t["sourceSchemaName"], t["sourceTableName"]): t for t in tables}
        if all(key in applied and applied[key]["lastAppliedFile"] == number for key, number in wanted.items()):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the mirror did not catch up: wanted {wanted}, status {applied}")
        time.sleep(0.2)

"""Helpers for functional tests: set a model's input, read the model output, replay the mirror."""

import datetime
import hashlib
import json
from pathlib import Path
from typing import Any, Dict, List

import pyarrow.parquet as pq

from dbt.adapters.openmirror.local_mirror.replay import LocalMirror
from dbt.adapters.openmirror.storage import LocalStorage
from dbt.adapters.openmirror.validate import validate
from tests.delta_reader import read_delta
from tests.mirror_oracle import data_files, replay


def set_source(spark, schema: str, select_sql: str, name: str = "src") -> None:
    """(Re)create the table the test models read from."""
    spark.sql(f"drop table if exists {schema}.{name}")
    spark.sql(f"create table {schema}.{name} using parquet as {select_sql}")


def table_folder(landing_zone: Path, schema: str, table: str) -> Path:
    return landing_zone / f"{schema}.schema" / table


def _normal(value: Any) -> Any:
    """One representation for what Spark rows and pyarrow give for the same value."""
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    return value


def _sortable(row: Dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, default=repr)


def normalized(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return sorted(({k: _normal(v) for k, v in row.items()} for row in rows), key=_sortable)


def model_output(spark, sql: str) -> List[Dict[str, Any]]:
    return normalized([row.asDict() for row in spark.sql(sql).collect()])


def assert_mirror_equals(spark, folder: Path, expected_sql: str) -> List[Dict[str, Any]]:
    """Replaying the table folder gives exactly the rows `expected_sql` returns."""
    expected = model_output(spark, expected_sql)
    mirrored = normalized(replay(folder))
    assert mirrored == expected
    return mirrored


def file_markers(folder: Path) -> List[List[int]]:
    """Each data file's row markers, in file order."""
    return [pq.read_table(p).column("__rowMarker__").to_pylist() for p in data_files(folder)]


def tree_digest(root: Path) -> Dict[str, str]:
    """Every file under `root` with a hash of its bytes: equal digests mean nothing changed."""
    if not root.exists():
        return {}
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def assert_local_mirror_equals(
    spark, landing_zone: Path, target: Path, schema: str, table: str, expected_sql: str
) -> None:
    """`dbt-openmirror replay` brings the Delta table to exactly the model output (read back
    with a Delta reader other than the writer)."""
    LocalMirror(LocalStorage(landing_zone), target).replay()
    assert normalized(read_delta(target / schema / table)) == model_output(spark, expected_sql)


def findings_for(landing_zone: Path, folder: Path) -> List[str]:
    """What `dbt-openmirror validate` reports about one table folder."""
    prefix = str(folder.relative_to(landing_zone))
    return [str(f) for f in validate(LocalStorage(landing_zone)) if f.where.startswith(prefix)]

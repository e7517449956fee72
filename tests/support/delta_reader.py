"""An independent reader of Delta tables: the transaction log's add/remove actions and the
live Parquet files, read with pyarrow (no delta-rs), for checking what the local mirror wrote.
Column mapping (mode `name`): each column is read from the Parquet column of its physical name."""

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq


def read_delta(table_path: Path) -> list[dict[str, Any]]:
    return read_delta_table(table_path).to_pylist()


def read_delta_table(table_path: Path) -> pa.Table:
    """The live rows as one Arrow table, by logical column names (values Python's types cannot
    hold, such as timestamps after year 9999, stay readable)."""
    log = sorted((table_path / "_delta_log").glob("*.json"))
    assert log, f"{table_path} is not a Delta table"
    assert not list((table_path / "_delta_log").glob("*.checkpoint.parquet")), "checkpoints not read"
    live: dict[str, None] = {}
    columns: dict[str, str] = {}  # logical name -> physical name
    for commit in log:
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "metaData" in action:
                fields = json.loads(action["metaData"]["schemaString"])["fields"]
                columns = {f["name"]: f["metadata"].get("delta.columnMapping.physicalName", f["name"]) for f in fields}
            if "add" in action:
                assert "deletionVector" not in action["add"] or action["add"]["deletionVector"] is None
                live[unquote(action["add"]["path"])] = None
            if "remove" in action:
                live.pop(unquote(action["remove"]["path"]), None)
    tables = [_without_views(pq.read_table(table_path / path)) for path in live]
    if not tables:
        return pa.table({name: pa.array([], pa.null()) for name in columns})
    table = pa.concat_tables(tables, promote_options="default")
    return pa.table(
        {
            name: table.column(physical) if physical in table.column_names else pa.nulls(table.num_rows)
            for name, physical in columns.items()
        }
    )


def schema(table_path: Path) -> list[dict[str, Any]]:
    """The table's columns as its latest metaData action describes them."""
    fields: list[dict[str, Any]] = []
    for commit in sorted((table_path / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "metaData" in action:
                fields = json.loads(action["metaData"]["schemaString"])["fields"]
    return fields


def _without_views(table: pa.Table) -> pa.Table:
    """delta-rs may record Arrow view types in its files; compare on the plain types."""
    views = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}
    return table.cast(pa.schema([f.with_type(views.get(f.type, f.type)) for f in table.schema]))


def protocol(table_path: Path) -> dict[str, Any]:
    for commit in sorted((table_path / "_delta_log").glob("*.json"), reverse=True):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "protocol" in action:
                return action["protocol"]
    raise AssertionError("no protocol action")

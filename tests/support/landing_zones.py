"""Hand-written landing zones for the local mirror's and the validator's tests: real folders,
real Parquet (pyarrow) and CSV files, as any publisher could write them."""

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.support.delta_reader import read_delta


def declare(folder: Path, keys: Sequence[str] | None = None, **fields: Any) -> Path:
    """`_metadata.json` with `keyColumns` (omitted when None) and any other fields."""
    folder.mkdir(parents=True, exist_ok=True)
    document = ({"keyColumns": list(keys)} if keys is not None else {}) | fields
    (folder / "_metadata.json").write_text(json.dumps(document))
    return folder


def parquet(
    folder: Path,
    name: Any,
    columns: dict[str, Any],
    markers: Sequence[int] | None = None,
    schema: pa.Schema | None = None,
    **options: Any,
) -> Path:
    """One Parquet data file: `name` is a sequence number or a file name; `columns` a dict of
    column -> values (or arrays), the marker last when given."""
    table = pa.table(columns, schema=schema)
    if markers is not None:
        table = table.append_column("__rowMarker__", pa.array(markers, pa.int32()))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (f"{name:020d}.parquet" if isinstance(name, int) else name)
    pq.write_table(table, path, **options)
    return path


def text_file(folder: Path, name: str, text: str, modified: float | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(text.encode("utf-8"))
    if modified is not None:
        os.utime(path, (modified, modified))
    return path


def csv_table(folder: Path, keys: Sequence[str], columns: list[dict[str, Any]], **properties: Any) -> Path:
    """`_metadata.json` of a delimited-text table with the `.csv` extension."""
    return declare(
        folder,
        keys,
        FileFormat="DelimitedText",
        FileExtension="csv",
        FileFormatTypeProperties={"FirstRowAsHeader": True, **properties},
        SchemaDefinition={"Columns": columns},
    )


def rows(target: Path, schema: str, table: str) -> list[dict[str, Any]]:
    """The mirrored table's rows, read by the independent reader, in a stable order."""
    return sorted(read_delta(target / schema / table), key=lambda r: json.dumps(r, sort_keys=True, default=str))

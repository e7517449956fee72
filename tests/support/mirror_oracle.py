"""An independent replay of a landing-zone table folder, written from the spec alone.

It reads the files with pyarrow and applies them in numeric order with the spec's marker
semantics (INSERT never deduplicates, UPDATE/UPSERT of a missing key inserts, DELETE of a
missing key does nothing). Tests compare its result with the model output.
"""

import json
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

ROW_MARKER = "__rowMarker__"
_DATA_FILE = re.compile(r"^\d{20}\.parquet$")
_PROCESSED_FOLDERS = ("_ProcessedFiles", "_FilesReadyToDelete")


def data_files(table_folder: Path) -> list[Path]:
    """Every published file in number order, including those the service already processed."""
    folders = [table_folder] + [table_folder / name for name in _PROCESSED_FOLDERS]
    found = [p for f in folders if f.is_dir() for p in f.iterdir() if _DATA_FILE.match(p.name)]
    return sorted(found, key=lambda p: p.name)


def replay(table_folder: Path) -> list[dict[str, Any]]:
    """The rows the mirror would hold after applying every file of `table_folder`."""
    keys = json.loads((table_folder / "_metadata.json").read_text())["keyColumns"]
    files = data_files(table_folder)
    numbers = [int(p.name[:20]) for p in files]
    assert numbers == list(range(1, len(files) + 1)), f"numbering has a gap: {numbers}"
    rows: list[dict[str, Any]] = []
    columns: list[str] = []
    for path in files:
        for column in pq.read_schema(path).names:
            if column != ROW_MARKER and column not in columns:
                columns.append(column)
        for record in pq.read_table(path).to_pylist():
            marker = record.pop(ROW_MARKER, 0)
            key = tuple(record[k] for k in keys)
            existing = [i for i, row in enumerate(rows) if tuple(row[k] for k in keys) == key]
            if marker == 0:
                rows.append(record)
            elif marker in (1, 4):
                for i in reversed(existing):
                    del rows[i]
                rows.append(record)
            elif marker == 2:
                for i in reversed(existing):
                    del rows[i]
            else:
                raise AssertionError(f"{path.name}: unknown {ROW_MARKER} {marker}")
    return [{c: row.get(c) for c in columns} for row in rows]

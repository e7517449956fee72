"""Applying one change file to a table's rows, with the spec's marker semantics.

Two ways, chosen per file: one MERGE commit when every key appears once in the file and no
INSERT hits a key the table already has (what any exactly-once publisher writes), otherwise a
rewrite of the table in a single commit that replays the rows in file order. Both are one Delta
commit per file, so a file is applied entirely or not at all.
"""

from typing import Dict, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

ROW_MARKER = "__rowMarker__"
INSERT, UPDATE, DELETE, UPSERT = 0, 1, 2, 4
KNOWN_MARKERS = {INSERT, UPDATE, DELETE, UPSERT}


def with_markers(rows: pa.Table, default_marker: int) -> pa.Table:
    """The file's rows with an int32 marker column (files without one are all `default_marker`)."""
    if ROW_MARKER in rows.column_names:
        markers = rows.column(ROW_MARKER).cast(pa.int32())
        rows = rows.drop_columns([ROW_MARKER])
    else:
        markers = pa.array([default_marker] * rows.num_rows, pa.int32())
    unknown = set(pc.unique(markers).to_pylist()) - KNOWN_MARKERS - {None}
    if unknown or markers.null_count:
        raise ValueError(f"{ROW_MARKER} has values outside 0, 1, 2, 4: {sorted(unknown) or 'NULL'}")
    return rows.append_column(ROW_MARKER, markers)


def replay_rows(current: List[Dict], changes: pa.Table, keys: Sequence[str]) -> List[Dict]:
    """Apply `changes` to `current` row by row, in file order (the reference semantics)."""
    rows = list(current)
    positions: Dict[Tuple, List[int]] = {}

    def index() -> None:
        positions.clear()
        for i, row in enumerate(rows):
            positions.setdefault(tuple(row[k] for k in keys), []).append(i)

    index()
    removed: set = set()
    for change in changes.to_pylist():
        marker = change.pop(ROW_MARKER)
        key = tuple(change[k] for k in keys)
        present = [i for i in positions.get(key, []) if i not in removed]
        if marker in (UPDATE, UPSERT, DELETE):
            removed.update(present)
            positions[key] = []
        if marker != DELETE:
            rows.append(change)
            positions.setdefault(key, []).append(len(rows) - 1)
    return [row for i, row in enumerate(rows) if i not in removed]


def merge_is_exact(changes: pa.Table, keys: Sequence[str], existing: Optional[pa.Table]) -> bool:
    """Whether one MERGE (or, into an empty table, one append) gives the same result as
    applying the rows in order: every key once in the file, and no INSERT of a present key."""
    if changes.select(keys).group_by(keys).aggregate([]).num_rows != changes.num_rows:
        return False
    if existing is None or existing.num_rows == 0:
        return True
    inserts = changes.filter(pc.equal(changes.column(ROW_MARKER), INSERT)).select(keys)
    present = existing.select(keys).cast(inserts.schema)
    return inserts.join(present, keys, join_type="inner").num_rows == 0


def without_deletes(changes: pa.Table) -> pa.Table:
    return changes.filter(pc.not_equal(changes.column(ROW_MARKER), DELETE))

"""Applying one change file to a table's rows, with the spec's marker semantics.

Two ways, chosen per file: one MERGE commit when it gives exactly the result of applying the rows
in order (every key once in the file, no INSERT of a key the table has, no key the table holds
twice), otherwise a rewrite of the table in a single commit that replays the rows in file order.
Both are one Delta commit per file, so a file is applied entirely or not at all, and both give the
same rows (`replay_rows` is the reference).
"""

import math
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from dbt.adapters.openmirror.rules.markers import (
    DELETE,
    INSERT,
    ROW_MARKER,
    UPDATE,
    UPSERT,
    default_marker_problem,
    marker_problem,
)


def with_markers(rows: pa.Table, default_marker: int, keyed: bool) -> pa.Table:
    """The file's rows with an int32 marker column last (files without one are all
    `default_marker`); ValueError naming the row when a marker cannot be applied."""
    if ROW_MARKER in rows.column_names:
        markers = rows.column(ROW_MARKER)
        rows = rows.drop_columns([ROW_MARKER])
    else:
        default_problem = default_marker_problem(default_marker == UPSERT, keyed)
        if default_problem and rows.num_rows:
            raise ValueError(default_problem)
        markers = pa.chunked_array([pa.array([default_marker] * rows.num_rows, pa.int32())])
    problem = marker_problem(markers, keyed)
    if problem is not None:
        row, why = problem
        raise ValueError(f"row {row}: {why}")
    return rows.append_column(ROW_MARKER, markers.cast(pa.int32()))


def replay_rows(current: list[dict], changes: pa.Table, keys: Sequence[str]) -> list[dict]:
    """Apply `changes` to `current` row by row, in file order (the reference semantics)."""
    rows = list(current)
    positions: dict[tuple, list[int]] = {}
    for i, row in enumerate(rows):
        positions.setdefault(_key(row, keys), []).append(i)
    removed: set = set()
    for change in changes.to_pylist():
        marker = change.pop(ROW_MARKER)
        key = _key(change, keys)
        if marker in (UPDATE, UPSERT, DELETE):
            removed.update(positions.get(key, []))
            positions[key] = []
        if marker != DELETE:
            rows.append(change)
            positions.setdefault(key, []).append(len(rows) - 1)
    return [row for i, row in enumerate(rows) if i not in removed]


#: NaN as a key part: one key, as the MERGE matches it (Python's NaN equals no NaN but itself).
_NAN = object()


def _key(row: dict, keys: Sequence[str]) -> tuple:
    return tuple(_NAN if isinstance(row[k], float) and math.isnan(row[k]) else row[k] for k in keys)


def replay_table(current: pa.Table, changes: pa.Table, keys: Sequence[str], schema: pa.Schema) -> pa.Table:
    """`replay_rows` over Arrow tables, giving `schema`. Dates and timestamps travel as their
    counts since the epoch: Python's types do not hold every value a file may (years 0 and
    10000 in UTC)."""
    replayed = replay_rows(_as_counts(current).to_pylist(), _as_counts(changes), keys)
    return pa.Table.from_pylist(replayed, schema=_counts_schema(schema)).cast(schema)


def _counts_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([field.with_type(_count_type(field.type)) for field in schema])


def _count_type(data_type: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(data_type) or pa.types.is_date64(data_type):
        return pa.int64()
    return pa.int32() if pa.types.is_date32(data_type) else data_type


def _as_counts(table: pa.Table) -> pa.Table:
    return table.cast(_counts_schema(table.schema))


def merge_is_exact(changes: pa.Table, keys: Sequence[str], existing: pa.Table | None) -> bool:
    """Whether one MERGE (or, into an empty table, one append) gives the same result as applying
    the rows in order: every key once in the file, no INSERT of a present key, and no key of the
    file that the table holds more than once (a MERGE would update each copy; in order, one row
    replaces them all)."""
    if changes.select(keys).group_by(keys).aggregate([]).num_rows != changes.num_rows:
        return False
    if existing is None or existing.num_rows == 0:
        return True
    present = existing.select(keys).cast(changes.select(keys).schema)
    # Semi joins of the table against the (small) file: the hash table is built on the file.
    inserts = changes.filter(pc.equal(changes.column(ROW_MARKER), INSERT)).select(keys)
    if present.join(inserts, keys, join_type="left semi").num_rows:
        return False
    touched = present.join(changes.select(keys), keys, join_type="left semi")  # the table's rows the file hits
    return touched.group_by(keys).aggregate([]).num_rows == touched.num_rows


def without_deletes(changes: pa.Table) -> pa.Table:
    return changes.filter(pc.not_equal(changes.column(ROW_MARKER), DELETE))

"""The fast diff: per-row hashes kept next to the snapshot, so a run compares keys and hashes.

One pass over the new output (no shuffle) writes its key hashes table: the key and a 128-bit hash
of each row. The snapshot's key hashes table is the one the previous run wrote. Joining the two
narrow tables finds the changed keys, and counts the rows per key on the way, which is the key
check; only the changed rows are then read back from the output and written.

Two xxhash64 values with different leading constants make the 128 bits. Spark's hash functions
skip NULL arguments, so each column also contributes whether it is NULL: `(a, NULL)` and
`(NULL, a)` hash differently. A changed row is missed only if both 64-bit hashes collide.
"""

import json
import math
from typing import Dict, List, Sequence

from dbt.adapters.openmirror.change_sql import (
    DELETE,
    ROW_MARKER,
    null_of,
    published_value,
    quote,
    row_markers,
    sql_string,
    with_marker,
)
from dbt.adapters.openmirror.schema_plan import ColumnSpec, SchemaPlan

ROWS = "__openmirror_rows"
HASH_1, HASH_2 = "__openmirror_hash1", "__openmirror_hash2"
#: Table properties on a key hashes table: the run that wrote it and what its hashes cover.
HASHES_RUN_ID = "openmirror.run_id"
HASHES_COLUMNS = "openmirror.hash_columns"
#: Change rows one writer task takes at most; larger change sets are written in parallel.
ROWS_PER_WRITER = 1_000_000
MAX_WRITERS = 64


def hashed_columns(plan: SchemaPlan, key_columns: Sequence[str]) -> List[ColumnSpec]:
    """The published non-key columns, in name order so that reordering columns changes nothing."""
    keys = {k.lower() for k in key_columns}
    return sorted((c for c in plan.columns if c.name.lower() not in keys), key=lambda c: c.name.lower())


def hash_signature(columns: Sequence[ColumnSpec]) -> str:
    """What the hashes cover: two tables' hashes compare only under the same signature."""
    return json.dumps([[c.name.lower(), c.published_type] for c in columns])


def _row_hash(columns: Sequence[ColumnSpec], seed: int) -> str:
    parts = [str(seed)]
    for column in columns:
        value = published_value(quote(column.name), column)
        parts += [value, f"{quote(column.name)} is null"]
    return f"xxhash64({', '.join(parts)})"


def key_hashes_sql(
    target: str, relation: str, key_columns: Sequence[str], columns: Sequence[ColumnSpec],
    properties: Dict[str, str],
) -> str:
    """The key and row hash of every row of `relation`, as a narrow table (no shuffle)."""
    keys = ", ".join(quote(k) for k in key_columns)
    pairs = ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in properties.items())
    return (
        f"create table {target} using parquet tblproperties ({pairs}) as\n"
        f"select {keys}, {_row_hash(columns, 1)} as {HASH_1}, {_row_hash(columns, 2)} as {HASH_2}\n"
        f"from {relation}"
    )


def key_problems_sql(relation: str, key_columns: Sequence[str], counted: bool) -> str:
    """At most one example each of a NULL key and of a duplicated key: (problem, example, rows).

    `relation` has a row per output row, or (`counted`) a row per key with its row count.
    """
    example = "concat_ws(', ', {})".format(
        ", ".join(
            f"concat({sql_string(k + '=')}, coalesce(cast({quote(k)} as string), 'NULL'))"
            for k in key_columns
        )
    )
    any_null = " or ".join(f"{quote(k)} is null" for k in key_columns)
    keys = ", ".join(quote(k) for k in key_columns)
    duplicates = (
        f"{ROWS} as rows\n  from {relation} where {ROWS} > 1" if counted
        else f"count(*) as rows\n  from {relation} group by {keys} having count(*) > 1"
    )
    return (
        f"select * from (select 'NULL' as problem, {example} as example, 1 as rows\n"
        f"  from {relation} where {any_null} limit 1)\n"
        f"union all\n"
        f"select * from (select 'duplicate' as problem, {example} as example, {duplicates} limit 1)"
    )


def changed_keys_sql(
    target: str, new_hashes: str, previous_hashes: str, key_columns: Sequence[str], change_markers: str
) -> str:
    """Keys that are new, changed or gone, with their marker, and keys the output repeats (with
    their row count, for the key check). Counting rows per key shares the join's shuffle."""
    new_marker, changed_marker = row_markers(change_markers)
    keys = ", ".join(quote(k) for k in key_columns)
    either = ", ".join(f"coalesce(n.{quote(k)}, o.{quote(k)}) as {quote(k)}" for k in key_columns)
    join = " and ".join(f"n.{quote(k)} = o.{quote(k)}" for k in key_columns)
    marker = (
        f"cast(case when o.{HASH_1} is null then {new_marker} "
        f"when n.{HASH_1} is null then {DELETE} else {changed_marker} end as int)"
    )
    return (
        f"create table {target} using parquet as\n"
        f"select {either}, {marker} as {quote(ROW_MARKER)}, n.{ROWS}\n"
        f"from (select {keys}, count(*) as {ROWS}, max({HASH_1}) as {HASH_1}, max({HASH_2}) as {HASH_2}\n"
        f"  from {new_hashes} group by {keys}) n\n"
        f"full outer join {previous_hashes} o on {join}\n"
        f"where o.{HASH_1} is null or n.{HASH_1} is null or n.{ROWS} > 1\n"
        f"  or n.{HASH_1} <> o.{HASH_1} or n.{HASH_2} <> o.{HASH_2}"
    )


def changed_rows_sql(
    new_relation: str, changes: str, plan: SchemaPlan, key_columns: Sequence[str], position: str
) -> str:
    """The published rows of the new and changed keys, then the deleted keys with only the key.

    An inner join, so that Spark can broadcast the changed keys and stream the output past them
    (an outer join could only broadcast the output).
    """
    keys = {k.lower() for k in key_columns}
    present, deleted = [], []
    for column in plan.columns:
        name = quote(column.name)
        if column.name.lower() in keys:
            present.append(f"c.{name} as {name}")
            deleted.append(f"{name}")
        else:
            present.append(f"{published_value(f'n.{name}', column)} as {name}")
            deleted.append(null_of(column))
    present += [null_of(c) for c in plan.kept]
    deleted += [null_of(c) for c in plan.kept]
    join = " and ".join(f"c.{quote(k)} = n.{quote(k)}" for k in key_columns)
    marker = quote(ROW_MARKER)
    return (
        f"select\n  {with_marker(present, f'c.{marker}', position)}\n"
        f"from {changes} c\njoin {new_relation} n on {join}\n"
        f"where c.{marker} <> {DELETE}\n"
        f"union all\n"
        f"select\n  {with_marker(deleted, marker, position)}\n"
        f"from {changes} where {marker} = {DELETE}"
    )


def writer_count(change_rows: int, max_rows_per_file: int) -> int:
    """Writer tasks for a change set: one for up to ROWS_PER_WRITER rows (or one file's worth)."""
    per_writer = min(ROWS_PER_WRITER, max_rows_per_file) if max_rows_per_file else ROWS_PER_WRITER
    return max(1, min(MAX_WRITERS, math.ceil(change_rows / per_writer)))

"""The fast diff's decisions: which columns the key hashes cover, and how many tasks write.

Each run writes its output's key hashes table (the key and a 128-bit hash of each row, bucketed
and sorted by the key) next to the snapshot; joining it with the snapshot's finds the changed
keys. The SQL is in macros/sql/hash_diff.sql, with the signature of what the hashes cover. Here:
the hashed columns, the bucket count and the writer count.
"""

import math
from collections.abc import Mapping, Sequence

from dbt.adapters.openmirror.planning.schema_plan import ColumnSpec, SchemaPlan

#: Table properties on a key hashes table: the run that wrote it and what its hashes cover.
HASHES_RUN_ID = "openmirror.run_id"
HASHES_COLUMNS = "openmirror.hash_columns"
#: Change rows one writer task takes at most; larger change sets are written in parallel.
ROWS_PER_WRITER = 1_000_000
MAX_WRITERS = 64
#: Rows per bucket of a key hashes table (about 32 MB with two bigint keys).
ROWS_PER_BUCKET = 1_000_000
MAX_BUCKETS = 4096


def hashed_columns(plan: SchemaPlan, key_columns: Sequence[str]) -> list[ColumnSpec]:
    """The published non-key columns, in name order so that reordering columns changes nothing."""
    keys = {k.lower() for k in key_columns}
    return sorted((c for c in plan.columns if c.name.lower() not in keys), key=lambda c: c.name.lower())


def hashes_usable(properties: Mapping[str, str] | None, snapshot_run_id: str | None, signature: str) -> bool:
    """Whether the snapshot's key hashes (their table's properties; None: no such table) can be
    trusted: the run that wrote the snapshot wrote them too, over the same columns. A run stopped
    between replacing the two leaves them behind; then the diff compares whole rows."""
    if properties is None or not snapshot_run_id:
        return False
    return properties.get(HASHES_RUN_ID) == snapshot_run_id and properties.get(HASHES_COLUMNS) == signature


def writer_count(change_rows: int, max_rows_per_file: int) -> int:
    """Writer tasks for a change set: one for up to ROWS_PER_WRITER rows (or one file's worth)."""
    per_writer = min(ROWS_PER_WRITER, max_rows_per_file) if max_rows_per_file else ROWS_PER_WRITER
    return max(1, min(MAX_WRITERS, math.ceil(change_rows / per_writer)))


def file_count(change_rows: int, writers: int, max_rows_per_file: int, keeps_empty: bool) -> int:
    """How many files `writers` tasks write for a change set (a dry run's estimate): the rows
    spread evenly over the writers, each file at most `max_rows_per_file`; with no rows, one when
    `keeps_empty` (the publisher keeps an empty file to create the table or add its columns)."""
    if change_rows == 0:
        return 1 if keeps_empty else 0
    per_writer = math.ceil(change_rows / writers)
    files_per_writer = math.ceil(per_writer / max_rows_per_file) if max_rows_per_file else 1
    return min(change_rows, writers * files_per_writer)


def bucket_count(rows: int) -> int:
    """Buckets of a key hashes table: a power of two, so the count stays put while the table
    grows or shrinks a little, and consecutive runs' tables join without a shuffle."""
    wanted = max(1, math.ceil(rows / ROWS_PER_BUCKET))
    return min(MAX_BUCKETS, 1 << (wanted - 1).bit_length())


_INTEGRAL_TYPES = ("tinyint", "smallint", "int", "integer", "bigint", "byte", "short", "long")


def key_types(columns: Sequence[ColumnSpec], key_columns: Sequence[str]) -> list[str]:
    """The key columns' types, in `columns`' order."""
    keys = {k.lower() for k in key_columns}
    return [c.data_type for c in columns if c.name.lower() in keys]


def probes_by_key_hash(key_types: Sequence[str]) -> bool:
    """Whether a large table is joined with a small one's keys through one 64-bit hash of the key
    (macros/sql/parts.sql, `openmirror_probe_join`): Spark probes a broadcast table by one long
    several times faster than by a row of columns. Not for one integral key (already a long).
    Keys are never collated strings (keys.check_key_types), so equal keys hash equal."""
    return not (len(key_types) == 1 and key_types[0].strip().lower() in _INTEGRAL_TYPES)

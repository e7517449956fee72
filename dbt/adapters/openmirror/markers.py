"""Spark SQL for one publish, built from plain values: full load, exact diff, write, count.

Everything here runs through dbt's connection, so it executes wherever Spark runs (a local
session or a cluster) and no row is collected to the adapter process.
"""

from typing import Dict, List, Sequence

from dbt.adapters.openmirror.schema_plan import ColumnSpec, SchemaPlan

ROW_MARKER = "__rowMarker__"
INSERT, UPDATE, DELETE, UPSERT = 0, 1, 2, 4


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def row_markers(change_markers: str) -> tuple:
    """(marker for new keys, marker for changed rows) under a `change_markers` setting."""
    return (UPSERT, UPSERT) if change_markers == "upsert" else (INSERT, UPDATE)


def published_value(expression: str, column: ColumnSpec) -> str:
    return f"to_json({expression})" if column.is_complex else expression


def _comparable(alias: str, column: ColumnSpec) -> str:
    # Maps have no equality in Spark; JSON text compares every complex type the same way.
    return published_value(f"{alias}.{quote(column.name)}", column)


def with_marker(columns: List[str], marker: str, position: str) -> str:
    marker_column = f"{marker} as {quote(ROW_MARKER)}"
    ordered = [marker_column, *columns] if position == "first" else [*columns, marker_column]
    return ",\n  ".join(ordered)


def null_of(column: ColumnSpec) -> str:
    return f"cast(null as {column.published_type}) as {quote(column.name)}"


def initial_load_sql(relation: str, plan: SchemaPlan, change_markers: str, position: str) -> str:
    """Every row of the model as a new row: the first file of a table folder."""
    new_marker, _ = row_markers(change_markers)
    columns = [f"{published_value(quote(c.name), c)} as {quote(c.name)}" for c in plan.columns]
    columns += [null_of(c) for c in plan.kept]
    return f"select\n  {with_marker(columns, f'cast({new_marker} as int)', position)}\nfrom {relation}"


def change_rows_sql(
    new_relation: str,
    previous_relation: str,
    plan: SchemaPlan,
    key_columns: Sequence[str],
    change_markers: str,
    position: str,
) -> str:
    """New, changed and vanished keys between the snapshot and the model, with their markers.

    Keys are never NULL on either side (checked before), so a NULL key column on one side of
    the full outer join means the key is absent there. Deleted rows carry only their key.
    """
    new_marker, changed_marker = row_markers(change_markers)
    keys = {k.lower() for k in key_columns}
    added = {c.name.lower() for c in plan.added}
    probe = quote(key_columns[0])
    columns: List[str] = []
    unchanged: List[str] = []
    for column in plan.columns:
        name = quote(column.name)
        if column.name.lower() in keys:
            columns.append(f"{published_value(f'coalesce(n.{name}, o.{name})', column)} as {name}")
        else:
            columns.append(f"{published_value(f'n.{name}', column)} as {name}")
            if column.name.lower() in added:
                unchanged.append(f"n.{name} is null")
            else:
                unchanged.append(f"{_comparable('n', column)} <=> {_comparable('o', column)}")
    for column in plan.kept:
        columns.append(null_of(column))
        unchanged.append(f"o.{quote(column.name)} is null")
    marker = (
        f"cast(case when o.{probe} is null then {new_marker} "
        f"when n.{probe} is null then {DELETE} else {changed_marker} end as int)"
    )
    join = " and ".join(f"n.{quote(k)} = o.{quote(k)}" for k in key_columns)
    changed = f"\n  or not ({' and '.join(unchanged)})" if unchanged else ""
    return (
        f"select\n  {with_marker(columns, marker, position)}\n"
        f"from {new_relation} n\nfull outer join {previous_relation} o on {join}\n"
        f"where o.{probe} is null or n.{probe} is null{changed}"
    )


def write_files_sql(
    uri: str, select_sql: str, compression: str, max_rows_per_file: int, writers: int, shuffle: bool
) -> str:
    """Spark writes the change rows as Parquet under `uri`, each file at most `max_rows_per_file`.

    `writers` tasks write the files: with `shuffle` the rows are spread evenly over them (a
    REPARTITION hint: the select still runs in parallel), without it the select's partitions are
    merged into at most that many (COALESCE: no shuffle, for a full load read straight from the
    output table). The publisher numbers the files in name order; a key appears once per
    publish, so the order among them does not matter.
    """
    options = [f"compression {sql_string(compression)}"]
    if max_rows_per_file:
        options.append(f"maxRecordsPerFile {sql_string(str(max_rows_per_file))}")
    hint = f"{'REPARTITION' if shuffle else 'COALESCE'}({int(writers)})"
    return (
        f"insert overwrite directory {sql_string(uri)}\n"
        f"using parquet options ({', '.join(options)})\n"
        f"select /*+ {hint} */ * from (\n{select_sql}\n) change_rows"
    )


def row_count_sql(relation: str) -> str:
    return f"select count(*) from {relation}"


def snapshot_record_sql(relation: str, properties: Dict[str, str]) -> str:
    """Table properties that record which folder and file number the snapshot matches."""
    pairs = ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in properties.items())
    return f"alter table {relation} set tblproperties ({pairs})"


def keep_columns_sql(relation: str, kept: Sequence[ColumnSpec]) -> str:
    """Columns the model dropped stay in the snapshot (NULL from now on), as the mirror keeps them."""
    if not kept:
        return ""
    columns = ", ".join(f"{quote(c.name)} {c.data_type}" for c in kept)
    return f"alter table {relation} add columns ({columns})"


def marker_counts_sql(uri: str) -> str:
    """Rows per marker in the staged files; Spark reads only the marker column."""
    return (
        f"select {quote(ROW_MARKER)} as marker, count(*) as row_count\n"
        f"from parquet.{quote(uri)} group by {quote(ROW_MARKER)}"
    )


def project_columns_sql(target: str, source: str, columns: Sequence[str]) -> str:
    """A copy of `source` with only `columns` (Parquet tables cannot drop columns in place)."""
    return f"create table {target} using parquet as select {', '.join(quote(c) for c in columns)} from {source}"

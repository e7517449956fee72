"""The one seam between a model's run and Spark: statements rendered from macros/sql/ and run,
and the relations they touch kept in dbt's relation cache.

`MirrorRun` sees only these two protocols; the adapter implements them over dbt-spark, and the
unit tests over a fake warehouse.
"""

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Protocol

from dbt.adapters.openmirror.planning.run_plan import SnapshotRecord, snapshot_record
from dbt.adapters.openmirror.planning.schema_plan import ColumnSpec
from dbt.adapters.openmirror.spark.metastore_limits import read_properties

Row = tuple[Any, ...]


class Statements(Protocol):
    """SQL from the macros of macros/sql/, by macro name and plain values."""

    def render(self, macro: str, **values: Any) -> str: ...

    def execute(self, macro: str, **values: Any) -> None: ...

    def query(self, macro: str, **values: Any) -> list[Row]: ...


class Catalog(Protocol):
    """Relations as dbt's cache knows them (renames and drops keep it true)."""

    def find(self, relation: Any) -> Any | None: ...

    def columns(self, relation: Any) -> list[ColumnSpec]: ...

    def drop(self, relation: Any) -> None: ...

    def rename(self, relation: Any, to: Any) -> None: ...

    def created(self, relation: Any) -> None: ...

    def refresh(self, relations: Sequence[Any]) -> None: ...


class AdapterStatements:
    """Statements run on the adapter's connection; the macros are the include project's."""

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter

    def render(self, macro: str, **values: Any) -> str:
        # dbt sets the macro resolver before it runs a node: every caller runs inside one.
        return str(self.adapter.execute_macro(macro, kwargs=values))

    def execute(self, macro: str, **values: Any) -> None:
        self.adapter.execute(self.render(macro, **values))

    def query(self, macro: str, **values: Any) -> list[Row]:
        _, table = self.adapter.execute(self.render(macro, **values), fetch=True)
        return [tuple(row) for row in table]


def described_columns(rows: Sequence[Row]) -> list[ColumnSpec]:
    """The columns in DESCRIBE's rows: those before its first row without a type, which starts the
    next section (`# Partition Information`) or ends the list. dbt-spark also ends the list at a
    column whose name starts with '#', and the columns from there on were not published."""
    columns = []
    for name, data_type, *_ in rows:
        if not data_type:
            break
        columns.append(ColumnSpec(name, data_type))
    return columns


class AdapterCatalog:
    """dbt's relation cache, through the adapter's own relation methods."""

    def __init__(self, adapter: Any, statements: AdapterStatements) -> None:
        self.adapter = adapter
        self.statements = statements

    def find(self, relation: Any) -> Any | None:
        return self.adapter.get_relation(relation.database, relation.schema, relation.identifier)

    def columns(self, relation: Any) -> list[ColumnSpec]:
        described = described_columns(self.statements.query("openmirror_describe_sql", relation=relation))
        shortened = [column.name for column in described if column.is_shortened]
        if not shortened:
            return described
        (whole,) = self.statements.query("openmirror_whole_types_sql", relation=relation, names=shortened)
        whole_type = dict(zip(shortened, whole, strict=True))
        return [replace(column, data_type=whole_type.get(column.name, column.data_type)) for column in described]

    def drop(self, relation: Any) -> None:
        # As found: a name may hold a view (an overlaid snapshot), which `drop table` refuses.
        self.adapter.drop_relation(self.find(relation) or relation)

    def rename(self, relation: Any, to: Any) -> None:
        self.adapter.rename_relation(relation, to)

    def created(self, relation: Any) -> None:
        self.adapter.cache_added(relation)

    def refresh(self, relations: Sequence[Any]) -> None:
        """dbt listed relations when the invocation started; another run may have changed these
        since (while this one waited for the lease). Ask Spark again, in one statement."""
        pattern = "|".join(r.identifier for r in relations)
        sql = self.statements.render("openmirror_show_tables_sql", schema=relations[0].schema, pattern=pattern)
        _, rows = self.adapter.execute(sql, fetch=True)
        found = {
            r.identifier.lower(): r
            for r in self.adapter._build_spark_relation_list(rows, self.adapter._get_relation_information)
        }
        for relation in relations:
            cached = self.find(relation)
            current = found.get(relation.identifier.lower())
            if cached is not None and (current is None or current.type != cached.type):
                self.adapter.cache_dropped(cached)
                cached = None
            if current is not None and cached is None:
                self.adapter.cache_added(current)


def table_properties(statements: Statements, relation: Any) -> dict[str, str]:
    """A table's properties (`show tblproperties`), long values joined (spark/metastore_limits.py)."""
    rows = statements.query("openmirror_show_properties_sql", relation=str(relation))
    return read_properties({str(row[0]): str(row[1]) for row in rows})


def recorded_snapshot(statements: Statements, relation: Any | None) -> SnapshotRecord | None:
    """The snapshot record on `relation` (None: no relation, or no record on it)."""
    return snapshot_record(table_properties(statements, relation)) if relation is not None else None


def marker_counts(statements: Statements, source: str, full_load: bool, change_markers: str) -> dict[int, int]:
    """Rows per `__rowMarker__` of `source` (a table, or a subquery with its alias)."""
    rows = statements.query(
        "openmirror_count_markers_sql", source=source, full_load=full_load, change_markers=change_markers
    )
    return {int(marker): int(count) for marker, count in rows}


def row_count(statements: Statements, relation: Any) -> int:
    """A table's row count (of a Parquet table: read from the files' footers, no column read)."""
    return row_counts(statements, [relation])[0]


def row_counts(statements: Statements, relations: Sequence[Any]) -> list[int]:
    """Several tables' row counts in one statement."""
    rows = statements.query("openmirror_row_counts_sql", relations=[str(r) for r in relations])
    return [int(count) for count in rows[0]]

"""A warehouse without Spark for `MirrorRun`: the `Statements` and `Catalog` seam over tables
held in memory.

Every statement is rendered from the real macros of macros/sql/ (so a wrong macro name or
argument fails here as in dbt) and recorded by name; its effect is carried out on the tables the
way Spark would: key hashes copy the output's rows, changed keys compare them, and staging writes
the change rows as real Parquet into the staged folder, with `__rowMarker__` as int32.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from dbt.adapters.openmirror.planning.schema_plan import ColumnSpec
from dbt.adapters.openmirror.rules.markers import DELETE, INSERT, ROW_MARKER, UPDATE
from tests.support.sql_macros import sql_macros

_ARROW_TYPES = {"int": pa.int32(), "bigint": pa.int64(), "string": pa.string()}


@dataclass(frozen=True)
class FakeRelation:
    schema: str
    identifier: str
    type: str | None = None
    database: str | None = None

    def incorporate(self, path: dict[str, str] | None = None, type: str | None = None) -> "FakeRelation":
        return replace(self, identifier=(path or {}).get("identifier", self.identifier), type=type or self.type)

    def __str__(self) -> str:
        return f"{self.schema}.{self.identifier}"


@dataclass
class FakeTable:
    columns: list[ColumnSpec]
    rows: list[dict[str, Any]]
    properties: dict[str, str] = field(default_factory=dict)


class FakeWarehouse:
    def __init__(self, schema: str = "analytics") -> None:
        self.schema = schema
        self.tables: dict[str, FakeTable] = {}
        #: Names of the macros run as statements or queries, in order.
        self.statements: list[str] = []
        #: Names of the macros rendered for their text only (selects, signatures).
        self.rendered: list[str] = []
        # What each rendered change-row select means, by its text.
        self._selects: dict[str, tuple[Any, ...]] = {}
        #: The renames a run declares (`RunRelations.renamed`, by name): any other is refused, so
        #: that a cut-off rename can always be undone (run/folder_repair.py).
        self.declared_renames: set[tuple[str, str]] | None = None

    # -- the model build the materialization does --------------------------------------------------

    def build(self, relation: FakeRelation, columns: list[ColumnSpec], rows: list[dict[str, Any]]) -> None:
        assert relation.identifier not in self.tables, f"{relation} exists"
        self.tables[relation.identifier] = FakeTable(list(columns), [dict(r) for r in rows])

    def table(self, relation: Any) -> FakeTable:
        return self.tables[relation.identifier]

    # -- Statements -------------------------------------------------------------------------------

    def render(self, macro: str, **values: Any) -> str:
        self.rendered.append(macro)
        sql = str(getattr(sql_macros(), macro)(**values))
        if macro == "openmirror_initial_load_sql":
            self._selects[sql] = ("full", values["relation"])
        elif macro == "openmirror_change_rows_sql":
            self._selects[sql] = ("diff", values["new_relation"], values["previous_relation"], values["key_columns"])
        elif macro == "openmirror_changed_rows_sql":
            self._selects[sql] = ("changed", values["new_relation"], values["changes"], values["key_columns"])
        return sql

    def execute(self, macro: str, **values: Any) -> None:
        self._rendered_statement(macro, values)
        if macro == "openmirror_key_hashes_sql":
            source = self._named(values["relation"])
            self.tables[self._identifier(values["target"])] = FakeTable(
                list(source.columns), [dict(r) for r in source.rows], dict(values["properties"])
            )
        elif macro == "openmirror_changed_keys_sql":
            keys = values["key_columns"]
            changed = self._diff(self._named(values["new_hashes"]), self._named(values["previous_hashes"]), keys)
            rows = [{**{k: row[k] for k in keys}, ROW_MARKER: row[ROW_MARKER]} for row in changed]
            self.tables[self._identifier(values["target"])] = FakeTable([], rows)
        elif macro == "openmirror_snapshot_record_sql":
            self._named(values["relation"]).properties.update(values["properties"])
        elif macro == "openmirror_unset_properties_sql":
            for key in values["keys"]:
                self._named(values["relation"]).properties.pop(key, None)
        elif macro == "openmirror_write_files_sql":
            self._write_files(values["uri"], values["select_sql"])

    def query(self, macro: str, **values: Any) -> list[tuple[Any, ...]]:
        self._rendered_statement(macro, values)
        if macro == "openmirror_row_counts_sql":
            return [tuple(len(self._named(relation).rows) for relation in values["relations"])]
        if macro == "openmirror_show_properties_sql":
            return list(self._named(values["relation"]).properties.items())
        if macro == "openmirror_marker_counts_sql":
            folder = Path(values["uri"].removeprefix("file://"))
            markers = [m for f in sorted(folder.glob("*.parquet")) for m in pq.read_table(f)[ROW_MARKER].to_pylist()]
            return self._counted(markers)
        if macro == "openmirror_count_markers_sql":
            if values["source"].removeprefix(f"{self.schema}.") in self.tables:  # the changed keys
                return self._counted([row[ROW_MARKER] for row in self._named(values["source"]).rows])
            meaning = next(m for sql, m in self._selects.items() if sql in values["source"])
            return self._counted([row[ROW_MARKER] for row in self._change_rows(meaning)])
        if macro == "openmirror_spark_master_sql":
            return [("spark.master", "local[2]")]
        return []  # key problems and lookalikes: none in these outputs

    def _rendered_statement(self, macro: str, values: dict[str, Any]) -> None:
        getattr(sql_macros(), macro)(**values)
        self.statements.append(macro)

    @staticmethod
    def _counted(markers: list[int]) -> list[tuple[Any, ...]]:
        return [(marker, markers.count(marker)) for marker in sorted(set(markers))]

    # -- Catalog ----------------------------------------------------------------------------------

    def find(self, relation: Any) -> Any | None:
        return relation.incorporate(type="table") if relation.identifier in self.tables else None

    def columns(self, relation: Any) -> list[ColumnSpec]:
        return list(self.table(relation).columns)

    def drop(self, relation: Any) -> None:
        self.tables.pop(relation.identifier, None)

    def rename(self, relation: Any, to: Any) -> None:
        assert to.identifier not in self.tables, f"rename onto the existing {to}"
        if self.declared_renames is not None:
            assert (relation.identifier, to.identifier) in self.declared_renames, (
                f"undeclared rename {relation} -> {to}"
            )
        self.tables[to.identifier] = self.tables.pop(relation.identifier)

    def created(self, relation: Any) -> None:
        assert relation.identifier in self.tables

    def refresh(self, relations: Sequence[Any]) -> None:
        pass  # nothing else changes these tables

    # -- what Spark would compute -------------------------------------------------------------------

    def _identifier(self, name: str) -> str:
        schema, _, identifier = name.partition(".")
        assert schema == self.schema, name
        return identifier

    def _named(self, name: str) -> FakeTable:
        return self.tables[self._identifier(name)]

    @staticmethod
    def _diff(new: FakeTable, previous: FakeTable, keys: list[str]) -> list[dict[str, Any]]:
        def key(row: dict[str, Any]) -> tuple[Any, ...]:
            return tuple(row[k] for k in keys)

        before = {key(row): row for row in previous.rows}
        after = {key(row): row for row in new.rows}
        changes = [{**row, ROW_MARKER: INSERT} for k, row in after.items() if k not in before]
        changes += [{**row, ROW_MARKER: UPDATE} for k, row in after.items() if k in before and before[k] != row]
        changes += [{**{c: row[c] for c in keys}, ROW_MARKER: DELETE} for k, row in before.items() if k not in after]
        return changes

    def _change_rows(self, meaning: tuple[Any, ...]) -> list[dict[str, Any]]:
        kind, new = meaning[0], self._named(meaning[1])
        if kind == "full":
            return [{**row, ROW_MARKER: INSERT} for row in new.rows]
        keys = meaning[3]
        if kind == "diff":
            return self._diff(new, self._named(meaning[2]), keys)
        after = {tuple(row[k] for k in keys): row for row in new.rows}
        changed = []
        for change in self._named(meaning[2]).rows:
            row = after.get(tuple(change[k] for k in keys), {k: change[k] for k in keys})
            changed.append({**row, ROW_MARKER: change[ROW_MARKER]})
        return changed

    def _write_files(self, uri: str, select_sql: str) -> None:
        meaning = self._selects[select_sql]
        columns = self._named(meaning[1]).columns
        schema = pa.schema([(c.name, _ARROW_TYPES[c.data_type]) for c in columns] + [(ROW_MARKER, pa.int32())])
        folder = Path(uri.removeprefix("file://"))
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(self._change_rows(meaning), schema=schema), folder / "part-00000.parquet")

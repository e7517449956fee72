"""The diff of one run: the output's key hashes, its keys checked, and the change rows against the
snapshot (planning/hash_diff.py decides the sizes; the SQL is macros/sql/hash_diff.sql and
full_diff.sql).

Three ways: a full load (first load or rebuild) selects every row; an incremental run whose
snapshot's key hashes can be trusted compares hashes and selects the changed keys' rows; one
whose hashes cannot (a crash between the two renames, other hashed columns) compares whole rows.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from dbt.adapters.openmirror.errors import PublishError
from dbt.adapters.openmirror.planning import hash_diff
from dbt.adapters.openmirror.planning.keys import lookalike_warning, raise_key_problems, string_keys
from dbt.adapters.openmirror.planning.overlay import OVERLAY_FORMAT, OVERLAY_FORMAT_VERSION, base_run_id
from dbt.adapters.openmirror.planning.run_plan import INCREMENTAL, RunPlan, SnapshotRecord, snapshot_rows_problem
from dbt.adapters.openmirror.run.config import MirrorConfig
from dbt.adapters.openmirror.run.relations import RunRelations
from dbt.adapters.openmirror.run.statements import Catalog, Statements, marker_counts, row_count, table_properties


@dataclass(frozen=True)
class ChangeRows:
    """The change rows' select, how many writer tasks write them and whether the rows are
    shuffled to them (see `openmirror_write_files_sql`), and their rows per marker when the diff
    counted them in its changed keys, which hold one row per change row (None when it did not)."""

    select_sql: str
    writers: int
    shuffle: bool
    markers: dict[int, int] | None = None

    @classmethod
    def of_changed_keys(cls, select_sql: str, markers: dict[int, int], max_rows_per_file: int) -> "ChangeRows":
        """The change rows of counted changed keys: as many writers as their rows need."""
        return cls(select_sql, hash_diff.writer_count(sum(markers.values()), max_rows_per_file), True, markers)

    @property
    def rows(self) -> int | None:
        return sum(self.markers.values()) if self.markers is not None else None


class SnapshotDiff:
    def __init__(
        self,
        statements: Statements,
        catalog: Catalog,
        mirror: MirrorConfig,
        relations: RunRelations,
        run_id: str,
        warn: Callable[[str], None],
        debug: Callable[[str], None],
    ) -> None:
        self.statements = statements
        self.catalog = catalog
        self.mirror = mirror
        self.relations = relations
        self.run_id = run_id
        self.warn = warn
        self.debug = debug

    def key_hashes(self, plan: RunPlan) -> int:
        """One pass over the output: its key hashes table (see macros/sql/hash_diff.sql), in
        buckets sized by the output's row count (a count of Parquet rows reads no column), which
        is returned for sizing a full load's writers."""
        statements, relations = self.statements, self.relations
        key_columns = plan.key_columns
        columns = hash_diff.hashed_columns(plan.schema, key_columns)
        properties = {hash_diff.HASHES_RUN_ID: self.run_id, hash_diff.HASHES_COLUMNS: self.signature(plan)}
        output_rows = row_count(self.statements, relations.new_output)
        self.catalog.drop(relations.new_hashes)
        statements.execute(
            "openmirror_key_hashes_sql",
            target=str(relations.new_hashes),
            relation=str(relations.new_output),
            key_columns=key_columns,
            hashed=columns,
            properties=properties,
            buckets=hash_diff.bucket_count(output_rows),
        )
        self.catalog.created(relations.new_hashes)
        return output_rows

    def change_rows(
        self,
        plan: RunPlan,
        snapshot: SnapshotRecord | None,
        existing: Any | None,
        output_rows: int,
    ) -> ChangeRows:
        """The change rows against the snapshot, or a full load, after the key check."""
        mirror, relations, statements = self.mirror, self.relations, self.statements
        key_columns = plan.key_columns
        with self._sorted_bucket_scans():
            new = str(relations.new_output)
            if plan.mode != INCREMENTAL:
                self._check_keys(plan, relations.new_hashes, counted=False)
                self.warn_key_lookalikes(plan, relations.new_hashes)
                sql = statements.render(
                    "openmirror_initial_load_sql",
                    relation=new,
                    columns=plan.schema.columns,
                    kept=plan.schema.kept,
                    change_markers=mirror.change_markers,
                    position=mirror.row_marker_position,
                    show_values=mirror.show_key_values,
                )
                return ChangeRows(sql, hash_diff.writer_count(output_rows, mirror.max_rows_per_file), False)
            previous_hashes = self.snapshot_hashes(plan, snapshot, self.signature(plan))
            if previous_hashes is None:
                self.debug(f"Model '{mirror.model}': no key hashes match the snapshot; comparing whole rows")
                self.check_complete_table(snapshot, existing)
                self._check_keys(plan, relations.new_hashes, counted=False)
                self.warn_key_lookalikes(plan, relations.new_hashes)
                sql = statements.render(
                    "openmirror_change_rows_sql",
                    new_relation=new,
                    previous_relation=str(existing),
                    columns=plan.schema.columns,
                    kept=plan.schema.kept,
                    added=plan.schema.added,
                    key_columns=key_columns,
                    change_markers=mirror.change_markers,
                    position=mirror.row_marker_position,
                    show_values=mirror.show_key_values,
                )
                return ChangeRows(sql, 1, True)
            changes = relations.changes
            self.catalog.drop(changes)
            statements.execute(
                "openmirror_changed_keys_sql",
                target=str(changes),
                new_hashes=str(relations.new_hashes),
                previous_hashes=previous_hashes,
                key_columns=key_columns,
                change_markers=mirror.change_markers,
            )
            self.catalog.created(changes)
            self._check_keys(plan, changes, counted=True)
            self.warn_key_lookalikes(plan, relations.new_hashes, new_keys=changes)
            markers = marker_counts(statements, str(changes), False, mirror.change_markers)
            return self.changed_key_rows(plan, new, markers)

    def changed_key_rows(self, plan: RunPlan, new_relation: str, markers: dict[int, int]) -> ChangeRows:
        """The change rows of the changed keys, their new rows taken from `new_relation`
        (`markers`: their rows per marker)."""
        mirror = self.mirror
        sql = self.statements.render(
            "openmirror_changed_rows_sql",
            new_relation=new_relation,
            changes=str(self.relations.changes),
            columns=plan.schema.columns,
            kept=plan.schema.kept,
            key_columns=plan.key_columns,
            change_markers=mirror.change_markers,
            position=mirror.row_marker_position,
            show_values=mirror.show_key_values,
        )
        return ChangeRows.of_changed_keys(sql, markers, mirror.max_rows_per_file)

    def check_complete_table(self, snapshot: SnapshotRecord | None, existing: Any, counted: int | None = None) -> None:
        """Before the snapshot's rows are read: its complete table (`existing`, or an overlaid
        snapshot's base) holds the rows its run wrote (`counted`: its rows, when already counted)."""
        if snapshot is None or snapshot.rows is None:
            return
        table = self.relations.base if snapshot.overlay is not None else existing
        if counted is None:
            counted = row_count(self.statements, table)
        problem = snapshot_rows_problem(self.mirror.model, str(table), snapshot.rows, counted)
        if problem is None:
            return
        if not self.relations.publishes:
            problem += " (A run without a lease may also have met a `dbt run` of the model replacing it: run again.)"
        raise PublishError(problem)

    def signature(self, plan: RunPlan) -> str:
        """What this run's key hashes cover (macros/sql/hash_diff.sql)."""
        return self.statements.render(
            "openmirror_hash_signature", hashed=hash_diff.hashed_columns(plan.schema, plan.key_columns)
        )

    @contextmanager
    def _sorted_bucket_scans(self) -> Iterator[None]:
        """Spark reads the sorted key hashes buckets as sorted while the diff's statements run, and
        then no longer (see macros/sql/hash_diff.sql), also when the key check fails."""
        self.statements.execute("openmirror_sorted_bucket_scans_sql", on=True)
        try:
            yield
        finally:
            self.statements.execute("openmirror_sorted_bucket_scans_sql", on=False)

    def snapshot_hashes(
        self, plan: RunPlan, snapshot: SnapshotRecord | None, signature: str, hash_rows: int | None = None
    ) -> str | None:
        """The snapshot's key hashes as a relation to join, or None when they cannot be trusted
        (decided by `hash_diff.hashes_usable`, by their count against the rows the snapshot
        records, and for an overlay by its recorded signature and layout; the diff then compares
        whole rows): the key hashes table, or for an overlaid snapshot the base's hashes overlaid
        by the overlay's own. `signature` is what this run's hashes cover; `hash_rows` the key
        hashes table's rows, when already counted."""
        if snapshot is None or snapshot.run_id is None:
            return None
        relations = self.relations
        hashes = relations.previous_hashes
        if not hash_diff.hashes_usable(self._properties(hashes), base_run_id(snapshot), signature):
            return None
        if snapshot.rows is not None:
            counted = hash_rows if hash_rows is not None else row_count(self.statements, hashes)
            if snapshot_rows_problem(self.mirror.model, str(hashes), snapshot.rows, counted) is not None:
                self.debug(
                    f"Model '{self.mirror.model}': {hashes} holds {counted} key hashes for the snapshot's "
                    f"{snapshot.rows} rows; comparing whole rows"
                )
                return None
        if snapshot.overlay is None:
            return str(hashes)
        overlay = relations.overlay(snapshot.overlay)
        properties = self._properties(overlay) or {}
        if (
            properties.get(hash_diff.HASHES_COLUMNS) != signature
            or properties.get(OVERLAY_FORMAT) != OVERLAY_FORMAT_VERSION
        ):
            return None
        return self.statements.render(
            "openmirror_overlaid_hashes_sql",
            base_hashes=str(hashes),
            overlay=str(overlay),
            key_columns=plan.key_columns,
            by_key_hash=hash_diff.probes_by_key_hash(hash_diff.key_types(plan.schema.columns, plan.key_columns)),
        )

    def _properties(self, relation: Any) -> dict[str, str] | None:
        return table_properties(self.statements, relation) if self.catalog.find(relation) is not None else None

    def _check_keys(self, plan: RunPlan, relation: Any, counted: bool) -> None:
        key_columns = plan.key_columns
        problems = self.statements.query(
            "openmirror_key_problems_sql",
            relation=str(relation),
            key_columns=key_columns,
            counted=counted,
        )
        raise_key_problems(self.mirror.model, key_columns, problems, self.mirror.show_key_values)

    def warn_key_lookalikes(self, plan: RunPlan, keys: Any, new_keys: Any = None) -> None:
        """String keys that differ only in case or trailing spaces: among all keys (`keys`, a row
        per key), or between this run's new keys (`new_keys`, the changed keys) and all keys."""
        key_columns = plan.key_columns
        lowered = {k.lower() for k in key_columns}
        strings = string_keys([c for c in plan.schema.columns if c.name.lower() in lowered])
        if not strings:
            return
        pairs = self.statements.query(
            "openmirror_key_lookalikes_sql",
            keys=str(keys),
            key_columns=key_columns,
            string_keys=strings,
            new_keys=str(new_keys) if new_keys is not None else None,
            change_markers=self.mirror.change_markers,
        )
        for one, other in pairs:
            self.warn(lookalike_warning(self.mirror.model, key_columns, (one, other), self.mirror.show_key_values))

"""A candidate run that overlays its snapshot (planning/overlay.py decides when; the SQL is
macros/sql/overlay.sql): the changed keys among the candidates, then the new overlay and the
change rows, all at the cost of the candidates (the base is only streamed past their keys)."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dbt.adapters.openmirror.planning import hash_diff
from dbt.adapters.openmirror.planning.overlay import OverlayFacts
from dbt.adapters.openmirror.planning.run_plan import RunPlan, SnapshotRecord
from dbt.adapters.openmirror.planning.schema_plan import INTERNAL_PREFIX, ColumnSpec
from dbt.adapters.openmirror.run.diff import ChangeRows, SnapshotDiff
from dbt.adapters.openmirror.run.relations import RunRelations
from dbt.adapters.openmirror.run.statements import Catalog, marker_counts, row_counts


@dataclass(frozen=True)
class Candidates:
    """What the model built or, in a candidate run, selected, which the complete output is written
    from: its relation, columns, key columns (as it spells them) and its delete flag column (None
    without `delete_flag`)."""

    relation: Any
    columns: list[ColumnSpec]
    key_columns: list[str]
    delete_flag: str | None

    @property
    def published_columns(self) -> list[ColumnSpec]:
        """The columns the complete output has: the model's without the delete flag."""
        return [c for c in self.columns if c.name != self.delete_flag]


@dataclass(frozen=True)
class OverlayRecord:
    """What an overlay's snapshot record adds: the base it overlays, which overlay table the view
    reads, and what the overlay's key hashes cover."""

    base_run_id: str
    slot: str
    signature: str


def model_columns(overlay_columns: Sequence[ColumnSpec]) -> list[ColumnSpec]:
    """An overlay table's model columns (without its key hashes, deleted flag and in_base bit)."""
    return [c for c in overlay_columns if not c.name.lower().startswith(INTERNAL_PREFIX)]


def usable_snapshot(catalog: Catalog, relation: Any, record: SnapshotRecord | None) -> bool:
    """Whether `relation`, found under a model's name with `record` on it, can be its snapshot: a
    table, or the view of an overlaid snapshot whose base and current overlay both exist (the view
    reads them, and Spark cannot even rename a view that reads a dropped table). Anything else is
    replaced by a run in full."""
    if relation.type == "table":
        return True
    if relation.type != "view" or record is None or record.overlay is None:
        return False
    layers = RunRelations.of(relation, publishes=True)
    return catalog.find(layers.base) is not None and catalog.find(layers.overlay(record.overlay)) is not None


def drop_stale_layers(catalog: Catalog, relations: RunRelations) -> None:
    """An overlaid snapshot's base and overlays live as long as `{{ this }}` is their view; once
    a complete table replaced it, they go."""
    existing = catalog.find(relations.target)
    if existing is None or existing.type != "table":
        return
    for layer in relations.layers():
        if catalog.find(layer) is not None:
            catalog.drop(layer)


class SnapshotOverlay:
    """A candidate run's overlay over `existing`, the snapshot `snapshot` records; `diff` is the
    run's diff, whose statements, catalog, config and relations it shares."""

    def __init__(self, diff: SnapshotDiff, snapshot: SnapshotRecord, existing: Any) -> None:
        self.diff = diff
        self.snapshot = snapshot
        self.existing = existing

    @property
    def current(self) -> Any | None:
        """The overlay the snapshot's view reads (None: the snapshot is a plain table)."""
        return self.diff.relations.overlay(self.snapshot.overlay) if self.snapshot.overlay else None

    def facts(self, plan: RunPlan, candidates: Candidates, signature: str) -> OverlayFacts:
        """What decides whether this run overlays the snapshot (planning/overlay.py); `signature`
        is what this run's key hashes cover."""
        diff, current = self.diff, self.current
        base = diff.relations.base if current is not None else self.existing
        overlays = [current] if current is not None else []
        hashes = [diff.relations.previous_hashes] if diff.catalog.find(diff.relations.previous_hashes) else []
        counts = row_counts(diff.statements, [base, candidates.relation, *overlays, *hashes])
        base_rows, candidate_rows = counts[0], counts[1]
        hash_rows = counts[-1] if hashes else None
        diff.check_complete_table(self.snapshot, self.existing, base_rows)
        return OverlayFacts(
            plan,
            diff.snapshot_hashes(plan, self.snapshot, signature, hash_rows) is not None,
            base_rows,
            sum(counts[2 : 2 + len(overlays)]),
            candidate_rows,
        )

    def changed_keys(self, plan: RunPlan, candidates: Candidates) -> dict[int, int]:
        """Write the changed keys among the candidates (`relations.changes`, with the candidates'
        key hashes, which are hashed once, here) and count them per marker (empty: none changed);
        candidates as published are not among them."""
        diff = self.diff
        statements, catalog, relations = diff.statements, diff.catalog, diff.relations
        current, key_columns = self.current, plan.key_columns
        changes = relations.changes
        catalog.drop(changes)
        statements.execute(
            "openmirror_overlay_changes_sql",
            target=str(changes),
            candidates=str(candidates.relation),
            previous_overlay=str(current) if current is not None else None,
            base_hashes=str(relations.previous_hashes),
            key_columns=key_columns,
            hashed=hash_diff.hashed_columns(plan.schema, key_columns),
            delete_flag=candidates.delete_flag,
            change_markers=diff.mirror.change_markers,
            by_key_hash=_by_key_hash(plan),
        )
        catalog.created(changes)
        return marker_counts(statements, str(changes), False, diff.mirror.change_markers)

    def change_rows(self, plan: RunPlan, candidates: Candidates, overlay: Any, markers: dict[int, int]) -> ChangeRows:
        """Write `overlay` (the changed candidates with the state the changed keys carry, over the
        current overlay's other keys) and select the changed keys' change rows (`markers`: their
        rows per marker)."""
        diff = self.diff
        statements, catalog, relations = diff.statements, diff.catalog, diff.relations
        current, key_columns, by_key_hash = self.current, plan.key_columns, _by_key_hash(plan)
        changes = relations.changes
        catalog.drop(overlay)
        statements.execute(
            "openmirror_overlay_sql",
            target=str(overlay),
            candidates=str(candidates.relation),
            changes=str(changes),
            previous_overlay=str(current) if current is not None else None,
            columns=plan.schema.columns,
            key_columns=key_columns,
            by_key_hash=by_key_hash,
        )
        catalog.created(overlay)
        all_keys = statements.render(
            "openmirror_overlaid_hashes_sql",
            base_hashes=str(relations.previous_hashes),
            overlay=str(overlay),
            key_columns=key_columns,
            by_key_hash=by_key_hash,
        )
        diff.warn_key_lookalikes(plan, all_keys, new_keys=changes)
        return diff.changed_key_rows(plan, str(candidates.relation), markers)


def _by_key_hash(plan: RunPlan) -> bool:
    """Whether the overlay's joins with the large side probe one 64-bit hash of the key."""
    return hash_diff.probes_by_key_hash(hash_diff.key_types(plan.schema.columns, plan.key_columns))

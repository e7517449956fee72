"""Snapshots overlaid by candidate runs: an incremental model's run at the cost of its change.

A candidate run (the model's `is_incremental()` was true) changes a few rows of a large snapshot.
Rewriting `{{ this }}` for them would cost a full table write on plain Parquet, so the run keeps
the snapshot as it is, as a *base* table, and writes only an *overlay*: the latest state of every
key a candidate run changed since the base was written (its row, its key hashes, and whether it
was flagged deleted). `{{ this }}` becomes a view of the base's rows whose keys are not in the
overlay plus the overlay's rows that are not deleted (macros/sql/overlay.sql), so `ref()`, tests
and the `max(updated_at)` idiom see the complete output.

The overlay is rewritten by each candidate run that changes a key (it holds few rows), into the
one of two overlay tables the view does not read; replacing the view is the one statement that
makes the run's output the snapshot, and its properties are the snapshot's record. A run in full (first run,
--full-refresh, reconcile, a schema change, an overlay grown past its share) writes a complete
table again, which replaces the view: the overlay is folded back into a base.
"""

from dataclasses import dataclass

from dbt.adapters.openmirror.planning.run_plan import INCREMENTAL, RunPlan, SnapshotRecord
from dbt.adapters.openmirror.spark.metastore_limits import VIEW_TEXT_LIMIT

#: The two overlay tables beside a snapshot (`<this>__om_overlay_a`, `..._b`).
OVERLAY_SLOTS = ("a", "b")
#: The overlay's layout, recorded on it (and on the view): its rows carry whether the base holds
#: their key (macros/sql/overlay.sql). An overlay without it is not trusted: the next run folds it
#: back into a complete table.
OVERLAY_FORMAT = "openmirror.overlay_format"
OVERLAY_FORMAT_VERSION = "in_base"
#: That bit's column (`openmirror_overlay_in_base` in macros/sql/overlay.sql).
IN_BASE = "__openmirror_in_base"
#: Largest overlay a candidate run writes, as a share of the base's rows but at least
#: MIN_OVERLAY_ROWS; past it the run merges the candidates into a complete table. Every reader of
#: the view anti-joins the base with the overlay, which stays cheap while the overlay is small.
MAX_OVERLAY_SHARE = 0.05
MIN_OVERLAY_ROWS = 100_000


def overlay_limit(base_rows: int) -> int:
    """The most rows an overlay over `base_rows` rows may hold."""
    return max(MIN_OVERLAY_ROWS, int(MAX_OVERLAY_SHARE * base_rows))


def view_text_length(columns: list[str], key_columns: list[str]) -> int:
    """At most how long the overlaid snapshot's view is (macros/sql/overlay.sql): it names every
    column twice and every key column four times, quoted and qualified, besides its relations'
    names and a few hundred characters of its own."""
    return 2 * sum(len(name) + 6 for name in columns) + 4 * sum(len(name) + 10 for name in key_columns) + 2000


def free_slot(snapshot: SnapshotRecord | None) -> str:
    """The overlay table a run writes: the one the snapshot's view does not read."""
    current = snapshot.overlay if snapshot else None
    return OVERLAY_SLOTS[1] if current == OVERLAY_SLOTS[0] else OVERLAY_SLOTS[0]


def base_run_id(snapshot: SnapshotRecord) -> str | None:
    """The run that wrote the snapshot's base (its key hashes carry that run id)."""
    return snapshot.base_run_id if snapshot.overlay else snapshot.run_id


@dataclass(frozen=True)
class OverlayFacts:
    """What decides whether a candidate run overlays the snapshot."""

    plan: RunPlan
    #: The snapshot's key hashes (the base's, and the overlay's own) are its rows' and cover the
    #: columns this run hashes.
    hashes_usable: bool
    base_rows: int
    overlay_rows: int
    candidate_rows: int


def overlay_refusal(facts: OverlayFacts) -> str | None:
    """Why a candidate run merges its candidates into a complete table instead of overlaying the
    snapshot (None: it overlays). Every reason is one a run in full handles: a new table folder or
    rebuild, column changes, hashes that cannot be trusted, an overlay grown past its share."""
    plan = facts.plan
    if plan.mode != INCREMENTAL:
        return f"the run is a full load ({plan.reason})"
    schema = plan.schema
    # Only an added column needs the base's rows rewritten (once: it is the snapshot's after).
    # A column respelled in case only is the same column to Spark's reads of the view, and the
    # change rows publish it under the mirror's spelling: the snapshot keeps the model's. A kept
    # column (dropped by the model) is NULL in the overlay's rows and change rows, as in the
    # base's since the run that dropped it (that run merged: its hashes covered the column). An
    # ignored column is in neither the snapshot nor the overlay, and new to every run.
    if schema.added:
        return "the model added columns"
    view_text = view_text_length([c.name for c in [*schema.columns, *schema.kept]], plan.key_columns)
    if view_text > VIEW_TEXT_LIMIT:
        return (
            f"the snapshot's view would name its columns in about {view_text} characters, more than a "
            f"metastore may keep of a view's text ({VIEW_TEXT_LIMIT})"
        )
    if not facts.hashes_usable:
        return "the snapshot's key hashes do not cover this run's columns"
    rows, limit = facts.overlay_rows + facts.candidate_rows, overlay_limit(facts.base_rows)
    if rows > limit:
        return f"the overlay would hold up to {rows} rows, more than {limit} over a base of {facts.base_rows}"
    return None

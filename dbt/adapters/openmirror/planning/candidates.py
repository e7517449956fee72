"""Incremental `open_mirror` models: whether a run selects only candidate rows.

A model that writes `{% if is_incremental() %} where updated_at > (select max(updated_at) from
{{ this }}) {% endif %}` gets `is_incremental()` true when its snapshot `{{ this }}` is a complete
earlier output this adapter recorded: the candidates are then merged into the snapshot
(macros/sql/candidates.sql), which gives the complete output again, and the run publishes its
difference as any run does. Without a usable snapshot, on --full-refresh and on a reconcile run
the model runs in full, and rows that vanished from the source are then published as deletes.
"""

from collections.abc import Sequence

from dbt.adapters.openmirror.errors import MirrorConfigError
from dbt.adapters.openmirror.planning.run_plan import SnapshotRecord
from dbt.adapters.openmirror.planning.schema_plan import ColumnSpec


def selects_candidates(
    snapshot: SnapshotRecord | None,
    full_refresh: bool,
    reconcile: bool,
    reconcile_every: int,
) -> bool:
    """`is_incremental()` for an `open_mirror` model. `reconcile_every` N runs the model in full
    every Nth run (0: only when asked with the `openmirror_reconcile` var). A snapshot holding a
    change for its tests is one an invocation left when it died before its end: the run discards
    it before the model is built (dropping it on a first publish), so the model cannot read it."""
    if snapshot is None or snapshot.held or full_refresh or reconcile:
        return False
    return not (reconcile_every and snapshot.candidate_runs + 1 >= reconcile_every)


def candidate_runs_after(snapshot: SnapshotRecord | None, candidates: bool) -> int:
    """What the new snapshot records: one more candidate run in a row, or none after a full run."""
    if not candidates:
        return 0
    return (snapshot.candidate_runs if snapshot else 0) + 1


def delete_flag_column(model: str, delete_flag: str, columns: Sequence[ColumnSpec]) -> str:
    """The model's column `delete_flag` names (case-insensitively), which must be boolean."""
    for column in columns:
        if column.name.lower() == delete_flag.lower():
            if column.data_type.strip().lower() != "boolean":
                raise MirrorConfigError(
                    f"Model '{model}': delete_flag column '{column.name}' is {column.data_type}, not boolean "
                    f"(cast it in the model, e.g. `{column.name} = 1 as {column.name}`). Nothing was published."
                )
            return column.name
    raise MirrorConfigError(
        f"Model '{model}': delete_flag '{delete_flag}' is not a column of the model (it has "
        f"{', '.join(c.name for c in columns)}). Nothing was published."
    )

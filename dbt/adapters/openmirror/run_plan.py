"""Decide how a run publishes: a first load, an incremental change file, or a rebuild."""

from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence

from dbt.adapters.openmirror.errors import KeyColumnsError, PublishError
from dbt.adapters.openmirror.publisher import TableFolderState
from dbt.adapters.openmirror.schema_plan import ColumnSpec, SchemaPlan, plan_schema

INITIAL, INCREMENTAL, REBUILD = "initial", "incremental", "rebuild"

# Table properties on the snapshot table `{{ this }}`: which folder and number it matches.
SNAPSHOT_TABLE_FOLDER = "openmirror.table_folder"
SNAPSHOT_SEQUENCE_NUMBER = "openmirror.sequence_number"
SNAPSHOT_RUN_ID = "openmirror.run_id"


@dataclass(frozen=True)
class SnapshotRecord:
    table_folder: str
    sequence_number: int
    run_id: Optional[str] = None


@dataclass(frozen=True)
class RunPlan:
    mode: str
    reason: str
    schema: SchemaPlan


def snapshot_properties(table_folder: str, sequence_number: int, run_id: str) -> Dict[str, str]:
    return {
        SNAPSHOT_TABLE_FOLDER: table_folder,
        SNAPSHOT_SEQUENCE_NUMBER: str(int(sequence_number)),
        SNAPSHOT_RUN_ID: run_id,
    }


def snapshot_record(properties: Mapping[str, str]) -> Optional[SnapshotRecord]:
    """The record a previous run left on the snapshot table, if any."""
    folder = properties.get(SNAPSHOT_TABLE_FOLDER)
    number = properties.get(SNAPSHOT_SEQUENCE_NUMBER)
    if folder is None or number is None or not str(number).isdigit():
        return None
    return SnapshotRecord(folder, int(number), properties.get(SNAPSHOT_RUN_ID))


def check_key_columns(model: str, declared: Optional[List[str]], key_columns: Sequence[str]) -> None:
    if declared is not None and list(declared) != list(key_columns):
        raise KeyColumnsError(
            f"Model '{model}': unique_key is now {list(key_columns)} but the mirrored table was "
            f"declared with keyColumns {declared}. The mirror can never change a table's key in "
            "place; run with --full-refresh to rebuild the mirrored table with the new key."
        )


def _folder_plan(
    model: str,
    table_folder: str,
    key_columns: Sequence[str],
    folder: TableFolderState,
    snapshot: Optional[SnapshotRecord],
    full_refresh: bool,
) -> tuple:
    """(mode, reason) from the table folder and the snapshot alone."""
    if full_refresh:
        return (REBUILD if folder.exists else INITIAL), "--full-refresh"
    if folder.numbering_conflict:
        raise PublishError(f"Model '{model}': {folder.numbering_conflict}")
    check_key_columns(model, folder.key_columns, key_columns)
    if not folder.exists:
        return INITIAL, ("the table folder was missing" if snapshot else "first publish")
    if snapshot is None:
        return REBUILD, "no snapshot table records what the table folder holds"
    if snapshot.table_folder != table_folder:
        return REBUILD, f"the snapshot was published to {snapshot.table_folder}, not {table_folder}"
    if snapshot.sequence_number != folder.last_sequence_number:
        return REBUILD, (
            f"the snapshot matches file {snapshot.sequence_number} but the table folder ends at "
            f"{folder.last_sequence_number} (an earlier run stopped between publishing and "
            "recording)"
        )
    return INCREMENTAL, ""


def plan_run(
    model: str,
    table_folder: str,
    key_columns: Sequence[str],
    folder: TableFolderState,
    snapshot: Optional[SnapshotRecord],
    full_refresh: bool,
    previous_columns: Optional[Sequence[ColumnSpec]],
    current_columns: Sequence[ColumnSpec],
    on_schema_change: str,
) -> RunPlan:
    """Publish incrementally only when the snapshot provably matches the table folder and the
    column changes can be published in place; otherwise load everything again."""
    mode, reason = _folder_plan(model, table_folder, key_columns, folder, snapshot, full_refresh)
    if mode != INCREMENTAL:
        return RunPlan(mode, reason, plan_schema(model, None, current_columns, on_schema_change))
    schema = plan_schema(model, previous_columns, current_columns, on_schema_change)
    if schema.rebuild_reason:
        return RunPlan(
            REBUILD, f"on_schema_change='sync_all_columns': {schema.rebuild_reason}",
            plan_schema(model, None, current_columns, on_schema_change),
        )
    return RunPlan(INCREMENTAL, "", schema)

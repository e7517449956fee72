"""Decide how a run publishes: a first load, an incremental change file, or a rebuild."""

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from dbt.adapters.openmirror.errors import KeyColumnsError, PublishError
from dbt.adapters.openmirror.planning.schema_plan import ColumnSpec, SchemaPlan, plan_schema
from dbt.adapters.openmirror.publishing.publisher import PublishRecord, TableFolderState

INITIAL, INCREMENTAL, REBUILD = "initial", "incremental", "rebuild"
FIRST_PUBLISH, FULL_REFRESH = "first publish", "--full-refresh"

# Table properties on the snapshot table `{{ this }}`: which landing zone, folder and number it
# matches, the run that published it, and the names the mirror knows its columns by.
SNAPSHOT_TABLE_FOLDER = "openmirror.table_folder"
SNAPSHOT_SEQUENCE_NUMBER = "openmirror.sequence_number"
SNAPSHOT_RUN_ID = "openmirror.run_id"
SNAPSHOT_LANDING_ZONE = "openmirror.landing_zone"
SNAPSHOT_PUBLISHED_COLUMNS = "openmirror.published_columns"
#: On a snapshot that holds a change waiting for its tests (publish='after_tests'), until published.
SNAPSHOT_HELD = "openmirror.held"
#: Runs in a row that selected only candidate rows (`is_incremental()` true) since the model last
#: ran in full (planning/candidates.py).
SNAPSHOT_CANDIDATE_RUNS = "openmirror.candidate_runs"
#: On a snapshot kept as a base table overlaid by the rows changed since (planning/overlay.py):
#: the run that wrote the base, and which of the two overlay tables the view reads.
SNAPSHOT_BASE_RUN_ID = "openmirror.base_run_id"
SNAPSHOT_OVERLAY = "openmirror.overlay"
#: On a snapshot a full run built: the digest of what its model read (spark/model_inputs.py),
#: bound to the run, so that a record carried onto anything else never matches.
SNAPSHOT_INPUTS = "openmirror.inputs"
#: The rows of the snapshot's complete table as its run wrote it: `{{ this }}` itself, or an
#: overlaid snapshot's base. A table whose files were lost reads as empty (snapshot_rows_problem).
SNAPSHOT_ROWS = "openmirror.rows"


@dataclass(frozen=True)
class Destination:
    """Where a run publishes, and as whom: the model and its snapshot relation (`{{ this }}`),
    which together own a table folder."""

    model: str
    landing_zone: str
    table_folder: str
    owner: str


@dataclass(frozen=True)
class SnapshotRecord:
    table_folder: str
    sequence_number: int
    run_id: str | None = None
    #: Recorded since snapshots are tied to their landing zone (None on older snapshots).
    landing_zone: str | None = None
    published_columns: list[str] | None = None
    #: The snapshot holds a change not published yet (write-audit-publish).
    held: bool = False
    candidate_runs: int = 0
    #: Set on a snapshot overlaid by candidate runs' changes (planning/overlay.py).
    base_run_id: str | None = None
    overlay: str | None = None
    inputs: str | None = None
    rows: int | None = None

    def built_from(self, inputs_digest: str) -> bool:
        """Whether this snapshot is a full run's output of exactly these inputs, unchanged since
        (not overlaid, not waiting for its tests)."""
        return (
            self.inputs is not None
            and self.run_id is not None
            and not self.held
            and self.overlay is None
            and self.candidate_runs == 0
            and self.inputs == _bound_inputs(inputs_digest, self.run_id)
        )


def _bound_inputs(inputs_digest: str, run_id: str) -> str:
    return hashlib.sha256(f"{run_id}\0{inputs_digest}".encode()).hexdigest()


@dataclass(frozen=True)
class RunPlan:
    mode: str
    reason: str
    schema: SchemaPlan
    #: The key columns as the table folder declares them (the mirror's spelling).
    key_columns: list[str]

    @property
    def unexpected(self) -> bool:
        """A full load nobody asked for (not a first publish, not --full-refresh): a warning."""
        return self.mode != INCREMENTAL and self.reason not in (FIRST_PUBLISH, FULL_REFRESH)


def snapshot_properties(
    destination: Destination,
    sequence_number: int,
    run_id: str,
    published_columns: Sequence[str],
    held: bool = False,
    candidate_runs: int = 0,
    base_run_id: str | None = None,
    overlay: str | None = None,
    inputs_digest: str | None = None,
    rows: int | None = None,
) -> dict[str, str]:
    properties = {
        SNAPSHOT_LANDING_ZONE: destination.landing_zone,
        SNAPSHOT_TABLE_FOLDER: destination.table_folder,
        SNAPSHOT_SEQUENCE_NUMBER: str(int(sequence_number)),
        SNAPSHOT_RUN_ID: run_id,
        SNAPSHOT_PUBLISHED_COLUMNS: json.dumps(list(published_columns)),
        SNAPSHOT_CANDIDATE_RUNS: str(int(candidate_runs)),
    }
    if held:
        properties[SNAPSHOT_HELD] = "true"
    if base_run_id is not None and overlay is not None:
        properties[SNAPSHOT_BASE_RUN_ID] = base_run_id
        properties[SNAPSHOT_OVERLAY] = overlay
    if inputs_digest is not None:
        properties[SNAPSHOT_INPUTS] = _bound_inputs(inputs_digest, run_id)
    if rows is not None:
        properties[SNAPSHOT_ROWS] = str(int(rows))
    return properties


def snapshot_record(properties: Mapping[str, str]) -> SnapshotRecord | None:
    """The record a previous run left on the snapshot table, if any."""
    folder = properties.get(SNAPSHOT_TABLE_FOLDER)
    number = properties.get(SNAPSHOT_SEQUENCE_NUMBER)
    if folder is None or number is None or not str(number).isdigit():
        return None
    try:
        columns = json.loads(properties[SNAPSHOT_PUBLISHED_COLUMNS])
    except (KeyError, ValueError):
        columns = None
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        columns = None
    return SnapshotRecord(
        folder,
        int(number),
        properties.get(SNAPSHOT_RUN_ID),
        properties.get(SNAPSHOT_LANDING_ZONE),
        columns,
        properties.get(SNAPSHOT_HELD) == "true",
        int(runs) if (runs := properties.get(SNAPSHOT_CANDIDATE_RUNS, "0")).isdigit() else 0,
        properties.get(SNAPSHOT_BASE_RUN_ID),
        properties.get(SNAPSHOT_OVERLAY),
        properties.get(SNAPSHOT_INPUTS),
        int(rows) if (rows := properties.get(SNAPSHOT_ROWS, "")).isdigit() else None,
    )


def snapshot_rows_problem(model: str, table: str, recorded: int | None, counted: int) -> str | None:
    """Why a table of the snapshot (its complete table, or its key hashes, a row per row) cannot be
    read as the snapshot: it does not hold the rows its run recorded (`recorded`, None on snapshots
    that record none). A table whose files were lost (its folder deleted, or moved by a rename cut
    off where nothing repairs it) reads as empty, and a diff against it would publish every row
    again, or delete every other one."""
    if recorded is None or counted == recorded:
        return None
    return (
        f"Model '{model}': {table} holds {counted} rows, but the run that wrote it left {recorded}: its "
        "files were lost or changed outside dbt-openmirror (a folder deleted or moved, rows written by "
        "hand), and a diff against it would be wrong. Nothing was published. Run "
        f"`dbt run --full-refresh -s {model}` to load the table folder again."
    )


def check_key_columns(model: str, folder: TableFolderState, key_columns: Sequence[str]) -> None:
    declared = folder.key_columns
    if declared is None or list(declared) == list(key_columns):
        return
    if not folder.journaled:  # not a key the model had: nothing of ours says who declared it
        raise KeyColumnsError(
            f"Model '{model}': the table folder's _metadata.json declares keyColumns {declared}, and no "
            "journal of dbt-openmirror says who wrote it (another publisher's table, or the journal was "
            f"deleted); the model's unique_key is {list(key_columns)}. Nothing was published. Find out who "
            "writes into this folder; run with --full-refresh to take it over with the model's key."
        )
    raise KeyColumnsError(
        f"Model '{model}': unique_key is now {list(key_columns)} but the mirrored table was "
        f"declared with keyColumns {declared}. The mirror can never change a table's key in "
        "place; run with --full-refresh to rebuild the mirrored table with the new key."
    )


def _check_owner(destination: Destination, folder: TableFolderState) -> None:
    if folder.owner is not None and folder.owner != destination.owner:
        raise PublishError(
            f"Model '{destination.model}' (snapshot {destination.owner}) would publish into "
            f"{destination.landing_zone}/{destination.table_folder}, which {folder.owner} publishes. "
            "Two models (or two targets) must not publish into one table folder: each would rebuild "
            "the other's table. Give one of them another mirror_table, mirror_schema or "
            "landing_zone. If the other no longer publishes here, run this model with "
            "--full-refresh to take the table folder over. Nothing was published."
        )


def _folder_plan(
    destination: Destination,
    key_columns: Sequence[str],
    folder: TableFolderState,
    snapshot: SnapshotRecord | None,
    full_refresh: bool,
) -> tuple[str, str]:
    """(mode, reason) from the table folder and the snapshot alone."""
    model, table_folder = destination.model, destination.table_folder
    if full_refresh:
        return (REBUILD if folder.exists else INITIAL), FULL_REFRESH
    _check_owner(destination, folder)
    if folder.folder_conflict:
        raise PublishError(f"Model '{model}': {folder.folder_conflict}")
    mode, reason = _mode_from_folder(destination, folder, snapshot)
    # Files no journal accounts for may be anyone's, also where they end at the snapshot's number (a
    # folder copied from another table). Checked before the key: another publisher's key is not a
    # key change.
    unjournaled = folder.unjournaled_files()
    if unjournaled:
        would = (
            f"rebuild the table ({reason}), deleting them"
            if mode == REBUILD
            else "publish its changes after them, as if they held what the model published"
        )
        raise PublishError(
            f"Model '{model}': {destination.landing_zone}/{table_folder} {unjournaled}. The run would "
            f"{would}. Nothing was published. Find out who writes into this folder; run with "
            "--full-refresh to take it over."
        )
    check_key_columns(model, folder, key_columns)
    return mode, reason


def _mode_from_folder(
    destination: Destination, folder: TableFolderState, snapshot: SnapshotRecord | None
) -> tuple[str, str]:
    """(mode, reason) of a run not forced in full, from what the folder and the snapshot say."""
    elsewhere = _published_elsewhere(destination, snapshot)
    if not folder.exists:
        return INITIAL, ((elsewhere or "the table folder was missing") if snapshot else FIRST_PUBLISH)
    if snapshot is None:
        return REBUILD, "no snapshot table records what the table folder holds"
    if elsewhere:
        return REBUILD, elsewhere
    if snapshot.sequence_number != folder.last_sequence_number:
        return REBUILD, (
            f"the snapshot matches file {snapshot.sequence_number} but the table folder ends at "
            f"{folder.last_sequence_number}"
        )
    if snapshot.landing_zone is not None and folder.last_run_id not in (None, snapshot.run_id):
        return REBUILD, (
            f"the table folder's last publish is run {folder.last_run_id}, but the snapshot holds "
            f"what run {snapshot.run_id} published (another landing zone or target was published "
            "from this snapshot since)"
        )
    return INCREMENTAL, ""


def left_behind(
    destination: Destination, journals: Mapping[str, PublishRecord], project_relations: Collection[str]
) -> list[str]:
    """What to say of the other table folders beside a new one (`journals`: folder -> its journal,
    naming the model and the snapshot relation that published it) published from a relation of
    the same schema that no model of the project builds now (`project_relations`; versions of a
    model share its name): this model's alias changed, or its file was renamed (the journal names
    the old model), so no snapshot of it led here, and the old folder stays a mirrored table that
    nothing updates."""
    schema = destination.owner.rpartition(".")[0]
    said = []
    for folder, journal in sorted(journals.items()):
        owner = journal.owner
        if owner is None or owner == destination.owner:
            continue
        if owner not in project_relations and owner.rpartition(".")[0] == schema:
            by = (
                "this model"
                if journal.model == destination.model
                else f"model '{journal.model}', which the project no longer has (renamed to this one?),"
            )
            said.append(
                f"{folder} was published by {by} as {owner}, and is left as last published (its alias "
                "or name changed; delete the folder to drop its mirrored table)"
            )
    return said


def _published_elsewhere(destination: Destination, snapshot: SnapshotRecord | None) -> str | None:
    """Where the snapshot was published, when that is not this run's landing zone and folder (the
    model's target, landing_zone, mirror_schema or mirror_table changed)."""
    if snapshot is None:
        return None
    table_folder = destination.table_folder
    # The old folder is another mirrored table, which no run of this model changes again.
    left = "; that table folder is left as last published (delete it to drop its mirrored table)"
    if snapshot.landing_zone is not None and snapshot.landing_zone != destination.landing_zone:
        return (
            f"the snapshot was published to {snapshot.landing_zone}/{snapshot.table_folder}, not to "
            f"{destination.landing_zone}/{table_folder}{left}"
        )
    if snapshot.table_folder != table_folder:
        return f"the snapshot was published to {snapshot.table_folder}, not {table_folder}{left}"
    return None


def _columns_altered(snapshot: SnapshotRecord | None, columns: Sequence[ColumnSpec] | None) -> str | None:
    """Why the snapshot's columns (`columns`) are not the ones its record says were published,
    if they are not: columns added to or dropped from `{{ this }}` by hand. Its rows then no
    longer say what the mirror holds, and the diff would publish a column the model never had."""
    if snapshot is None or snapshot.published_columns is None or columns is None:
        return None
    published = {name.lower() for name in snapshot.published_columns}
    found = {column.name.lower() for column in columns}
    if found == published:
        return None
    added = [column.name for column in columns if column.name.lower() not in published]
    dropped = [name for name in snapshot.published_columns if name.lower() not in found]
    changes = ([f"added {added}"] if added else []) + ([f"dropped {dropped}"] if dropped else [])
    return (
        f"the snapshot's columns were changed outside dbt-openmirror's runs ({', '.join(changes)}), "
        "so it no longer records what the mirror holds"
    )


def plan_run(
    destination: Destination,
    key_columns: Sequence[str],
    folder: TableFolderState,
    snapshot: SnapshotRecord | None,
    full_refresh: bool,
    previous_columns: Sequence[ColumnSpec] | None,
    current_columns: Sequence[ColumnSpec],
    on_schema_change: str,
) -> RunPlan:
    """Publish incrementally only when the snapshot provably matches the table folder and the
    column changes can be published in place; otherwise load everything again. `key_columns`
    are spelled as the model spells them."""
    model = destination.model
    published_names = snapshot.published_columns if snapshot else None
    spelling = {name.lower(): name for name in (published_names or [c.name for c in previous_columns or []])}
    published_keys = [spelling.get(k.lower(), k) for k in key_columns]
    mode, reason = _folder_plan(destination, published_keys, folder, snapshot, full_refresh)
    if mode == INCREMENTAL and (altered := _columns_altered(snapshot, previous_columns)):
        mode, reason = REBUILD, altered
    if mode != INCREMENTAL:
        full = plan_schema(model, None, current_columns, on_schema_change)
        return RunPlan(mode, reason, full, list(key_columns))
    schema = plan_schema(model, previous_columns, current_columns, on_schema_change, published_names, key_columns)
    if schema.rebuild_reason:
        return RunPlan(
            REBUILD,
            f"on_schema_change='sync_all_columns': {schema.rebuild_reason}",
            plan_schema(model, None, current_columns, on_schema_change),
            list(key_columns),
        )
    return RunPlan(INCREMENTAL, "", schema, published_keys)

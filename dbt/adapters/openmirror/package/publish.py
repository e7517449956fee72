"""`dbt-openmirror publish`: the second half of package mode, outside dbt.

In package mode (macros/materializations/open_mirror_package.sql) dbt runs on a stock Spark or
Databricks connection and only stages each run's change files in `_scratchPad/`, recording the
run in the manifest table, whose Parquet files live in the landing zone too. This module reads
the manifest without Spark and publishes every staged run, table by table in staging order, with
the plugin's own publisher (journal, create-only renames) under the plugin's per-table lease. It
then appends a `published` row to the manifest, as a Parquet file of the manifest table's shape.

Exactly once: the journal's `lastRunId` says which run a table folder holds last. A run staged
against a different run (its `base_run_id`) is not published: the chain is broken (for example
a staged run was deleted), and only a `--full-refresh` of the model can bring the table back.
"""

import json
import re
import tempfile
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from dbt.adapters.openmirror.errors import OpenMirrorError, PublishError, StagedFilesChangedError, TargetExistsError
from dbt.adapters.openmirror.planning.run_plan import FULL_REFRESH, check_key_columns
from dbt.adapters.openmirror.publishing.lease import Fence, Heartbeat, LeaseManager
from dbt.adapters.openmirror.publishing.mirroring_service import DEFAULT_REBUILD_WAIT_SECONDS, MirroringService
from dbt.adapters.openmirror.publishing.publisher import PendingPublish, Publisher, PublishRecord, TableFolderState
from dbt.adapters.openmirror.publishing.recovery import Recovery
from dbt.adapters.openmirror.publishing.sequence import CrashedRunOutput, PublishSequence
from dbt.adapters.openmirror.rules.landing_zone import (
    MANIFEST_FOLDER,
    PUBLISH_RECORD_FILE,
    RUN_ID_PATTERN,
    RUN_ID_RULE,
    SCHEMA_FOLDER_SUFFIX,
    STAGING_ROOT,
    folder_name_problem,
    scratch_path,
)
from dbt.adapters.openmirror.rules.markers import KNOWN_MARKERS
from dbt.adapters.openmirror.run.config import DEFAULT_LEASE_TTL_SECONDS
from dbt.adapters.openmirror.storage.base import LandingZoneStorage, StoredFile
from dbt.adapters.openmirror.text import counted

STAGING, STAGED, DISCARDED, PUBLISHED = "staging", "staged", "discarded", "published"
#: A run of a model with publish='after_tests' whose tests have not passed yet: not published
#: until the invocation's on-run-end hook marks it staged (or discarded).
HELD = "held"
#: A staged run a later full load of its table made moot (that load holds the whole table): never
#: published, so that a run `dbt-openmirror publish` refused does not stop the table for good.
SUPERSEDED = "superseded"
#: The states `dbt-openmirror publish` records last, each in a file of its own per run.
_FINAL_STATES = (PUBLISHED, SUPERSEDED)
#: The states of runs whose staged files are still to be published (or settled).
_WAITING_STATES = (STAGING, HELD, STAGED)
FULL, INCREMENTAL = "full", "incremental"
# A run's states only move forward; its row with the highest rank is its state.
_STATE_RANK = {STAGING: 0, HELD: 1, STAGED: 2, DISCARDED: 2, PUBLISHED: 3, SUPERSEDED: 3}
_MARKERS = tuple(str(marker) for marker in KNOWN_MARKERS)
#: A package run id: the dbt invocation id, then 8 hex digits that name the model
#: (macros/package/audit.sql, openmirror_package_run_id).
PACKAGE_RUN_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-(?P<model>[0-9a-f]{8})")
#: How long after a staged folder was last written its model's next recorded run must come before
#: the folder is taken for abandoned: the storage's clock and Spark's may differ.
_CLOCK_SKEW = timedelta(minutes=10)

#: The manifest table's columns, as `openmirror_ensure_manifest` creates them.
MANIFEST_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("model", pa.string()),
        ("table_folder", pa.string()),
        ("key_columns", pa.string()),
        ("base_run_id", pa.string()),
        ("load", pa.string()),
        ("reason", pa.string()),
        ("staged_sequence", pa.int64()),
        ("staged_folder", pa.string()),
        ("rows", pa.int64()),
        ("marker_counts", pa.string()),
        ("state", pa.string()),
        ("recorded_at", pa.timestamp("us", tz="UTC")),
        # Added later (`openmirror_ensure_manifest` adds it to older tables): null in their rows.
        ("relation", pa.string()),
    ]
)


@dataclass(frozen=True)
class StagedRun:
    """A run as the manifest records it, in its latest state."""

    run_id: str
    model: str
    table_folder: str
    key_columns: list[str]
    base_run_id: str | None
    load: str
    reason: str
    staged_sequence: int
    staged_folder: str
    rows: int
    marker_counts: dict[str, int]
    state: str
    recorded_at: datetime
    #: The model's relation (`{{ this }}`), which tells two targets of one model apart; None in
    #: rows staged before the manifest recorded it.
    relation: str | None = None

    @property
    def owner(self) -> str:
        """Who publishes the table folder, as its journal records it: the relation, as the
        plugin records its own (the model's name for runs staged before relations were)."""
        return self.relation or self.model

    @classmethod
    def from_row(cls, row: dict) -> "StagedRun":
        """The run one manifest row records. The manifest is data anyone with access could edit,
        so every field is checked: ValueError names the first that is not what package mode
        writes. The staged folder must be the run's own (`scratch_path`), since it is renamed
        from and deleted."""
        run_id = _run_id(row, "run_id")
        staged_folder = _field(row, "staged_folder", str, "a folder")
        if staged_folder != scratch_path(run_id):
            raise ValueError(
                f"staged_folder {staged_folder!r} is not the staged folder of run {run_id} ({scratch_path(run_id)})"
            )
        state = _field(row, "state", str, "a state")
        if state not in _STATE_RANK:
            raise ValueError(f"state {state!r} is not one of {', '.join(_STATE_RANK)}")
        load = _field(row, "load", str, "a load")
        if load not in (FULL, INCREMENTAL):
            raise ValueError(f"load {load!r} is not '{FULL}' or '{INCREMENTAL}'")
        return cls(
            run_id=run_id,
            model=_field(row, "model", str, "a model name"),
            table_folder=_table_folder(row),
            key_columns=_key_columns(row),
            base_run_id=None if row.get("base_run_id") is None else _run_id(row, "base_run_id"),
            load=load,
            reason=_field(row, "reason", (str, type(None)), "a text") or "",
            staged_sequence=_whole(row, "staged_sequence", 1),
            staged_folder=staged_folder,
            rows=_whole(row, "rows", 0),
            marker_counts=_marker_counts(row),
            state=state,
            recorded_at=_field(row, "recorded_at", datetime, "a timestamp"),
            relation=_field(row, "relation", (str, type(None)), "a relation") or None,
        )

    def to_row(self, state: str) -> dict:
        row = {name: getattr(self, name) for name in MANIFEST_SCHEMA.names}
        row.update(
            key_columns=json.dumps(self.key_columns),
            marker_counts=json.dumps(self.marker_counts),
            state=state,
            recorded_at=datetime.now(timezone.utc),
        )
        return row

    def describe(self) -> str:
        load = "full load" if self.load == FULL else "changes"
        return f"run {self.run_id} of '{self.model}' ({load}, {counted(self.rows, 'row')})"


# What identifies a run: its rows may differ only in state and time.
_RUN_FIELDS = [f.name for f in fields(StagedRun) if f.name not in ("state", "recorded_at")]


@dataclass(frozen=True)
class PublishedRun:
    run: StagedRun
    names: list[str]

    def describe(self) -> str:
        files = (
            f"{self.names[0]} .. {self.names[-1]}"
            if len(self.names) > 1
            else (self.names[0] if self.names else "no file (no changes)")
        )
        return f"{self.run.table_folder}: published {self.run.describe()} as {files}"


def _manifest_files(storage: LandingZoneStorage) -> list[str]:
    # Spark's _SUCCESS and .crc files, and our own files while they are uploaded, start with _ or .
    return [
        f"{MANIFEST_FOLDER}/{name}"
        for name in sorted(storage.list_names(MANIFEST_FOLDER))
        if not name.startswith(("_", ".")) and name.endswith(".parquet")
    ]


@dataclass(frozen=True)
class Manifest:
    #: Every run in its latest state, in staging order per table folder.
    runs: list[StagedRun]
    #: Files and rows that were skipped, and why.
    problems: list[str]

    @property
    def waiting(self) -> list[StagedRun]:
        """Runs waiting for `dbt-openmirror publish`, runs still being staged, and runs held for
        their tests."""
        return [r for r in self.runs if r.state in _WAITING_STATES]


def load_manifest(storage: LandingZoneStorage) -> Manifest:
    """The manifest's runs; rows that are not what package mode writes, and runs whose rows
    disagree, are skipped and reported instead of stopping every table."""
    rows_of: dict[str, list[StagedRun]] = {}
    problems: list[str] = []
    for path in _manifest_files(storage):
        with storage.open_read(path) as handle:
            try:
                # One thread: pyarrow 26 reading a Python file with its thread pool aborted the
                # interpreter at exit now and then (exit 134 after a publish that had succeeded).
                rows = pq.read_table(handle, use_threads=False).to_pylist()
            except (pa.ArrowException, ValueError) as exc:
                problems.append(f"{path}: not readable as a manifest file ({exc}); skipped")
                continue
        for number, row in enumerate(rows, start=1):
            try:
                run = StagedRun.from_row(row)
            except ValueError as exc:
                problems.append(f"{path} row {number}: {exc}; the row is skipped")
                continue
            rows_of.setdefault(run.run_id, []).append(run)
    latest = []
    for run_id, runs in rows_of.items():
        problem = _disagreement(runs)
        if problem:
            problems.append(f"the manifest rows of run {run_id} {problem}; the run is skipped")
        else:
            latest.append(max(runs, key=lambda r: _STATE_RANK[r.state]))
    return Manifest(sorted(latest, key=lambda r: (r.table_folder, r.staged_sequence)), problems)


def _disagreement(runs: list[StagedRun]) -> str | None:
    """What the rows of one run contradict each other on (they differ only in state and time)."""
    differing = [name for name in _RUN_FIELDS if any(getattr(r, name) != getattr(runs[0], name) for r in runs)]
    if differing:
        return f"disagree on {', '.join(differing)}"
    if {STAGED, DISCARDED} <= {r.state for r in runs}:
        return f"record it as both {STAGED} and {DISCARDED}"
    return None


def read_manifest(storage: LandingZoneStorage) -> list[StagedRun]:
    """Every run the manifest knows, in its latest state, in staging order per table folder."""
    return load_manifest(storage).runs


def _final_name(run_id: str, state: str) -> str:
    return f"{state}-{run_id}.parquet"


def record_final(storage: LandingZoneStorage, run: StagedRun, state: str) -> None:
    """Append the run's last row (`published` or `superseded`) to the manifest table: uploaded
    under a hidden name of this writer's, then renamed create-only, so Spark never reads a
    partial file and a retry (or another publisher) adds nothing."""
    name = _final_name(run.run_id, state)
    hidden = f"{MANIFEST_FOLDER}/_{name}.{uuid.uuid4().hex[:12]}"
    with tempfile.TemporaryDirectory(prefix="dbt-openmirror-") as local:
        local_file = Path(local) / name
        pq.write_table(pa.Table.from_pylist([run.to_row(state)], schema=MANIFEST_SCHEMA), local_file)
        storage.upload_file(local_file, hidden)
    try:
        storage.rename_create_only(hidden, f"{MANIFEST_FOLDER}/{name}")
    except TargetExistsError:
        storage.delete_file(hidden)


def sweep_uploads(storage: LandingZoneStorage, runs: Sequence[StagedRun]) -> None:
    """Delete what attempts of `record_final` that stopped between their upload and their rename
    left of these runs' final rows, once the row is in (one listing of the manifest folder)."""
    names = storage.list_names(MANIFEST_FOLDER)
    finals = {_final_name(r.run_id, state) for r in runs for state in _FINAL_STATES} & set(names)
    for name in names:
        if name.startswith("_") and name[1:].rpartition(".")[0] in finals:
            storage.delete_file(f"{MANIFEST_FOLDER}/{name}")


def abandoned_staging(
    storage: LandingZoneStorage, runs: Sequence[StagedRun], entries: Iterable[StoredFile]
) -> list[str]:
    """Staged folders of package runs stopped while Spark wrote their files, before the manifest
    recorded them (a killed or cancelled job): no manifest row names them, and a later run of the
    same model was recorded well after they were last written, so nothing writes them any more.
    `entries`: the listing of the staging root."""
    named = {run.staged_folder for run in runs}
    last_recorded: dict[str, datetime] = {}
    for run in runs:
        match = PACKAGE_RUN_ID.fullmatch(run.run_id)
        if match:
            model = match["model"]
            last_recorded[model] = max(run.recorded_at, last_recorded.get(model, run.recorded_at))
    abandoned = []
    for entry in entries:
        folder = f"{STAGING_ROOT}/{entry.name}"
        match = PACKAGE_RUN_ID.fullmatch(entry.name)
        recorded = last_recorded.get(match["model"]) if match else None
        if not entry.is_folder or folder in named or recorded is None:
            continue
        written = [file.last_modified for file in storage.list_files(folder)]
        if written and datetime.fromtimestamp(max(written), timezone.utc) + _CLOCK_SKEW < recorded:
            abandoned.append(folder)
    return abandoned


def _message(exc: Exception) -> str:
    return getattr(exc, "msg", None) or str(exc)


def _field(row: dict[str, Any], name: str, kind: type | tuple[type, ...], what: str) -> Any:
    value = row.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"{name} {value!r} is not {what}")
    return value


def _run_id(row: dict, name: str) -> str:
    value = _field(row, name, str, "a run id")
    if not RUN_ID_PATTERN.fullmatch(value):
        raise ValueError(f"{name} {value!r} is not a run id ({RUN_ID_RULE})")
    return value


def _whole(row: dict, name: str, least: int) -> int:
    value = _field(row, name, int, f"a whole number of at least {least}")
    if value < least:
        raise ValueError(f"{name} {value!r} is not a whole number of at least {least}")
    return value


def _json(row: dict[str, Any], name: str) -> Any:
    text = _field(row, name, str, "JSON text")
    try:
        return json.loads(text)
    except ValueError:
        raise ValueError(f"{name} {text!r} is not valid JSON") from None


def _key_columns(row: dict) -> list[str]:
    keys = _json(row, "key_columns")
    if not isinstance(keys, list) or not keys or not all(isinstance(k, str) and k for k in keys):
        raise ValueError(f"key_columns {row['key_columns']!r} is not a list of column names")
    return keys


def _marker_counts(row: dict) -> dict[str, int]:
    counts = _json(row, "marker_counts")
    if not isinstance(counts, dict) or not all(
        marker in _MARKERS and isinstance(n, int) and not isinstance(n, bool) and n >= 0 for marker, n in counts.items()
    ):
        raise ValueError(
            f"marker_counts {row['marker_counts']!r} is not a count of rows per marker ({', '.join(_MARKERS)})"
        )
    return counts


def _table_folder(row: dict) -> str:
    """A table folder (`<table>` or `<schema>.schema/<table>`) with valid folder names."""
    folder = _field(row, "table_folder", str, "a table folder")
    parts = folder.split("/")
    if len(parts) == 2 and parts[0].endswith(SCHEMA_FOLDER_SUFFIX):
        parts[0] = parts[0][: -len(SCHEMA_FOLDER_SUFFIX)]
    elif len(parts) != 1:
        parts = []
    problems = [f"'{part}': {folder_name_problem(part)}" for part in parts if folder_name_problem(part)]
    if not parts or problems:
        raise ValueError(
            f"table_folder {folder!r} is not a landing-zone table folder "
            f"({'; '.join(problems) or 'expected <schema>.schema/<table>'})"
        )
    return folder


class PackagePublisher:
    def __init__(
        self,
        storage: LandingZoneStorage,
        lease_ttl_seconds: float = DEFAULT_LEASE_TTL_SECONDS,
        lease_wait_seconds: float = 0,
        rebuild_wait_seconds: float = DEFAULT_REBUILD_WAIT_SECONDS,
        log: Callable[[str], None] = print,
    ) -> None:
        self.storage = storage
        self.publisher = Publisher(storage, MirroringService(storage, log))
        self.leases = LeaseManager(storage)
        self.lease_ttl_seconds = lease_ttl_seconds
        self.lease_wait_seconds = lease_wait_seconds
        self.rebuild_wait_seconds = rebuild_wait_seconds
        self.log = log

    def publish(self) -> list[PublishedRun]:
        """Publish every staged run. A table whose runs cannot be published (also for a storage
        error) stops only itself, a manifest row that is not valid only itself; the first
        problem is raised once everything else is done."""
        manifest = load_manifest(self.storage)
        problems = [f"manifest: {problem}" for problem in manifest.problems]
        for problem in problems:
            self.log(problem)
        runs = manifest.runs
        published: list[PublishedRun] = []
        for table_folder in dict.fromkeys(r.table_folder for r in runs if r.state == STAGED):
            waiting = [r for r in runs if r.table_folder == table_folder and r.state == STAGED]
            try:
                published += self._publish_table(table_folder, waiting)
            except (OpenMirrorError, OSError) as exc:
                problems.append(f"{table_folder}: {_message(exc)}")
                self.log(problems[-1])
        # One listing finds what is left of every run: the manifest keeps every run ever staged.
        left = {f"{STAGING_ROOT}/{entry.name}": entry for entry in self.storage.list_files(STAGING_ROOT)}
        for run in runs:
            try:
                if run.state in (DISCARDED, SUPERSEDED) and run.staged_folder in left:
                    self.publisher.discard(run.staged_folder)
            except (OpenMirrorError, OSError) as exc:
                problems.append(f"{run.describe()}: its staged files could not be removed: {_message(exc)}")
                self.log(problems[-1])
        for folder in abandoned_staging(self.storage, runs, left.values()):
            try:
                self.publisher.discard(folder)
                self.log(f"{folder}: deleted the files of a run stopped before the manifest recorded it")
            except (OpenMirrorError, OSError) as exc:
                problems.append(
                    f"{folder}: the files of a run stopped before the manifest recorded it "
                    f"could not be removed: {_message(exc)}"
                )
                self.log(problems[-1])
        if problems:
            more = f" (and {len(problems) - 1} more problems, reported above)" if len(problems) > 1 else ""
            raise PublishError(problems[0] + more)
        return published

    def _publish_table(self, table_folder: str, runs: list[StagedRun]) -> list[PublishedRun]:
        owners = sorted({r.owner for r in runs})
        if len(owners) > 1:
            raise PublishError(
                f"models {', '.join(repr(m) for m in owners)} all staged runs for {table_folder}: "
                "two models (or two targets) must not publish into one table folder, each would "
                "rebuild the other's table. Nothing of it was published; give one of them another "
                "mirror_table, mirror_schema or landing_zone."
            )
        holder = f"publish-{uuid.uuid4().hex[:12]}"
        lease = self.leases.acquire(
            table_folder, holder, runs[0].model, self.lease_ttl_seconds, self.lease_wait_seconds, "--lease-wait-seconds"
        )
        heartbeat = Heartbeat(
            self.leases,
            lease,
            self.lease_ttl_seconds,
            lambda exc: self.log(f"{table_folder}: could not renew the lease: {exc}"),
        )
        fence = self.leases.fence(lease)
        try:
            # Another publisher may have published some of them since the manifest was read.
            done = set(self.storage.list_names(MANIFEST_FOLDER))
            waiting = [r for r in runs if not any(_final_name(r.run_id, state) in done for state in _FINAL_STATES)]
            self._finish_interrupted(table_folder, waiting, fence)
            published = []
            # A full load holds the whole table: the runs staged before the last one are moot.
            last_full = max((i for i, r in enumerate(waiting) if r.load == FULL), default=0)
            for index, run in enumerate(waiting):
                if index < last_full and not self._published_last(run):
                    self._supersede(run, waiting[last_full], fence)
                    continue
                published.append(PublishedRun(run, self._publish_run(run, fence)))
                record_final(self.storage, run, PUBLISHED)
                self.log(published[-1].describe())
            sweep_uploads(self.storage, runs)
            return published
        except (OpenMirrorError, OSError):
            fence.check()  # a publisher that lost its lease says so, whatever failed
            raise
        finally:
            heartbeat.stop()
            self.leases.release(lease)

    def _finish_interrupted(self, table_folder: str, runs: list[StagedRun], fence: Fence) -> None:
        """A publish journaled but not committed (the command stopped): the staged run is
        durable, so finish it when its files are all still there; otherwise forget it."""
        staged = {r.run_id for r in runs}

        def crashed_output(pending: PendingPublish) -> CrashedRunOutput:
            # The manifest row is the run's output: still staged, it is as good as a snapshot.
            return CrashedRunOutput(snapshot_run_id=pending.run_id if pending.run_id in staged else None)

        def report(recovery: Recovery) -> None:
            self.log(f"{table_folder}: recovering: {recovery.message}")

        PublishSequence(self.publisher, fence).recover(table_folder, crashed_output, report)

    def _published_last(self, run: StagedRun) -> bool:
        """The table folder's journal names the run: its publish went through (or was just
        finished by recovery) and only its manifest row is missing."""
        record = self.publisher.read_record(run.table_folder)
        return record is not None and record.run_id == run.run_id

    def _supersede(self, run: StagedRun, full_load: StagedRun, fence: Fence) -> None:
        """`run` is never published: `full_load`, staged after it, holds the whole table."""
        fence.check()
        record_final(self.storage, run, SUPERSEDED)
        self.publisher.discard(run.staged_folder)
        self.log(f"{run.describe()}: superseded by run {full_load.run_id}, a full load staged after it; not published")

    def _check_folder_is_ours(self, run: StagedRun, state: TableFolderState) -> None:
        """Only a `--full-refresh` takes over a table folder another model publishes, or one
        holding files no journal of ours accounts for (a full load would delete them)."""
        location = f"{self.storage.location}/{run.table_folder}"
        take_over = f"run `dbt run --full-refresh -s {run.model}` to take the folder over."
        # A journal naming the bare model was written before runs recorded their relation.
        if state.owner is not None and state.owner not in (run.owner, run.model):
            raise PublishError(
                f"Model '{run.model}' staged run {run.run_id} for {location}, which {state.owner} "
                "publishes: two models (or two targets) must not publish into one table folder. Nothing "
                "more of this table was published; give one of them another mirror_table, mirror_schema "
                f"or landing_zone, or {take_over}"
            )
        unjournaled = state.unjournaled_files()
        if unjournaled:
            raise PublishError(
                f"Model '{run.model}' staged run {run.run_id} ({run.reason or run.load}) for {location}, "
                f"which {unjournaled}. Publishing the run would delete them. Nothing more of this table "
                f"was published; find out who writes into this folder, or {take_over}"
            )

    def _publish_run(self, run: StagedRun, fence: Fence) -> list[str]:
        """The run's files into the next numbers; the names it has when an earlier attempt, or
        the recovery of a stopped one, published it."""
        fence.check()  # what this publisher read of the manifest may be stale otherwise
        folder = run.table_folder
        record: PublishRecord | None = self.publisher.read_record(folder)
        if record is not None and record.run_id == run.run_id:
            self.publisher.discard(run.staged_folder)  # the commit may have stopped before this
            return record.files
        state = self.publisher.table_state(folder)
        if not state.exists:
            self.publisher.check_new_folder_name(folder, run.model)
        if run.load != FULL:
            last = record.run_id if record is not None else None
            if not state.exists or run.base_run_id != last:
                if not state.exists:
                    found = "does not exist"
                elif record is None:
                    found = f"has no journal ({PUBLISH_RECORD_FILE}) saying which run it holds"
                else:
                    found = f"holds run {last} last"
                raise PublishError(
                    f"{run.describe()} holds the changes since run {run.base_run_id}, but "
                    f"{self.storage.location}/{folder} {found}. Nothing more of this table was published. "
                    f"Run `dbt run --full-refresh -s {run.model}` to stage the whole table again."
                )
            if state.folder_conflict:
                raise PublishError(f"Model '{run.model}': {state.folder_conflict}")
            check_key_columns(run.model, state, run.key_columns)
        if run.load != FULL or (state.exists and run.reason != FULL_REFRESH):
            self._check_folder_is_ours(run, state)
        try:
            pending = self.publisher.prepare(
                folder,
                run.key_columns,
                run.staged_folder,
                state,
                {int(marker): rows for marker, rows in run.marker_counts.items()},
                run.model,
                run.run_id,
                full_load=run.load == FULL,
                rebuild=run.load == FULL and state.exists,
                owner=run.owner,
            )
        except StagedFilesChangedError as exc:
            # The runs staged after it hold only their own changes: the table needs all of it again.
            raise StagedFilesChangedError(
                f"{exc.msg}. Nothing more of this table was published. Run `dbt run --full-refresh -s "
                f"{run.model}` to stage the whole table again."
            ) from exc
        # The plugin's sequence, also without files: the record then names this run, so the
        # chain goes on from it. The staged run is durable: a refused publish keeps its files.
        return PublishSequence(self.publisher, fence).publish(pending, self.rebuild_wait_seconds).names


def supersede_staged_runs(storage: LandingZoneStorage, table_folder: str, run_id: str) -> str | None:
    """The plugin's run `run_id` has just published `table_folder` (under its lease): that holds
    the whole table as the model outputs it now, so the runs package mode staged or holds for the
    folder are moot. Published later, a full load among them would put an older state over it,
    and a change would stop the table (its base is no longer the folder's last run). They are
    recorded superseded and their files deleted. What to warn of, None when there were none."""
    try:
        moot = [r for r in read_manifest(storage) if r.table_folder == table_folder and r.state in (STAGED, HELD)]
        for run in moot:
            record_final(storage, run, SUPERSEDED)
            storage.delete_folder(run.staged_folder)
    except (OpenMirrorError, OSError) as exc:
        return (
            f"the runs package mode staged for {table_folder} could not be marked superseded by run "
            f"{run_id} ({_message(exc)}): `dbt-openmirror publish` may publish them after it. Run "
            "`dbt-openmirror status` to see them."
        )
    if not moot:
        return None
    return (
        f"package mode's runs {', '.join(r.run_id for r in moot)} staged for {table_folder} were not published "
        f"yet; run {run_id} published the whole table since, so they are recorded superseded and "
        "`dbt-openmirror publish` leaves them out"
    )


def staged_runs(storage: LandingZoneStorage) -> list[StagedRun]:
    """The manifest's runs that are not settled yet (`Manifest.waiting`)."""
    return load_manifest(storage).waiting

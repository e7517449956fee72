"""Moves staged change files into a table folder, exactly once.

A publish is journaled in the table folder's record `_dbt_openmirror.json`: `begin` writes the
run's plan (which staged file becomes which number) as `pending`, `complete` writes
`_metadata.json` if missing and does the create-only renames, `commit` clears `pending` and
advances `lastSequenceNumber`. Every step can be repeated after a crash, so a later run finishes
(or discards) what an interrupted one started; see `recovery.py`. Only file names, footers and
small JSON files pass through this process.

Every write shows the writer's lease (`lease.Fence`): the lease is checked before each rename and
journal write, and the journal is replaced only as the writer read it (a conditional write) and
only by a lease generation at least as new as the one that wrote it last. So a run that stalled
past its lease and woke up after another run took over can neither roll the journal back nor
overwrite what the other run wrote; it fails saying it lost its lease.
"""

import json
import logging
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from dbt.adapters.openmirror.errors import (
    OpenMirrorError,
    PublishError,
    StagedFilesChangedError,
    TargetExistsError,
    WriteConflictError,
)
from dbt.adapters.openmirror.publishing.mirroring_service import DEFAULT_REBUILD_WAIT_SECONDS, MirroringService
from dbt.adapters.openmirror.rules.landing_zone import (
    METADATA_FILE,
    PARTNER_EVENTS_FILE,
    PROCESSED_FOLDERS,
    PUBLISH_RECORD_FILE,
    SCHEMA_FOLDER_SUFFIX,
    data_file_name,
    first_gap,
    highest_sequence_number,
    metadata_json,
    parse_sequence_number,
    partner_events_json,
    scratch_path,
    spelled_alike,
    spelled_alike_problem,
    table_metadata,
)
from dbt.adapters.openmirror.rules.markers import ROW_MARKER, count_markers, describe_markers
from dbt.adapters.openmirror.rules.metadata_files import TableMetadata, load_json
from dbt.adapters.openmirror.spark.parquet_writes import written_problems
from dbt.adapters.openmirror.storage.base import LandingZoneStorage

if TYPE_CHECKING:
    from dbt.adapters.openmirror.publishing.lease import Fence


@dataclass(frozen=True)
class PendingPublish:
    """One run's publish, from the moment it is journaled until it is committed."""

    run_id: str
    model: str
    table_folder: str
    key_columns: list[str]
    base_sequence_number: int
    rebuild: bool
    staged_folder: str
    #: (staged path, final file name), in publishing order.
    files: list[tuple[str, str]]
    rows: int
    #: Who publishes: the model's snapshot relation (None when not known, as in package mode).
    owner: str | None = None
    #: The columns its files carry (the row marker aside); None without files.
    columns: list[str] | None = None
    #: Each file's size, by final name, as checked when staged (none in a journal of an earlier version).
    file_sizes: dict[str, int] = field(default_factory=dict)

    @property
    def last_sequence_number(self) -> int:
        return self.base_sequence_number + len(self.files)

    @property
    def full_load(self) -> bool:
        """A full load starts a table folder's numbering (a first load or a rebuild)."""
        return self.base_sequence_number == 0

    @property
    def names(self) -> list[str]:
        return [name for _, name in self.files]

    def to_dict(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "baseSequenceNumber": self.base_sequence_number,
            "rebuild": self.rebuild,
            "stagedFolder": self.staged_folder,
            "rows": self.rows,
            "files": [{"staged": staged, "name": name} for staged, name in self.files],
            "owner": self.owner,
            "columns": self.columns,
            "fileSizes": self.file_sizes,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], record: "PublishRecord", table_folder: str) -> "PendingPublish":
        pending = cls(
            run_id=str(data["runId"]),
            model=record.model,
            table_folder=table_folder,
            key_columns=list(record.key_columns),
            base_sequence_number=int(data["baseSequenceNumber"]),
            rebuild=bool(data["rebuild"]),
            staged_folder=str(data["stagedFolder"]),
            files=[(str(f["staged"]), str(f["name"])) for f in data["files"]],
            rows=int(data["rows"]),
            owner=data.get("owner"),
            columns=_names(data.get("columns")),
            file_sizes=_sizes(data.get("fileSizes")),
        )
        pending._check_paths()
        return pending

    def _check_paths(self) -> None:
        """The journal is data: its paths are deleted and renamed only when they are this run's
        staged files and data file names (ValueError otherwise)."""
        if self.staged_folder != scratch_path(self.run_id):
            raise ValueError(f"stagedFolder {self.staged_folder!r} is not the staged folder of run {self.run_id}")
        for staged, name in self.files:
            folder, _, staged_name = staged.rpartition("/")
            if folder != self.staged_folder or not staged_name or staged_name in (".", ".."):
                raise ValueError(f"staged file {staged!r} is not in {self.staged_folder}")
            if parse_sequence_number(name) is None:
                raise ValueError(f"{name!r} is not a data file name")


@dataclass(frozen=True)
class PublishRecord:
    """`_dbt_openmirror.json`: the last committed publish, and the one in flight if any."""

    last_sequence_number: int
    key_columns: list[str]
    model: str
    run_id: str | None = None
    files: list[str] = field(default_factory=list)
    published_at: str | None = None
    pending: dict[str, Any] | None = None
    #: The lease generation of the run that wrote the journal: older ones may not write it.
    lease_generation: int = 0
    #: A full load was published and the mirroring service has not been seen to list the table
    #: since: incremental files wait for it (the restart protocol, mirroring_service.py).
    wait_for_listing: bool = False
    #: Who publishes the folder: the model's snapshot relation (two owners would rebuild each
    #: other's table; run_plan.py refuses that).
    owner: str | None = None
    #: The columns of the last file published (the row marker aside): every file after a column
    #: was added carries it, so these are the columns the mirrored table has. None: not known
    #: (no file yet, or a journal of an earlier version).
    columns: list[str] | None = None
    #: The size of each of `files` as published (those the service had not moved yet): one still
    #: waiting with another size was replaced or truncated since.
    file_sizes: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> str:
        document: dict[str, Any] = {
            "lastSequenceNumber": self.last_sequence_number,
            "lastRunId": self.run_id,
            "lastFiles": self.files,
            "keyColumns": self.key_columns,
            "model": self.model,
            "owner": self.owner,
            "publishedAt": self.published_at,
            "leaseGeneration": self.lease_generation,
            "waitForListing": self.wait_for_listing,
            "publishedColumns": self.columns,
            "lastFileSizes": self.file_sizes,
        }
        if self.pending is not None:
            document["pending"] = self.pending
        return json.dumps(document, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> "PublishRecord":
        data = load_json(text)
        return cls(
            last_sequence_number=int(data["lastSequenceNumber"]),
            key_columns=list(data.get("keyColumns") or []),
            model=str(data.get("model", "")),
            run_id=data.get("lastRunId"),
            files=list(data.get("lastFiles") or []),
            published_at=data.get("publishedAt"),
            pending=data.get("pending"),
            lease_generation=int(data.get("leaseGeneration", 0)),
            wait_for_listing=bool(data.get("waitForListing", False)),
            owner=data.get("owner"),
            columns=_names(data.get("publishedColumns")),
            file_sizes=_sizes(data.get("lastFileSizes")),
        )


def _names(value: Any) -> list[str] | None:
    """A journal's list of column names; anything else is not known."""
    if isinstance(value, list) and all(isinstance(name, str) for name in value):
        return list(value)
    return None


def _sizes(value: Any) -> dict[str, int]:
    """A journal's file sizes by name; anything else is not known."""
    if isinstance(value, dict) and all(isinstance(n, str) and type(v) is int for n, v in value.items()):
        return dict(value)
    return {}


@dataclass(frozen=True)
class TableFolderState:
    """What a table folder holds, as far as numbering, keys and unfinished publishes go."""

    exists: bool
    key_columns: list[str] | None
    last_sequence_number: int
    pending: PendingPublish | None = None
    #: Why the next file would not be applied after ours (files we never published, one of ours
    #: missing, a `_metadata.json` declaring another format), if so: a run then publishes nothing.
    folder_conflict: str | None = None
    #: The run the record names as the last committed publish.
    last_run_id: str | None = None
    #: Who publishes the folder (the snapshot relation of its model), as the record says.
    owner: str | None = None
    #: Our record (PUBLISH_RECORD_FILE) is in the folder: without it, nothing says whose its files are.
    journaled: bool = True
    #: The columns the mirrored table has from our files, as the record says (None: not known).
    published_columns: list[str] | None = None
    #: Without our journal: what the folder holds besides `_`-names (files of any naming or format,
    #: and what the service processed), as paths in the folder.
    unaccounted: tuple[str, ...] = ()

    def keeps_empty_file(self, columns: Iterable[str], full_load: bool) -> bool:
        """Whether a change of no rows is still published as one empty file: a full load creates
        the table; otherwise only to add `columns` no file of ours published yet (compared as
        the mirror compares names, regardless of case; not known: no)."""
        if full_load:
            return True
        if self.published_columns is None:
            return False
        published = {name.lower() for name in self.published_columns}
        return any(name.lower() not in published for name in columns)

    def unjournaled_files(self) -> str | None:
        """What the folder holds that no journal of ours accounts for, as a message's predicate
        (None: nothing, or our journal is there). Only `--full-refresh` may delete such files."""
        if self.journaled or not (self.last_sequence_number or self.unaccounted):
            return None
        if self.last_sequence_number:
            held = f"files up to {data_file_name(self.last_sequence_number)}"
        else:
            more = f" and {len(self.unaccounted) - 3} more" if len(self.unaccounted) > 3 else ""
            held = f"{', '.join(self.unaccounted[:3])}{more}"
        return (
            f"holds {held}, and no journal of dbt-openmirror ({PUBLISH_RECORD_FILE}) says whose they "
            "are: another publisher's table, or the journal was deleted"
        )


@dataclass(frozen=True)
class StagedFile:
    path: str
    rows: int
    #: Rows per marker of a change file (a full load's files carry no marker column).
    markers: dict[int, int]
    #: Its columns, the row marker aside.
    columns: tuple[str, ...] = ()
    size: int = 0


@dataclass(frozen=True)
class PublishedFiles:
    names: list[str]
    rows: int
    last_sequence_number: int


def recorded_lease_generation(storage: LandingZoneStorage, table_folder: str) -> int:
    """The lease generation the table's journal was last written under (0 without one): a new
    lease is numbered above it even when the lease files were removed."""
    try:
        record = Publisher(storage).read_record(table_folder)
    except PublishError:
        return 0  # a damaged journal stops the publish later, with its own message
    return record.lease_generation if record is not None else 0


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Publisher:
    def __init__(self, storage: LandingZoneStorage, service: MirroringService | None = None) -> None:
        self.storage = storage
        self.service = service or MirroringService(storage, logging.getLogger("dbt-openmirror").info)

    # -- reading the table folder ---------------------------------------------------------------

    def read_record(self, table_folder: str) -> PublishRecord | None:
        text = self.storage.read_text(f"{table_folder}/{PUBLISH_RECORD_FILE}")
        return None if text is None else self._parse_record(text, table_folder)

    def _parse_record(self, text: str, table_folder: str) -> PublishRecord:
        try:
            record = PublishRecord.from_json(text)
            if record.pending:
                PendingPublish.from_dict(record.pending, record, table_folder)
        except (ValueError, KeyError, TypeError) as exc:
            raise PublishError(
                f"{self.storage.location}/{table_folder}/{PUBLISH_RECORD_FILE} is damaged ({exc}); "
                "run with --full-refresh to rebuild the table"
            ) from exc
        return record

    def check_new_folder_name(self, table_folder: str, model: str) -> None:
        """Before the first file of a table folder that does not exist: no other folder may feed
        the table the mirror would make of it (a full load of one would wait for the other for
        good, and incremental files would follow the other's listing)."""
        other = spelled_alike(self.storage, table_folder)
        if other is not None:
            raise PublishError(
                f"Model '{model}': {self.storage.location}/{spelled_alike_problem(table_folder, other)}, and a "
                "full load of one waits until the service no longer lists the other. "
                f"Nothing was published. If {other} is an old spelling of this table, delete that folder "
                "(its mirrored table goes) and run again; otherwise give the model another mirror_table "
                "or mirror_schema."
            )

    def records_beside(self, table_folder: str) -> dict[str, PublishRecord]:
        """The journals of the other table folders in `table_folder`'s schema folder (or the
        root), by folder; unreadable ones are left out."""
        parent, _, _ = table_folder.rpartition("/")
        records = {}
        for name in self.storage.list_names(parent):
            folder = f"{parent}/{name}" if parent else name
            if name.startswith("_") or name.endswith(SCHEMA_FOLDER_SUFFIX) or folder == table_folder:
                continue
            try:
                record = self.read_record(folder)
            except (OpenMirrorError, OSError, ValueError):  # damaged, not text, or not readable to us
                continue
            if record is not None:
                records[folder] = record
        return records

    def published_names(self, table_folder: str) -> set[str]:
        """Names in the table folder and in the folders the service moves processed files to."""
        return self._listed_names(table_folder)[1]

    def _listed_names(self, table_folder: str) -> tuple[dict[str, int], set[str]]:
        """(the size of each entry in the table folder by name, those names with the names in the
        processed folders). The folder is listed first: a file the service moves meanwhile is
        then seen in one or the other."""
        waiting = {entry.name: entry.size for entry in self.storage.list_files(table_folder)}
        names = set(waiting)
        for folder in PROCESSED_FOLDERS:
            names.update(self.storage.list_names(f"{table_folder}/{folder}"))
        return waiting, names

    def _unaccounted(self, table_folder: str, waiting: Collection[str]) -> tuple[str, ...]:
        """What a folder without our journal holds that is data: any name the mirror reads (not
        only `<20 digits>.parquet`: another publisher may name files by GUID, or write CSV), and
        anything in, or just, the folders of files the service processed (a live table whose
        files were purged)."""
        found = [name for name in waiting if not name.startswith(("_", "."))]
        for processed in PROCESSED_FOLDERS:
            if processed in waiting:
                inside = self.storage.list_names(f"{table_folder}/{processed}")
                found += [f"{processed}/{name}" for name in inside] or [f"{processed}/"]
        return tuple(sorted(found))

    def table_state(self, table_folder: str) -> TableFolderState:
        waiting, names = self._listed_names(table_folder)
        if not waiting:
            return TableFolderState(exists=False, key_columns=None, last_sequence_number=0)
        text = self.storage.read_text(f"{table_folder}/{METADATA_FILE}")
        where = f"{self.storage.location}/{table_folder}/{METADATA_FILE}"
        metadata = table_metadata(text, where) if text is not None else None
        keys = list(metadata.key_columns) if metadata is not None else None
        found = highest_sequence_number(sorted(names))
        record = self.read_record(table_folder)
        if record is None:
            return TableFolderState(
                True, keys, found, journaled=False, unaccounted=self._unaccounted(table_folder, waiting)
            )
        if keys is None:  # `_metadata.json` deleted: the key we declared still holds (complete() writes it back)
            keys = list(record.key_columns)
        pending = PendingPublish.from_dict(record.pending, record, table_folder) if record.pending else None
        conflict = None
        if pending is None:  # an unfinished publish is recovery's to settle first
            conflict = self._folder_conflict(table_folder, metadata, record, waiting, names, found)
        # The service purges processed files after a while; our record still knows the number.
        return TableFolderState(
            True,
            keys,
            max(found, record.last_sequence_number),
            pending,
            conflict,
            record.run_id,
            record.owner,
            published_columns=record.columns,
        )

    def _folder_conflict(
        self,
        table_folder: str,
        metadata: TableMetadata | None,
        record: PublishRecord,
        waiting: Mapping[str, int],
        names: set[str],
        found: int,
    ) -> str | None:
        """Why the next file published into the folder would not be applied as the last one
        after what `record` says we published, under the key it declared (None: it would be);
        `waiting` holds the size of each entry in the table folder, `found` is the highest number
        among `names`."""
        folder = f"{self.storage.location}/{table_folder}"
        declared, recorded = record.key_columns, record.last_sequence_number
        differences = metadata.contract_differences() if metadata is not None else []
        if differences:
            return (
                f"{folder}/{METADATA_FILE} declares {', '.join(differences)}, so the mirror would not "
                "apply the Parquet files dbt-openmirror names by number in that order, or at all. "
                "dbt-openmirror writes that file with keyColumns only; someone else rewrote it. Nothing "
                "was published. Restore it, or run with --full-refresh to rebuild the table from the model."
            )
        # Records written before keys were recorded declare none.
        if metadata is not None and declared and list(metadata.key_columns) != list(declared):
            return (
                f"{folder}/{METADATA_FILE} declares keyColumns {list(metadata.key_columns)}, but "
                f"dbt-openmirror declared {list(declared)} when it loaded the table, and the mirror never "
                "changes a table's key: someone else rewrote the file. Nothing was published. Restore it, "
                "or run with --full-refresh to rebuild the table with the model's key."
            )
        if found > recorded:
            # One the service processed is in the mirrored table: removing it takes nothing out, and
            # its number may not be used again.
            processed = sorted(n for n in names if (parse_sequence_number(n) or 0) > recorded and n not in waiting)
            repair = (
                f"the mirror has already applied {processed[0]}, so removing files would not take their rows "
                "out of the mirrored table, and a number is never used twice: run with --full-refresh to "
                "rebuild the table from the model."
                if processed
                else f"then remove the files after {recorded} if they are not wanted, or run with --full-refresh "
                "to rebuild the table from the model."
            )
            return (
                f"{folder} holds file {data_file_name(found)} but dbt-openmirror's record "
                f"({PUBLISH_RECORD_FILE}) says the last number it published is {recorded}: files after "
                f"{recorded} were written by someone else (another publisher, or a copied or restored "
                f"folder). Nothing was published. Find out who writes into this folder; {repair}"
            )
        # One the service moved away is applied: only files still waiting are compared.
        changed = next((n for n, size in sorted(record.file_sizes.items()) if waiting.get(n, size) != size), None)
        if changed is not None:
            return (
                f"{folder}/{changed} is not the file dbt-openmirror published (its size changed since): "
                "someone replaced or truncated it before the mirror applied it, so the mirrored table "
                "would take rows the model never produced, or stall on the file. Nothing was published. "
                "Put the file back, or run with --full-refresh to rebuild the table from the model."
            )
        gap = first_gap(waiting, names, recorded)
        if gap is not None:
            first_waiting, missing = gap
            if self._found_unlisted(table_folder, data_file_name(missing)):
                return (
                    f"the listing of {folder} did not show {data_file_name(missing)}, which is there: the "
                    "storage's listings had not caught up with its writes. Nothing was published; run again."
                )
            return (
                f"{folder} is missing file {data_file_name(missing)}: {data_file_name(first_waiting)} "
                "before it still waits there unprocessed, and the mirror applies files in order, so "
                "it cannot have processed and cleaned up the later one; someone deleted or moved it "
                f"(or edited {PUBLISH_RECORD_FILE}), and the mirror would wait behind the gap for ever. "
                "Nothing was published. Put the file back, or run with --full-refresh to rebuild the "
                "table from the model."
            )
        return None

    def _found_unlisted(self, table_folder: str, name: str) -> bool:
        """Whether a file the folder's listings left out is there when asked for by name."""
        return any(
            self.storage.exists(f"{table_folder}/{where}{name}")
            for where in ("", *(f"{f}/" for f in PROCESSED_FOLDERS))
        )

    # -- checking what Spark staged ---------------------------------------------------------------

    def staged_files(self, staged_folder: str, full_load: bool) -> list[StagedFile]:
        """The Parquet files Spark wrote, in name order, each checked by its footer."""
        staged = []
        for name in self.storage.list_names(staged_folder):
            if name.startswith(("_", ".")) or not name.endswith(".parquet"):
                continue  # _SUCCESS, .crc checksums
            path = f"{staged_folder}/{name}"
            staged.append(self._checked_file(path, full_load))
        return staged

    def _checked_file(self, path: str, full_load: bool) -> StagedFile:
        """A staged file, its rows counted per marker. A change file must carry an int32 marker;
        a full load's rows are all inserts and may carry none (see openmirror_initial_load_sql)."""
        size = self.storage.size(path)
        if size == 0:
            raise PublishError(f"staged file {path} is empty (zero bytes): not publishing it")
        with self.storage.open_read(path) as handle:
            try:
                parquet = pq.ParquetFile(handle)
                schema = parquet.schema_arrow
                problems = written_problems(schema, parquet.metadata)
                if problems:
                    raise StagedFilesChangedError(f"staged file {path}: {'; '.join(problems)}. Nothing was published")
                marked = schema.get_field_index(ROW_MARKER) >= 0
                columns = tuple(name for name in schema.names if name != ROW_MARKER)
                if full_load and not marked:
                    return StagedFile(path, parquet.metadata.num_rows, {}, columns, size)
                if not marked or str(schema.field(ROW_MARKER).type) != "int32":
                    raise PublishError(f"staged file {path} has no int32 {ROW_MARKER} column")
                # One thread: see package/publish.py load_manifest.
                markers = parquet.read(columns=[ROW_MARKER], use_threads=False).column(ROW_MARKER)
            except (pa.ArrowException, OSError, ValueError) as exc:
                raise PublishError(f"staged file {path} is not readable Parquet: {exc}") from exc
        return StagedFile(path, len(markers), count_markers(markers), columns, size)

    def prepare(
        self,
        table_folder: str,
        key_columns: Sequence[str],
        staged_folder: str,
        state: TableFolderState,
        expected_markers: dict[int, int],
        model: str,
        run_id: str,
        full_load: bool,
        rebuild: bool,
        owner: str | None = None,
    ) -> PendingPublish:
        """Which staged file becomes which number. An incremental run without changes publishes
        nothing (and may have staged nothing); a full load always publishes at least one file so
        the table exists, and so does a run whose files carry a column the mirrored table lacks
        (a column added with no row to change: a zero-row file adds it). The staged files must
        hold the rows Spark counted, per marker for change files (`expected_markers`)."""
        staged = self.staged_files(staged_folder, full_load)
        staged_rows, expected_rows = sum(f.rows for f in staged), sum(expected_markers.values())
        staged_markers = sum((Counter(f.markers) for f in staged), Counter())
        expected = +Counter(expected_markers)  # unary +: markers without rows do not count
        markers_differ = not full_load and staged_markers != expected
        if staged_rows != expected_rows or markers_differ or (full_load and not staged):
            # Per marker only where the totals agree: otherwise the totals say it.
            found = f" ({describe_markers(staged_markers)})" if staged_rows == expected_rows else ""
            counted = f" ({describe_markers(expected)})" if staged_rows == expected_rows else ""
            raise StagedFilesChangedError(
                f"Model '{model}': staged files in {staged_folder} hold {staged_rows} rows{found} in "
                f"{len(staged)} files, Spark counted {expected_rows}{counted}: they were removed or changed "
                "after they were staged"
            )
        # Empty files add no rows; one is kept only to create the table or add its columns.
        to_publish = [f for f in staged if f.rows]
        if not to_publish and staged and state.keeps_empty_file(staged[0].columns, full_load):
            to_publish = staged[:1]
        base = 0 if rebuild else state.last_sequence_number
        numbered = [(f, data_file_name(number)) for number, f in enumerate(to_publish, start=base + 1)]
        return PendingPublish(
            run_id,
            model,
            table_folder,
            list(key_columns),
            base,
            rebuild,
            staged_folder,
            [(f.path, name) for f, name in numbered],
            expected_rows,
            owner,
            list(to_publish[0].columns) if to_publish else None,
            {name: f.size for f, name in numbered},
        )

    # -- publishing: begin, complete, commit ------------------------------------------------------

    def begin(
        self, pending: PendingPublish, fence: "Fence", service_wait_seconds: float = DEFAULT_REBUILD_WAIT_SECONDS
    ) -> None:
        """Journal the publish (also one without files, so that recovery can finish it). A full
        load first waits until the mirroring service no longer lists the table (for a rebuild,
        after deleting the folder); the first incremental file after a full load waits until the
        service lists the table again (mirroring_service.py)."""
        folder = pending.table_folder
        if pending.rebuild:
            if pending.files:
                self.service.check_can_drop(folder, pending.model)
            fence.check()
            self.storage.delete_folder(folder)
        if pending.files and pending.full_load:
            self.service.wait_until_dropped(folder, service_wait_seconds, pending.model)
        elif pending.files:
            record = self.read_record(folder)
            if record is not None and record.wait_for_listing:
                self.service.wait_until_listed(folder, service_wait_seconds, pending.model)
        journal = self._read_journal(folder)
        self._check_generation(journal[0], fence)
        state = self.table_state(folder)
        if state.pending is not None or state.last_sequence_number != pending.base_sequence_number:
            raise PublishError(
                f"Model '{pending.model}': {folder} changed during the run (last number "
                f"{state.last_sequence_number}, expected {pending.base_sequence_number}); "
                "was it published by another run? Nothing was published."
            )
        committed = journal[0] or PublishRecord(pending.base_sequence_number, pending.key_columns, pending.model)
        journaled = replace(
            committed,
            last_sequence_number=pending.base_sequence_number,
            key_columns=list(pending.key_columns),
            model=pending.model,
            pending=pending.to_dict(),
            owner=pending.owner or committed.owner,
        )
        self._write_journal(pending, journaled, fence, journal)

    def complete(self, pending: PendingPublish, fence: "Fence") -> None:
        """Metadata, then every file not yet in place, each after checking the lease. Safe to
        repeat after a crash. Whatever fails, a writer that lost its lease says so."""
        if not pending.files:
            return
        try:
            self._complete(pending, fence)
        except (OSError, OpenMirrorError):
            fence.check()
            raise

    def _complete(self, pending: PendingPublish, fence: "Fence") -> None:
        folder = pending.table_folder
        self._identify_publisher()
        if self.storage.read_text(f"{folder}/{METADATA_FILE}") is None:
            # Written before any data file, so the first file is never read as insert-only.
            self.storage.write_text(f"{folder}/{METADATA_FILE}", metadata_json(pending.key_columns), create_only=True)
        present = self.published_names(folder)
        staged_names = set(self.storage.list_names(pending.staged_folder))
        for staged_path, name in pending.files:
            staged_name = staged_path.rsplit("/", 1)[-1]
            fence.check()
            if name not in present:
                try:
                    self.storage.rename_create_only(staged_path, f"{folder}/{name}")
                except TargetExistsError:  # created since the listing: not by a run holding the lease
                    raise PublishError(
                        f"Model '{pending.model}': {folder}/{name} appeared while this run published its "
                        f"files after {pending.base_sequence_number}; another writer used this number. The "
                        "journal keeps what this run published. Run with --full-refresh to rebuild the table."
                    ) from None
            elif staged_name in staged_names and self.storage.exists(staged_path):
                # Stopped between linking the final name and unlinking the staged one? (A listing
                # not caught up may still show a staged file that was renamed.)
                self._check_ours(staged_path, folder, name, pending.model)
                self.storage.delete_file(staged_path)

    def _identify_publisher(self) -> None:
        """`_partnerEvents.json` at the landing zone root, written once (create-only)."""
        if self.storage.read_text(PARTNER_EVENTS_FILE) is not None:
            return
        try:
            self.storage.write_text(PARTNER_EVENTS_FILE, partner_events_json(), create_only=True)
        except TargetExistsError:
            pass  # another run wrote it first; the content is the same kind of statement

    def _check_ours(self, staged_path: str, folder: str, name: str, model: str) -> None:
        """A final name present while our staged file is still there is ours only when both are
        one file (a create-only rename stopped between link and unlink, found in the table folder
        or where the service moved it); anything else is another writer's file."""
        for where in (folder, *(f"{folder}/{processed}" for processed in PROCESSED_FOLDERS)):
            if self.storage.is_same_file(staged_path, f"{where}/{name}"):
                return
        raise PublishError(
            f"Model '{model}': {folder}/{name} exists but is not the staged {staged_path}; "
            "another writer used this number. Run with --full-refresh to rebuild the table."
        )

    def commit(self, pending: PendingPublish, fence: "Fence") -> None:
        """The publish is done: the record names its run and last number. A run without changes
        is committed too, so the record always names the run the snapshot matches."""
        journal = self._read_journal(pending.table_folder)
        self._expect_journaled(pending, journal[0], fence)
        previous = journal[0]
        waiting = pending.full_load if pending.files else bool(previous and previous.wait_for_listing)
        record = PublishRecord(
            pending.last_sequence_number,
            list(pending.key_columns),
            pending.model,
            pending.run_id,
            pending.names,
            _now(),
            wait_for_listing=waiting,
            owner=pending.owner or (previous.owner if previous else None),
            columns=pending.columns if pending.files else (previous.columns if previous else None),
            file_sizes=pending.file_sizes,
        )
        self._write_journal(pending, record, fence, journal)
        self.storage.delete_folder(pending.staged_folder)

    def abandon(self, pending: PendingPublish, fence: "Fence") -> None:
        """Forget a publish that cannot be finished. The record keeps its committed number, or
        the highest number the abandoned run did rename into place: those files are ours."""
        journal = self._read_journal(pending.table_folder)
        record = journal[0]
        if record is not None:
            self._expect_journaled(pending, record, fence)
            published = highest_sequence_number(sorted(set(pending.names) & self.published_names(pending.table_folder)))
            last = max(record.last_sequence_number, published)
            self._write_journal(pending, replace(record, last_sequence_number=last, pending=None), fence, journal)
        self.storage.delete_folder(pending.staged_folder)

    # -- the journal: replaced only as read, and never by an older lease --------------------------

    def _read_journal(self, table_folder: str) -> tuple[PublishRecord | None, str | None]:
        """The record and its version (None, None when there is none)."""
        found = self.storage.read_versioned(f"{table_folder}/{PUBLISH_RECORD_FILE}")
        if found is None:
            return None, None
        return self._parse_record(found.text, table_folder), found.version

    @staticmethod
    def _check_generation(record: PublishRecord | None, fence: "Fence") -> None:
        if record is not None and record.lease_generation > fence.generation:
            raise fence.lost(
                f"the table's journal was written under a newer lease, generation "
                f"{record.lease_generation}; this run's is {fence.generation}"
            )

    def _expect_journaled(self, pending: PendingPublish, record: PublishRecord | None, fence: "Fence") -> None:
        """The journal still names this publish: as pending, or, for a publish without files
        (which is never journaled), as the committed state it was prepared from."""
        self._check_generation(record, fence)
        if record is not None and (
            (record.pending or {}).get("runId") == pending.run_id
            or (
                not pending.files
                and record.pending is None
                and record.last_sequence_number == pending.base_sequence_number
            )
        ):
            return
        named = f"run {record.pending.get('runId')}" if record and record.pending else "no publish in flight"
        raise PublishError(
            f"Model '{pending.model}': the journal of {pending.table_folder} names {named}, not the "
            f"publish of run {pending.run_id}; nothing was written. Run again: the next run "
            "finishes or discards what is journaled."
        )

    def _write_journal(
        self,
        pending: PendingPublish,
        record: PublishRecord,
        fence: "Fence",
        journal: tuple[PublishRecord | None, str | None],
    ) -> None:
        """Replace the journal `journal` was read as, under this writer's lease generation, only
        if it is still that version and no newer lease wrote it: a writer that lost its lease can
        neither roll it back nor overwrite what the run that took over wrote."""
        folder = pending.table_folder
        self._check_generation(journal[0], fence)
        fence.check()
        text = replace(record, lease_generation=fence.generation).to_json()
        try:
            self.storage.write_text_if(f"{folder}/{PUBLISH_RECORD_FILE}", text, journal[1])
        except WriteConflictError:
            self._check_generation(self._read_journal(folder)[0], fence)
            fence.check()
            raise PublishError(
                f"Model '{pending.model}': {self.storage.location}/{folder}/{PUBLISH_RECORD_FILE} "
                f"changed while run {pending.run_id} was writing it; nothing was overwritten. Run "
                "again: the next run finishes or discards what is journaled."
            ) from None

    def discard(self, staged_folder: str) -> None:
        self.storage.delete_folder(staged_folder)

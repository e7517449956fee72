"""`dbt-openmirror validate`: check any landing zone against the open mirroring rules, read-only.

Each finding names the file, and the row or column where there is one. Errors are what stops or
corrupts replication (the local mirror stops the table on each of them: the rules are the same
ones, from `metadata_files`, `column_rules`, `delimited_text` and `markers`); warnings are what
works but is probably not intended.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from dbt.adapters.openmirror.errors import OpenMirrorError, PublishError
from dbt.adapters.openmirror.package.publish import MANIFEST_FOLDER, load_manifest
from dbt.adapters.openmirror.publishing.publisher import Publisher
from dbt.adapters.openmirror.rules.column_rules import (
    TableColumns,
    absent_keys,
    first_null,
    first_true,
    parquet_problems,
    schema_problems,
)
from dbt.adapters.openmirror.rules.delimited_text import DelimitedTextError, read_delimited_text
from dbt.adapters.openmirror.rules.landing_zone import (
    METADATA_FILE,
    PARTNER_EVENTS_FILE,
    PROCESSED_FOLDERS,
    SCHEMA_FOLDER_SUFFIX,
    SCRATCH_FOLDER,
    folder_name_problem,
    parse_sequence_number,
    service_name,
    spelled_alike_problem,
    table_folders,
)
from dbt.adapters.openmirror.rules.markers import (
    DELETE,
    ROW_MARKER,
    UPDATE,
    UPSERT,
    default_marker_problem,
    marker_problem,
)
from dbt.adapters.openmirror.rules.metadata_files import (
    LAST_UPDATE_TIME,
    TableMetadata,
    parse_partner_events,
    parse_table_metadata,
)
from dbt.adapters.openmirror.storage.base import LandingZoneStorage, StoredFile

ERROR, WARNING = "error", "warning"
_BATCH_ROWS = 65536


@dataclass(frozen=True)
class Finding:
    severity: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity.upper():7} {self.where}: {self.message}"


@dataclass(frozen=True)
class DataFile:
    path: str
    file: StoredFile
    #: Still to be applied (its rows are checked), or already moved by the service (its schema
    #: still counts for the files after it).
    pending: bool


class _TableState:
    """What the files before the current one established."""

    def __init__(self) -> None:
        self.columns = TableColumns()
        self.marked: str | None = None  # the first file with a row marker


class LandingZoneValidator:
    def __init__(self, storage: LandingZoneStorage) -> None:
        self.storage = storage
        self.publisher = Publisher(storage)  # reads the journals as a run does
        self.findings: list[Finding] = []

    def _add(self, severity: str, where: str, message: str) -> None:
        self.findings.append(Finding(severity, where, message))

    def validate(self) -> list[Finding]:
        try:
            self._partner_events()
        except OpenMirrorError as exc:  # not UTF-8 text: the tables are still checked
            self._add(ERROR, PARTNER_EVENTS_FILE, exc.msg)
        # Package mode's manifest, and the runs it lists as waiting for `dbt-openmirror publish`.
        manifest = load_manifest(self.storage)
        for skipped in manifest.problems:  # `dbt-openmirror publish` skips these rows and fails
            self._add(ERROR, MANIFEST_FOLDER, skipped)
        expected = {MANIFEST_FOLDER, *(run.staged_folder for run in manifest.waiting)}
        self._scratch_leftovers(SCRATCH_FOLDER, expected)
        for name in self.storage.list_names(""):
            if name.endswith(SCHEMA_FOLDER_SUFFIX):
                problem = folder_name_problem(name[: -len(SCHEMA_FOLDER_SUFFIX)])
                if problem:
                    self._add(ERROR, name, f"schema folder name: {problem}")
        first_of: dict[tuple[str, str], str] = {}
        for _, table, folder in table_folders(self.storage):
            problem = folder_name_problem(table)
            if problem:
                self._add(ERROR, folder, f"table folder name: {problem}")
            other = first_of.setdefault(service_name(folder), folder)
            if other != folder:
                self._add(ERROR, folder, f"{spelled_alike_problem(folder, other)}; delete one of them")
            try:
                self._table_folder(folder)
            except OpenMirrorError as exc:  # a file that cannot be read as one (a folder, not UTF-8 text)
                self._add(ERROR, folder, exc.msg)
        return self.findings

    def _partner_events(self) -> None:
        text = self.storage.read_text(PARTNER_EVENTS_FILE)
        if text is None:
            return
        parsed = parse_partner_events(text)
        for message in parsed.errors:
            self._add(ERROR, PARTNER_EVENTS_FILE, message)
        for message in parsed.warnings:
            self._add(WARNING, PARTNER_EVENTS_FILE, message)

    def _scratch_leftovers(self, folder: str, expected: set[str]) -> None:
        for name in self.storage.list_names(folder):
            path = f"{folder}/{name}"
            if path in expected:
                continue
            if self.storage.list_names(path):
                self._scratch_leftovers(path, expected)
            elif name.endswith(".parquet"):
                self._add(
                    WARNING, path, "staged file that no run or publish names: left behind by one that was interrupted"
                )

    # -- one table folder ----------------------------------------------------------------------

    def _metadata(self, folder: str) -> TableMetadata | None:
        where = f"{folder}/{METADATA_FILE}"
        text = self.storage.read_text(where)
        if text is None:
            self._add(WARNING, folder, f"no {METADATA_FILE}: the table is insert-only")
            return TableMetadata()
        parsed = parse_table_metadata(text)
        for message in parsed.errors:
            self._add(ERROR, where, message)
        for message in parsed.warnings:
            self._add(WARNING, where, message)
        if parsed.metadata is None:
            return None
        try:
            record = self.publisher.read_record(folder)
        except PublishError as exc:  # the next run refuses it
            self._add(ERROR, folder, exc.msg)
            record = None
        published = record.key_columns if record is not None else None
        keys = list(parsed.metadata.key_columns)
        if published and published != keys:
            self._add(
                ERROR,
                where,
                f"keyColumns {keys} differ from {published} that the files were "
                "published with: the key of a table can never change",
            )
        return parsed.metadata

    def _table_folder(self, folder: str) -> None:
        metadata = self._metadata(folder)
        if metadata is None:
            return  # the mirror stops at the metadata: its files cannot be judged
        files = [f for f in self.storage.list_files(folder) if not f.name.startswith("_")]
        processed: dict[str, DataFile] = {}
        for name in PROCESSED_FOLDERS:
            for file in self.storage.list_files(f"{folder}/{name}"):
                processed.setdefault(file.name, DataFile(f"{folder}/{name}/{file.name}", file, pending=False))
        if metadata.file_detection == LAST_UPDATE_TIME:
            order = self._by_update_time(folder, files, processed, metadata)
        else:
            order = self._by_number(folder, files, processed, metadata)
        state = _TableState()
        for data_file in order:
            self._data_file(data_file, metadata, state)

    def _by_number(
        self, folder: str, files: list[StoredFile], processed: dict[str, DataFile], metadata: TableMetadata
    ) -> list[DataFile]:
        extension = metadata.extension
        numbers: dict[int, DataFile] = {}
        for file in files:
            path = f"{folder}/{file.name}"
            number = parse_sequence_number(file.name, extension)
            if number is None:
                kind = "folder" if file.is_folder else "file"
                problem = (
                    "number 0: numbering starts at 1"
                    if file.name == f"{0:020d}.{extension}"
                    else f"{kind} name is not 20 digits + .{extension}"
                )
                self._add(ERROR, path, f"{problem}: the mirror will not apply it")
                continue
            numbers[number] = DataFile(path, file, pending=True)
        for name, data_file in processed.items():
            number = parse_sequence_number(name, extension)
            if number is None:
                continue
            pending = numbers.get(number)
            if pending is None:
                numbers[number] = data_file
            elif (pending.file.size, pending.file.last_modified) != (data_file.file.size, data_file.file.last_modified):
                self._add(
                    ERROR,
                    pending.path,
                    f"written again after the mirror processed {data_file.path}: a number is never reused, "
                    "and the mirror stops the table",
                )
            # else one file in both places: a move (link, then unlink) stopped halfway
        ordered = sorted(numbers)
        # The service purges processed files by age, so once it processed any, the numbers below
        # the lowest processed file still kept (or below the first waiting file) may be purged.
        waiting = [n for n in ordered if numbers[n].pending]
        kept = [n for n in ordered if not numbers[n].pending]
        processed_any = any(self.storage.exists(f"{folder}/{name}") for name in PROCESSED_FOLDERS)
        purged_below = min(kept + waiting, default=1) if processed_any else 1
        if ordered and ordered[0] != 1 and purged_below <= 1:
            self._add(
                ERROR,
                folder,
                f"{1:020d}.{extension} is missing: numbering starts at 1, and every later file waits for it",
            )
        for before, after in pairwise(ordered):
            if after != before + 1 and before + 1 >= purged_below:
                self._add(
                    ERROR, folder, f"{before + 1:020d}.{extension} is missing: every later file waits behind the gap"
                )
        return [numbers[n] for n in ordered]

    def _by_update_time(
        self, folder: str, files: list[StoredFile], processed: dict[str, DataFile], metadata: TableMetadata
    ) -> list[DataFile]:
        extension = metadata.extension
        pending = []
        for file in files:
            path = f"{folder}/{file.name}"
            if file.is_folder or not file.name.endswith(f".{extension}"):
                self._add(WARNING, path, f"not a .{extension} file: the mirror does not apply it")
            elif file.name in processed:
                self._add(
                    WARNING,
                    path,
                    "a file of this name was already processed: the service never "
                    "applies a path twice, so this one is ignored",
                )
            else:
                pending.append(DataFile(path, file, pending=True))
        pending.sort(key=lambda d: (d.file.last_modified, d.file.name))
        for before, after in pairwise(pending):
            if before.file.last_modified == after.file.last_modified:
                self._add(
                    WARNING,
                    after.path,
                    f"same last-modified time as {before.file.name}: the order in "
                    "which the service applies them is undefined",
                )
        done = sorted(
            (d for d in processed.values() if d.file.name.endswith(f".{extension}")),
            key=lambda d: (d.file.last_modified, d.file.name),
        )
        return done + pending

    # -- one data file -------------------------------------------------------------------------

    def _data_file(self, data_file: DataFile, metadata: TableMetadata, state: _TableState) -> None:
        path = data_file.path
        if data_file.file.size == 0:
            if data_file.pending:
                self._add(
                    ERROR,
                    path,
                    "zero-byte file: the table stalls on it (replace it with a valid file of the same name)",
                )
            return
        try:
            with self.storage.open_read(path) as handle:
                if metadata.delimited_text is not None:
                    if data_file.pending:
                        rows = read_delimited_text(handle, metadata.delimited_text)
                        self._rows(path, iter(rows.to_batches(_BATCH_ROWS)), metadata, TableColumns.of(rows.schema))
                    return
                parquet = pq.ParquetFile(handle)
                if self._parquet(path, parquet, metadata, state) and data_file.pending:
                    self._rows(path, parquet.iter_batches(batch_size=_BATCH_ROWS), metadata, state.columns)
        except DelimitedTextError as exc:
            self._add(ERROR, path, str(exc))
        except (pa.ArrowException, OSError) as exc:
            self._add(ERROR, path, f"not readable Parquet ({exc})")

    def _parquet(self, path: str, parquet: pq.ParquetFile, metadata: TableMetadata, state: _TableState) -> bool:
        """The file's layout and columns; whether its rows can be checked."""
        schema = parquet.schema_arrow
        problems = parquet_problems(parquet.metadata) + schema_problems(schema)
        for problem in problems:
            self._add(ERROR, path, problem.message)
        if problems:
            return False
        state.columns, changes = state.columns.changed_by(TableColumns.of(schema))
        for problem in changes:
            self._add(ERROR, path, problem.message)
        names = schema.names
        keys = list(metadata.key_columns)
        if ROW_MARKER not in names:
            if state.marked and keys and not metadata.upsert_default:
                self._add(
                    WARNING,
                    path,
                    f"no {ROW_MARKER} column after {state.marked}, which has one: every row "
                    "is an INSERT, so keys already in the table are duplicated",
                )
        else:
            state.marked = state.marked or path.rsplit("/", 1)[-1]
            if schema.field(ROW_MARKER).type != pa.int32():
                self._add(
                    WARNING,
                    path,
                    f"{ROW_MARKER} is {schema.field(ROW_MARKER).type}; int32 is what the mirror's samples write",
                )
            if names[-1] != ROW_MARKER:
                self._add(WARNING, path, f"{ROW_MARKER} is not the last column, as the current documentation asks")
        missing = absent_keys(keys, names)
        if missing:
            self._add(ERROR, path, missing)
        return not changes and not missing

    def _rows(
        self, path: str, batches: Iterator[pa.RecordBatch], metadata: TableMetadata, columns: TableColumns
    ) -> None:
        keys = list(metadata.key_columns)
        required = [c.name for c in columns.columns if not c.nullable]
        # A table of key columns alone has nothing an UPDATE could leave out.
        valued = any(c not in keys for c in columns.names)
        reported: set[str] = set()
        offset = 0
        for batch in batches:
            table = pa.Table.from_batches([batch])
            markers = table.column(ROW_MARKER) if ROW_MARKER in table.column_names else None
            for kind, found in self._row_problems(table, markers, keys, required, valued, metadata, reported):
                row, severity, message = found
                reported.add(kind)
                self._add(severity, f"{path} row {offset + row}", message)
            offset += batch.num_rows

    @staticmethod
    def _row_problems(
        table: pa.Table,
        markers: pa.ChunkedArray | None,
        keys: list[str],
        required: list[str],
        valued: bool,
        metadata: TableMetadata,
        reported: set[str],
    ) -> Iterator[tuple[str, tuple[int, str, str]]]:
        """(kind, (row, severity, message)) of each kind of row problem not yet reported."""
        if markers is not None and "marker" not in reported:
            problem = marker_problem(markers, keyed=bool(keys))
            if problem is not None:
                yield "marker", (problem[0], ERROR, problem[1])
        default_problem = default_marker_problem(metadata.upsert_default, keyed=bool(keys))
        if markers is None and default_problem and table.num_rows and "marker" not in reported:
            yield "marker", (0, ERROR, default_problem)
        null = first_null(table, [k for k in keys if k not in reported])
        if null is not None:
            yield null[0], (null[1], ERROR, f"key column {null[0]} is NULL")
        kept = pc.not_equal(markers, DELETE) if markers is not None else None
        null = first_null(table, [c for c in required if f"required {c}" not in reported], among=kept)
        if null is not None:
            yield f"required {null[0]}", (null[1], ERROR, f"column {null[0]} is not nullable but is NULL")
        # Columns besides the key, all NULL or left out of the file (the mirror sets those NULL too).
        others = [c for c in table.column_names if c not in keys and c != ROW_MARKER]
        if markers is not None and keys and valued and "full" not in reported:
            empty = pc.is_in(markers, pa.array([UPDATE, UPSERT], markers.type))
            for column in others:
                empty = pc.and_kleene(empty, pc.is_null(table.column(column)))
            row = first_true(empty)
            if row is not None:
                yield (
                    "full",
                    (
                        row,
                        WARNING,
                        "UPDATE/UPSERT row whose columns besides the key are all NULL or missing from the file: the "
                        "mirror replaces the whole row with it, so if only the key was meant to be sent, updates must "
                        "carry the full row",
                    ),
                )


def validate(storage: LandingZoneStorage) -> list[Finding]:
    return LandingZoneValidator(storage).validate()

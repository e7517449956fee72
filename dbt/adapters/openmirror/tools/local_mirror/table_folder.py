"""One poll of one table folder: which files to apply, in which order, and applying each.

- SequentialFileName: numbers strictly in order from the last applied, stopping at a gap; a
  number already applied that shows up again is an error (numbers are never reused).
- LastUpdateTimeFileDetection: every file with the table's extension whose path was not processed
  yet, in the storage's last-modified order (name order among equal times: the service has no
  tie-break); a processed path written again is ignored, as the service does.
- A file applied by a replay killed before its move to `_ProcessedFiles/` is only moved.
- A folder deleted and recreated between two polls is recognised (see `recreated`) and rebuilt.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from dbt.adapters.openmirror.rules.column_rules import (
    TableColumns,
    absent_keys,
    conformed,
    first_null,
    parquet_problems,
    schema_problems,
)
from dbt.adapters.openmirror.rules.delimited_text import DelimitedTextError, read_delimited_text
from dbt.adapters.openmirror.rules.landing_zone import METADATA_FILE, PROCESSED_FOLDERS, parse_sequence_number
from dbt.adapters.openmirror.rules.markers import DELETE, INSERT, ROW_MARKER, UPSERT
from dbt.adapters.openmirror.rules.metadata_files import LAST_UPDATE_TIME, TableMetadata, parse_table_metadata
from dbt.adapters.openmirror.storage.base import LandingZoneStorage, StoredFile
from dbt.adapters.openmirror.tools.local_mirror.apply import merge_is_exact, replay_table, with_markers, without_deletes
from dbt.adapters.openmirror.tools.local_mirror.delta_table import AppliedFile, MirroredTable

PROCESSED = PROCESSED_FOLDERS[0]


class TableStopped(Exception):
    """The table cannot go on until its landing-zone folder is repaired or rebuilt."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class FolderView:
    """One look at a table folder: what a poll decides from."""

    files: dict[str, StoredFile]
    #: Names in `_ProcessedFiles/` and `_FilesReadyToDelete/`.
    processed: set[str]
    #: Whether either of those folders exists: only this folder's own past puts them there.
    has_processed_folder: bool

    @property
    def metadata_file(self) -> StoredFile | None:
        return self.files.get(METADATA_FILE)


@dataclass
class Progress:
    """What a poll of the table found and did (the table's status is made from it)."""

    applied: AppliedFile | None
    key_columns: tuple[str, ...] = ()
    files: int = 0
    rows: int = 0
    bytes: int = 0
    pending: tuple[str, ...] = ()
    waiting_for: str | None = None
    ignored: tuple[str, ...] = ()
    rebuilt: bool = False
    #: The file being applied, which an unexpected failure is reported with.
    applying: str | None = None


def identity(file: StoredFile | None) -> tuple[int, float] | None:
    """What tells two versions of a path apart: size and the storage's last-modified time."""
    return None if file is None else (file.size, file.last_modified)


def recreated(view: FolderView, last: AppliedFile) -> bool:
    """Whether the folder was deleted and created again since `last` was applied, unnoticed.
    The folders processed files move to show it is the same folder (even once the clean-up purged
    the files in them); a new folder has neither, and it either holds a number already applied
    (SequentialFileName) or a `_metadata.json` written since."""
    if view.has_processed_folder:
        return False
    if last.file_detection != LAST_UPDATE_TIME:
        extension = last.name.split(".", 1)[1]
        for name, file in view.files.items():
            number = parse_sequence_number(name, extension)
            if number is not None and number <= last.number and identity(file) != (last.size, last.modified):
                return True
    return (
        last.metadata is not None and view.metadata_file is not None and identity(view.metadata_file) != last.metadata
    )


class TableFolderReplay:
    """One poll of `folder` into the Delta table at `path`."""

    def __init__(self, storage: LandingZoneStorage, folder: str, path: Path) -> None:
        self.storage = storage
        self.folder = folder
        self.path = path

    def view(self) -> FolderView:
        listing = self.storage.list_files(self.folder)
        folders = [f.name for f in listing if f.is_folder and f.name in PROCESSED_FOLDERS]
        processed = {name for folder in folders for name in self.storage.list_names(f"{self.folder}/{folder}")}
        return FolderView({f.name: f for f in listing if not f.is_folder}, processed, bool(folders))

    def metadata(self, view: FolderView) -> TableMetadata:
        text = self.storage.read_text(f"{self.folder}/{METADATA_FILE}") if view.metadata_file else None
        if text is None:
            return TableMetadata()  # insert-only
        parsed = parse_table_metadata(text)
        if parsed.metadata is None:
            raise TableStopped("InvalidMetadata", f"{METADATA_FILE}: {'; '.join(parsed.errors)}")
        return parsed.metadata

    def run(self, progress: Progress, names_applied: Callable[[MirroredTable], set[str]]) -> None:
        """Apply what is due; `progress` says how far it got, also when TableStopped is raised.
        `names_applied` gives the names of every file a table applied."""
        view = self.view()
        mirrored = MirroredTable.open(self.path)
        progress.applied = mirrored.last_applied() if mirrored is not None else None
        if progress.applied is not None and recreated(view, progress.applied):
            MirroredTable.drop(self.path)
            mirrored, progress.applied, progress.rebuilt = None, None, True
        metadata = self.metadata(view)
        progress.key_columns = metadata.key_columns
        if progress.applied is not None:
            check_contract(metadata, progress.applied)
        processed = set(view.processed)
        if mirrored is not None and metadata.file_detection == LAST_UPDATE_TIME:
            processed |= names_applied(mirrored)
        for file in self._due(view, metadata, progress, processed):
            progress.applying = file.name
            mirrored = self._apply(file, view, metadata, mirrored, progress)
        progress.applying = None

    # -- which files ---------------------------------------------------------------------------

    def _due(
        self, view: FolderView, metadata: TableMetadata, progress: Progress, processed: set[str]
    ) -> list[StoredFile]:
        last = progress.applied
        if last is not None and identity(view.files.get(last.name)) == (last.size, last.modified):
            self._move_processed(last.name, view)  # applied by a replay killed before the move
            del view.files[last.name]
        if metadata.file_detection == LAST_UPDATE_TIME:
            data = [f for f in view.files.values() if _is_data_file(f.name, metadata.extension)]
            progress.ignored = tuple(sorted(f.name for f in data if f.name in processed))
            return sorted((f for f in data if f.name not in processed), key=lambda f: (f.last_modified, f.name))
        numbered = {}
        for name, file in view.files.items():
            number = parse_sequence_number(name, metadata.extension)
            if number is not None:
                numbered[number] = file
        done = last.number if last is not None else 0
        reused = sorted(n for n in numbered if n <= done)
        if reused:
            raise TableStopped(
                "FileNumberReused",
                f"{numbered[reused[0]].name} was written again after it was applied: a number is never "
                "reused; rebuild the table folder to start over",
            )
        due: list[StoredFile] = []
        while done + len(due) + 1 in numbered:
            due.append(numbered[done + len(due) + 1])
        next_number = done + len(due) + 1
        progress.pending = tuple(sorted(f.name for n, f in numbered.items() if n > next_number))
        if progress.pending:
            progress.waiting_for = f"{next_number:020d}.{metadata.extension}"
        return due

    # -- one file ------------------------------------------------------------------------------

    def _apply(
        self,
        file: StoredFile,
        view: FolderView,
        metadata: TableMetadata,
        mirrored: MirroredTable | None,
        progress: Progress,
    ) -> MirroredTable:
        keys = list(metadata.key_columns)
        rows = self._rows(file, metadata)
        current = mirrored.columns() if mirrored is not None else TableColumns()
        columns, problems = current.changed_by(TableColumns.of(rows.schema), may_add=metadata.delimited_text is None)
        if problems:
            raise TableStopped(problems[0].code, f"{file.name}: {'; '.join(p.message for p in problems)}")
        required = [c.name for c in columns.columns if not c.nullable]
        null = first_null(rows, required, among=pc.not_equal(rows.column(ROW_MARKER), DELETE))
        if null is not None:
            raise TableStopped(
                "NullInNonNullableColumn", f"{file.name} row {null[1]}: column {null[0]} is not nullable but is NULL"
            )
        rows = conformed(rows, columns)
        sequential = metadata.file_detection != LAST_UPDATE_TIME
        number = parse_sequence_number(file.name, metadata.extension) if sequential else None
        if number is None:  # last update time: files are numbered in the order they are applied
            number = (progress.applied.number if progress.applied else 0) + 1
        applied = AppliedFile(
            name=file.name,
            size=file.size,
            modified=file.last_modified,
            key_columns=tuple(keys),
            number=number,
            file_detection=metadata.file_detection,
            file_format=metadata.file_format,
            metadata=identity(view.metadata_file),
        )
        if mirrored is None:
            mirrored = MirroredTable.create(self.path, columns, _first_load(rows, keys), applied)
        else:
            added = [c for c in columns.columns if c.name not in current.names]
            if added:
                mirrored.add_columns(added)
            _apply_changes(mirrored, rows, keys, columns, applied)
        self._move_processed(file.name, view)
        progress.applied = applied
        progress.files += 1
        progress.rows += rows.num_rows
        progress.bytes += file.size
        return MirroredTable(self.path)

    def _rows(self, file: StoredFile, metadata: TableMetadata) -> pa.Table:
        """The file's checked rows, with an int32 marker column last."""
        name = file.name
        if file.size == 0:
            raise TableStopped(
                "InvalidFile", f"{name} is empty (zero bytes): replace it with a valid file of the same name"
            )
        try:
            with self.storage.open_read(f"{self.folder}/{name}") as handle:
                if metadata.delimited_text is not None:
                    rows = read_delimited_text(handle, metadata.delimited_text)
                else:
                    parquet = pq.ParquetFile(handle)
                    problems = parquet_problems(parquet.metadata) + schema_problems(parquet.schema_arrow)
                    if problems:
                        raise TableStopped(problems[0].code, f"{name}: {'; '.join(p.message for p in problems)}")
                    rows = parquet.read()
        except DelimitedTextError as exc:
            raise TableStopped("InvalidFile", f"{name}: {exc}; replace it with a valid file of the same name") from exc
        except (pa.ArrowException, OSError) as exc:
            raise TableStopped(
                "InvalidFile",
                f"{name} is not readable {metadata.file_format} ({exc}); replace it with a valid file of the same name",
            ) from exc
        keys = list(metadata.key_columns)
        try:
            rows = with_markers(rows, UPSERT if metadata.upsert_default else INSERT, keyed=bool(keys))
        except ValueError as exc:
            raise TableStopped("InvalidRowMarker", f"{name} {exc}") from exc
        missing = absent_keys(keys, rows.column_names)
        if missing:
            raise TableStopped("KeyColumnMissing", f"{name}: {missing}")
        null = first_null(rows, keys)
        if null is not None:
            raise TableStopped("NullKey", f"{name} row {null[1]}: key column {null[0]} is NULL")
        return rows

    def _move_processed(self, name: str, view: FolderView) -> None:
        """Move an applied file to `_ProcessedFiles/`, as the service does. After a replay killed
        inside the create-only move (link, then unlink) both names are the same file: drop the first."""
        processed = f"{self.folder}/{PROCESSED}"
        if name in view.processed:
            self.storage.delete_file(f"{self.folder}/{name}")
        else:
            try:
                self.storage.rename_create_only(f"{self.folder}/{name}", f"{processed}/{name}")
            except FileNotFoundError as exc:
                # The folder was deleted meanwhile. The move may have created the processed-files
                # folder again, which would pass for this folder's past once it is recreated.
                if not self.storage.list_names(processed):
                    self.storage.delete_folder(processed)
                raise TableStopped(
                    "TableFolderDeleted", f"the table folder was deleted while {name} was applied"
                ) from exc
        view.processed.add(name)


def check_contract(metadata: TableMetadata, last: AppliedFile) -> None:
    """keyColumns may be declared once on an insert-only table and never changed; the detection
    strategy and file format a table was built with stay."""
    if last.key_columns and tuple(metadata.key_columns) != last.key_columns:
        raise TableStopped(
            "KeyColumnsChanged",
            f"keyColumns changed from {list(last.key_columns)} to {list(metadata.key_columns)}: the key of a "
            "table can never change; rebuild the table folder",
        )
    for what, built, declared in (
        ("fileDetectionStrategy", last.file_detection, metadata.file_detection),
        ("FileFormat", last.file_format, metadata.file_format),
    ):
        if built != declared:
            raise TableStopped(
                "TableDefinitionChanged", f"{what} changed from {built} to {declared}; rebuild the table folder"
            )


def _first_load(rows: pa.Table, keys: Sequence[str]) -> pa.Table:
    """The rows a new table starts with (no marker)."""
    if keys and not merge_is_exact(rows, keys, None):
        rows = replay_table(rows.schema.empty_table(), rows, keys, rows.schema)
    elif keys:
        rows = without_deletes(rows)
    return rows.drop_columns([ROW_MARKER])


def _apply_changes(
    mirrored: MirroredTable, rows: pa.Table, keys: Sequence[str], columns: TableColumns, applied: AppliedFile
) -> None:
    version = mirrored.delta.version()
    _write_changes(mirrored, rows, keys, columns, applied)  # the table object follows its own commits
    if mirrored.delta.version() == version:  # a MERGE that changed no row committed nothing
        mirrored.record(applied)


def _write_changes(
    mirrored: MirroredTable, rows: pa.Table, keys: Sequence[str], columns: TableColumns, applied: AppliedFile
) -> None:
    if not keys:  # insert-only: every marker is INSERT (checked)
        mirrored.append(rows.drop_columns([ROW_MARKER]), applied)
    elif all("`" not in n for n in columns.names) and merge_is_exact(rows, keys, mirrored.read(keys)):
        mirrored.merge(rows, keys, applied)  # (delta-rs's MERGE cannot quote a name with a backquote)
    else:
        mirrored.overwrite(replay_table(mirrored.read(), rows, keys, columns.arrow_schema()), applied)


def _is_data_file(name: str, extension: str) -> bool:
    return not name.startswith(("_", ".")) and name.endswith(f".{extension}")

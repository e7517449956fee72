"""Moves staged change files into a table folder: metadata first, then the next numbers, then
our durable record. Only file names, footers and small JSON files pass through this process."""

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import List, Optional, Sequence

import pyarrow.parquet as pq

from dbt.adapters.openmirror.change_sql import ROW_MARKER
from dbt.adapters.openmirror.errors import PublishError
from dbt.adapters.openmirror.landing_zone import (
    METADATA_FILE,
    PROCESSED_FOLDERS,
    PUBLISH_RECORD_FILE,
    data_file_name,
    highest_sequence_number,
    key_columns_from_metadata,
    metadata_json,
)
from dbt.adapters.openmirror.storage.base import LandingZoneStorage


@dataclass(frozen=True)
class TableFolderState:
    """What a table folder holds, as far as numbering and keys go."""

    exists: bool
    key_columns: Optional[List[str]]
    last_sequence_number: int


@dataclass(frozen=True)
class StagedFile:
    path: str
    rows: int


@dataclass(frozen=True)
class PublishedFiles:
    names: List[str]
    rows: int
    last_sequence_number: int


class Publisher:
    def __init__(self, storage: LandingZoneStorage) -> None:
        self.storage = storage

    def table_state(self, table_folder: str) -> TableFolderState:
        names = self.storage.list_names(table_folder)
        if not names:
            return TableFolderState(exists=False, key_columns=None, last_sequence_number=0)
        metadata = self.storage.read_text(f"{table_folder}/{METADATA_FILE}")
        where = f"{self.storage.location}/{table_folder}/{METADATA_FILE}"
        keys = key_columns_from_metadata(metadata, where) if metadata is not None else None
        found = highest_sequence_number(names)
        for folder in PROCESSED_FOLDERS:
            found = max(found, highest_sequence_number(self.storage.list_names(f"{table_folder}/{folder}")))
        # The service purges processed files after a while; our record still knows the number.
        return TableFolderState(True, keys, max(found, self._recorded_sequence_number(table_folder)))

    def _recorded_sequence_number(self, table_folder: str) -> int:
        text = self.storage.read_text(f"{table_folder}/{PUBLISH_RECORD_FILE}")
        if text is None:
            return 0
        try:
            return int(json.loads(text)["lastSequenceNumber"])
        except (ValueError, KeyError, TypeError) as exc:
            raise PublishError(
                f"{self.storage.location}/{table_folder}/{PUBLISH_RECORD_FILE} is damaged ({exc}); "
                "run with --full-refresh to rebuild the table"
            ) from exc

    def staged_files(self, staged_folder: str) -> List[StagedFile]:
        """The Parquet files Spark wrote, in name order, each checked by its footer."""
        staged = []
        for name in self.storage.list_names(staged_folder):
            if name.startswith(("_", ".")) or not name.endswith(".parquet"):
                continue  # _SUCCESS, .crc checksums
            path = f"{staged_folder}/{name}"
            staged.append(StagedFile(path, self._checked_row_count(path)))
        return staged

    def _checked_row_count(self, path: str) -> int:
        if self.storage.size(path) == 0:
            raise PublishError(f"staged file {path} is empty (zero bytes): not publishing it")
        with self.storage.open_read(path) as handle:
            try:
                metadata = pq.read_metadata(handle)
            except Exception as exc:
                raise PublishError(f"staged file {path} is not readable Parquet: {exc}") from exc
        schema = metadata.schema.to_arrow_schema()
        if schema.get_field_index(ROW_MARKER) < 0 or str(schema.field(ROW_MARKER).type) != "int32":
            raise PublishError(f"staged file {path} has no int32 {ROW_MARKER} column")
        return metadata.num_rows

    def publish(
        self,
        table_folder: str,
        key_columns: Sequence[str],
        staged_folder: str,
        expected_last_sequence_number: int,
        expected_rows: int,
        model: str,
        rebuild: bool = False,
    ) -> PublishedFiles:
        """Publish the staged files as the next numbers of `table_folder`.

        With `rebuild`, the folder is deleted first and numbering restarts at 1.
        """
        staged = self.staged_files(staged_folder)
        staged_rows = sum(f.rows for f in staged)
        if staged_rows != expected_rows or not staged:
            raise PublishError(
                f"Model '{model}': staged files in {staged_folder} hold "
                f"{staged_rows} rows in {len(staged)} files, Spark counted {expected_rows}"
            )
        if rebuild:
            self.storage.delete_folder(table_folder)
            expected_last_sequence_number = 0
        state = self.table_state(table_folder)
        if state.last_sequence_number != expected_last_sequence_number:
            raise PublishError(
                f"Model '{model}': {table_folder} changed during the run (last number "
                f"{state.last_sequence_number}, expected {expected_last_sequence_number}); "
                "was it published by another run? Nothing was published."
            )
        if state.key_columns is None:
            # Written before any data file, so the first file is never read as insert-only.
            self.storage.write_text(
                f"{table_folder}/{METADATA_FILE}", metadata_json(key_columns), create_only=True
            )
        # Empty files add nothing; one is kept only so an empty model still creates its table.
        to_publish = [f for f in staged if f.rows] or staged[:1]
        names = []
        for number, staged_file in enumerate(to_publish, start=state.last_sequence_number + 1):
            name = data_file_name(number)
            self.storage.rename_create_only(staged_file.path, f"{table_folder}/{name}")
            names.append(name)
        last = state.last_sequence_number + len(names)
        self._record(table_folder, model, key_columns, last, names)
        self.storage.delete_folder(staged_folder)
        return PublishedFiles(names, expected_rows, last)

    def _record(
        self, table_folder: str, model: str, key_columns: Sequence[str], last: int, names: List[str]
    ) -> None:
        record = {
            "lastSequenceNumber": last,
            "lastFiles": names,
            "keyColumns": list(key_columns),
            "model": model,
            "publishedAt": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        self.storage.write_text(
            f"{table_folder}/{PUBLISH_RECORD_FILE}", json.dumps(record, indent=2) + "\n", create_only=False
        )

    def discard(self, staged_folder: str) -> None:
        self.storage.delete_folder(staged_folder)

"""`dbt-openmirror replay`: apply a landing zone to local Delta tables the way the service does.

Per table folder: keys from `_metadata.json`; data files strictly in numeric order, stopping at
a gap; each file in one Delta commit that also records the file's number as the commit's
application transaction, so a replay killed at any point resumes without losing or repeating a
file; applied files move to `_ProcessedFiles/`. A type change or a changed keyColumns stops the
table in an error state (other tables go on); a deleted and recreated folder rebuilds it.
"""

import fcntl
import json
import shutil
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, Schema, write_deltalake
from deltalake.transaction import CommitProperties, Transaction

from dbt.adapters.openmirror.landing_zone import (
    METADATA_FILE,
    PROCESSED_FOLDERS,
    data_file_name,
    parse_sequence_number,
    table_folders,
)
from dbt.adapters.openmirror.local_mirror.apply import (
    DELETE,
    INSERT,
    ROW_MARKER,
    UPSERT,
    merge_is_exact,
    replay_rows,
    with_markers,
    without_deletes,
)
from dbt.adapters.openmirror.storage.base import LandingZoneStorage

APP_ID = "dbt-openmirror-replay"
STATUS_FILE = "Monitoring/tables.json"
PROCESSED = PROCESSED_FOLDERS[0]


class TableStopped(Exception):
    """The table cannot go on until its folder is rebuilt."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class TableStatus:
    sourceSchemaName: str
    sourceTableName: str
    status: str = "NotStarted"
    lastAppliedFile: int = 0
    pendingFiles: List[str] = field(default_factory=list)
    errorCode: Optional[str] = None
    errorMessage: Optional[str] = None
    lastSyncDateTime: Optional[str] = None
    keyColumns: Optional[List[str]] = None
    metrics: Dict[str, int] = field(default_factory=lambda: {"processedRows": 0, "processedBytes": 0})


def _delta_types(schema: pa.Schema) -> Dict[str, str]:
    """Column name -> Delta type name ('long', 'timestamp', 'decimal(10,2)', ...)."""
    names = {}
    for column in Schema.from_arrow(schema).fields:
        primitive = getattr(column.type, "type", None)
        names[column.name] = primitive if isinstance(primitive, str) else str(column.type)
    return names


class LocalMirror:
    def __init__(self, storage: LandingZoneStorage, target: Path) -> None:
        self.storage = storage
        self.target = target

    # -- status file -----------------------------------------------------------------------

    def _status_path(self) -> Path:
        return self.target / STATUS_FILE

    def read_status(self) -> Dict[Tuple[str, str], TableStatus]:
        path = self._status_path()
        if not path.exists():
            return {}
        tables = json.loads(path.read_text())["tables"]
        return {(t["sourceSchemaName"], t["sourceTableName"]): TableStatus(**t) for t in tables}

    def _write_status(self, statuses: Dict[Tuple[str, str], TableStatus]) -> None:
        path = self._status_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        document = {"tables": [asdict(s) for _, s in sorted(statuses.items())]}
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(document, indent=2) + "\n")
        temporary.replace(path)

    # -- replay ----------------------------------------------------------------------------

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        """One replay per mirror at a time, like the one replicator of a mirrored database; a
        second replay waits. The OS drops the lock when a killed replay's process ends."""
        self.target.mkdir(parents=True, exist_ok=True)
        with open(self.target / ".replay.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def replay(self) -> List[TableStatus]:
        with self._exclusive():
            return self._replay_all()

    def _replay_all(self) -> List[TableStatus]:
        statuses = self.read_status()
        for schema, table, folder in table_folders(self.storage):
            status = statuses.get((schema, table)) or TableStatus(schema, table)
            statuses[(schema, table)] = status
            self._replay_table(folder, self.target / schema / table, status)
            self._write_status(statuses)
        self._write_status(statuses)
        return [s for _, s in sorted(statuses.items())]

    def _replay_table(self, folder: str, delta_path: Path, status: TableStatus) -> None:
        table = DeltaTable(str(delta_path)) if DeltaTable.is_deltatable(str(delta_path)) else None
        applied = (table.transaction_version(APP_ID) or 0) if table else 0
        names = set(self.storage.list_names(folder))
        processed = set(self.storage.list_names(f"{folder}/{PROCESSED}"))
        if applied and data_file_name(applied) not in names | processed:
            # The folder was deleted and recreated: the mirrored table is rebuilt from file 1.
            shutil.rmtree(delta_path)
            table, applied = None, 0
            status.errorCode = status.errorMessage = status.keyColumns = None
            status.metrics = {"processedRows": 0, "processedBytes": 0}
        if applied and data_file_name(applied) in names:
            if data_file_name(applied) in processed:
                # Killed inside the move, between link and unlink: both names are the same file.
                self.storage.delete_file(f"{folder}/{data_file_name(applied)}")
            else:
                self._move_processed(folder, data_file_name(applied))  # killed before the move
        if status.errorCode:
            status.status = "Error"
            return
        try:
            keys, upsert_default = self._metadata(folder)
            if table is not None and status.keyColumns is not None and status.keyColumns != keys:
                raise TableStopped(
                    "KeyColumnsChanged",
                    f"keyColumns changed from {status.keyColumns} to {keys}; rebuild the table folder",
                )
            status.keyColumns = keys
            status.lastAppliedFile = applied
            number = applied + 1
            while data_file_name(number) in names:
                table = self._apply_file(folder, number, keys, upsert_default, table, delta_path, status)
                status.lastAppliedFile = number
                number += 1
            status.pendingFiles = sorted(n for n in names if (parse_sequence_number(n) or 0) >= number)
            status.status = "Replicating" if not status.pendingFiles else "WaitingForFile"
            if status.pendingFiles:
                status.errorMessage = f"waiting for {data_file_name(number)}: later files wait behind the gap"
        except TableStopped as stop:
            status.status, status.errorCode, status.errorMessage = "Error", stop.code, str(stop)

    def _metadata(self, folder: str) -> Tuple[List[str], bool]:
        text = self.storage.read_text(f"{folder}/{METADATA_FILE}")
        if text is None:
            return [], False
        try:
            document = json.loads(text)
        except ValueError as exc:
            raise TableStopped("InvalidMetadata", f"{METADATA_FILE} is not valid JSON: {exc}") from exc
        return list(document.get("keyColumns", [])), bool(document.get("isUpsertDefaultRowMarker"))

    def _apply_file(
        self,
        folder: str,
        number: int,
        keys: List[str],
        upsert_default: bool,
        table: Optional[DeltaTable],
        delta_path: Path,
        status: TableStatus,
    ) -> DeltaTable:
        name = data_file_name(number)
        path = f"{folder}/{name}"
        try:
            with self.storage.open_read(path) as handle:
                rows = pq.read_table(handle)
            rows = with_markers(rows, UPSERT if upsert_default else INSERT)
        except Exception as exc:
            raise TableStopped("InvalidFile", f"{name}: {exc}") from exc
        missing = [k for k in keys if k not in rows.column_names]
        if missing:
            raise TableStopped("KeyColumnMissing", f"{name}: key columns {missing} are absent")
        commit = CommitProperties(app_transactions=[Transaction(app_id=APP_ID, version=number)])
        if table is None:
            if not keys:  # insert-only table
                first = rows
            elif merge_is_exact(rows, keys, None):
                first = without_deletes(rows)
            else:
                first = pa.Table.from_pylist(replay_rows([], rows, keys), schema=rows.schema)
            write_deltalake(
                str(delta_path), first.drop_columns([ROW_MARKER]), mode="error",
                commit_properties=commit,
            )
        else:
            rows = self._aligned(rows, table, name)
            self._apply_changes(table, rows, keys, commit)
        size = self.storage.size(path)
        self._move_processed(folder, name)
        status.metrics["processedRows"] += rows.num_rows
        status.metrics["processedBytes"] += size
        status.lastSyncDateTime = datetime.now(timezone.utc).isoformat(timespec="seconds")
        return DeltaTable(str(delta_path))

    def _aligned(self, rows: pa.Table, table: DeltaTable, name: str) -> pa.Table:
        """Stop on a type change; give omitted columns NULLs of the table's type."""
        existing = table.schema().to_arrow()
        existing_schema = pa.schema(existing)
        current = _delta_types(existing_schema)
        incoming = _delta_types(rows.drop_columns([ROW_MARKER]).schema)
        changed = [(c, current[c], t) for c, t in incoming.items() if c in current and current[c] != t]
        if changed:
            described = ", ".join(f"{c}: {old} -> {new}" for c, old, new in changed)
            raise TableStopped("ColumnTypeChanged", f"{name}: column type changed ({described})")
        for column in existing_schema:
            if column.name not in rows.column_names:
                rows = rows.append_column(column.name, pa.nulls(rows.num_rows, column.type))
        return rows

    def _apply_changes(self, table: DeltaTable, rows: pa.Table, keys: List[str], commit: CommitProperties) -> None:
        if not keys:  # insert-only table
            write_deltalake(table, rows.drop_columns([ROW_MARKER]), mode="append",
                            schema_mode="merge", commit_properties=commit)
            return
        if merge_is_exact(rows, keys, table.to_pyarrow_table(columns=keys)):
            predicate = " and ".join(f"t.`{k}` = s.`{k}`" for k in keys)
            marker = f"s.`{ROW_MARKER}`"
            (
                table.merge(rows, predicate, source_alias="s", target_alias="t",
                            merge_schema=True, commit_properties=commit)
                .when_matched_delete(predicate=f"{marker} = {DELETE}")
                .when_matched_update_all(predicate=f"{marker} <> {INSERT}", except_cols=[ROW_MARKER])
                .when_not_matched_insert_all(predicate=f"{marker} <> {DELETE}", except_cols=[ROW_MARKER])
                .execute()
            )
            return
        current = table.to_pyarrow_table().to_pylist()
        replayed = replay_rows(current, rows, keys)
        columns = [f for f in rows.schema if f.name != ROW_MARKER]
        merged = pa.Table.from_pylist(replayed, schema=pa.schema(columns))
        write_deltalake(table, merged, mode="overwrite", schema_mode="merge", commit_properties=commit)

    def _move_processed(self, folder: str, name: str) -> None:
        self.storage.rename_create_only(f"{folder}/{name}", f"{folder}/{PROCESSED}/{name}")

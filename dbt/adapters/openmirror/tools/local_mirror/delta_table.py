"""One mirrored table: a Delta table written with delta-rs, and what delta-rs cannot do yet.

- Every data commit records the landing-zone file it applied (`AppliedFile`, in the commit's
  custom metadata) and its number as the commit's application transaction, so what was applied
  changes atomically with the data and is read back from the table itself.
- Column names Delta cannot hold plainly (spaces, `,;{}()=`, tabs, newlines) get column mapping
  (mode `name`, protocol reader 2 / writer 5, or the `columnMapping` feature at 3/7).
- delta-rs 1.6 cannot enable column mapping correctly (see `ensure_column_mapping`) and refuses
  any schema change on mapped tables, so the mirror commits both itself: one `metaData` action
  (with the protocol upgrade column mapping needs), written create-only as the next log version.
  If another writer took that version, the commit fails instead of overwriting it (Delta's
  optimistic concurrency).
- Reads go through delta-rs's query engine: its pyarrow dataset reads column-mapped tables as NULLs.
- delta-rs takes a local path for a URL, and not the same way at every step: no encoding of a path
  holding `%XX` reaches the same folder throughout (see `delta_path_problem`).
"""

import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder, Schema, write_deltalake
from deltalake.transaction import CommitProperties, Transaction

from dbt.adapters.openmirror.rules.column_rules import MirrorColumn, TableColumns, needs_column_mapping
from dbt.adapters.openmirror.rules.markers import DELETE, INSERT, ROW_MARKER
from dbt.adapters.openmirror.rules.metadata_files import PARQUET, SEQUENTIAL

APP_ID = "dbt-openmirror-replay"
RECORD_KEY = "dbtOpenmirrorAppliedFile"
MAPPING_MODE = "delta.columnMapping.mode"
MAX_COLUMN_ID = "delta.columnMapping.maxColumnId"
FIELD_ID = "delta.columnMapping.id"
PHYSICAL_NAME = "delta.columnMapping.physicalName"
#: Keep the whole log: it is the mirror's record of every file applied (the service's memory of
#: processed paths for LastUpdateTimeFileDetection).
TABLE_PROPERTIES = {"delta.enableExpiredLogCleanup": "false"}
# What delta-rs 1.6 misreads in a local path, plain or as a `file://` URL (checked for every
# printable ASCII character): `%XX` is decoded by some steps and not others (`%62ase` applies its
# files to `base`, `%2E%2E` reads the parent's log), `#` and `?` cut the path (the history reads
# empty), `[ ] ^ |` make it panic, `\` separates folders, controls are refused.
MISREAD_IN_PATHS = re.compile(r"[%#?\[\]^|\\\x00-\x1f\x7f]")


def delta_path_problem(resolved: Path) -> str | None:
    """Why delta-rs cannot be handed the path `resolved` (resolved, as delta-rs resolves it), or None."""
    bad = sorted({c for part in resolved.parts[1:] for c in MISREAD_IN_PATHS.findall(part)})
    if not bad:
        return None
    characters = ", ".join(repr(c) for c in bad)
    return f"the Delta table's path {resolved} contains {characters}, which delta-rs misreads in a path"


@dataclass(frozen=True)
class AppliedFile:
    """What the mirror records with the commit that applied a landing-zone file."""

    name: str
    #: The sequence number (SequentialFileName), or how many files were applied so far.
    number: int
    size: int
    modified: float
    key_columns: tuple[str, ...]
    file_detection: str
    file_format: str
    #: (size, last modified) of `_metadata.json` when the file was applied; None without one.
    metadata: tuple[int, float] | None

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "AppliedFile":
        data = json.loads(text)
        data["key_columns"] = tuple(data["key_columns"])
        data["metadata"] = tuple(data["metadata"]) if data["metadata"] is not None else None
        return cls(**data)

    def commit(self) -> CommitProperties:
        return CommitProperties(
            custom_metadata={RECORD_KEY: self.to_json()},
            app_transactions=[Transaction(app_id=APP_ID, version=self.number)],
        )


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _backquoted(name: str) -> str:
    return f"`{name}`"


class MirroredTable:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.delta = DeltaTable(str(path))

    @classmethod
    def open(cls, path: Path) -> Optional["MirroredTable"]:
        if not DeltaTable.is_deltatable(str(path)):
            return None
        table = cls(path)
        table.ensure_column_mapping()  # also for a table an interrupted create left without it
        return table

    @classmethod
    def create(cls, path: Path, columns: TableColumns, rows: pa.Table, applied: AppliedFile) -> "MirroredTable":
        """A new table holding `rows` (the table's columns, no marker): one commit with the data,
        then column mapping when a name needs it."""
        write_deltalake(
            str(path),
            rows.cast(columns.arrow_schema()),
            mode="error",
            configuration=TABLE_PROPERTIES,
            commit_properties=applied.commit(),
        )
        table = cls(path)
        table.ensure_column_mapping()
        return table

    @staticmethod
    def drop(path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)

    # -- reading ------------------------------------------------------------------------------

    def columns(self) -> TableColumns:
        return TableColumns.of(self._arrow_schema())

    def _arrow_schema(self) -> pa.Schema:
        return pa.schema(self.delta.schema().to_arrow())

    def read(self, names: Sequence[str] | None = None) -> pa.Table:
        schema = self._arrow_schema()
        wanted = list(names) if names is not None else schema.names
        query = f"select {', '.join(_quoted(n) for n in wanted)} from t"
        rows = pa.table(QueryBuilder().register("t", self.delta).execute(query).read_all())
        return rows.cast(pa.schema([schema.field(n) for n in wanted]))

    def last_applied(self) -> AppliedFile | None:
        """The file of the latest data commit (schema commits in between carry none)."""
        for limit in (3, None):
            for commit in self.delta.history(limit):
                if RECORD_KEY in commit:
                    return AppliedFile.from_json(commit[RECORD_KEY])
        number = self.delta.transaction_version(APP_ID)
        if number:  # a table of an earlier mirror, which recorded only the sequence number
            return AppliedFile(f"{number:020d}.parquet", number, -1, -1.0, (), SEQUENTIAL, PARQUET, None)
        return None

    def applied_names(self, since_version: int = -1) -> set[str]:
        """Names of the files applied by commits after `since_version`."""
        newer = self.delta.version() - since_version
        return {
            AppliedFile.from_json(commit[RECORD_KEY]).name
            for commit in self.delta.history(newer if since_version >= 0 else None)
            if RECORD_KEY in commit and commit.get("version", 0) > since_version
        }

    # -- changing -----------------------------------------------------------------------------

    def append(self, rows: pa.Table, applied: AppliedFile) -> None:
        write_deltalake(self.delta, rows, mode="append", commit_properties=applied.commit())

    def overwrite(self, rows: pa.Table, applied: AppliedFile) -> None:
        write_deltalake(self.delta, rows, mode="overwrite", commit_properties=applied.commit())

    def merge(self, changes: pa.Table, keys: Sequence[str], applied: AppliedFile) -> None:
        """One MERGE: DELETE removes, UPDATE/UPSERT replace, anything but DELETE inserts a new key."""
        predicate = " and ".join(f"t.{_backquoted(k)} = s.{_backquoted(k)}" for k in keys)
        marker = f"s.{_backquoted(ROW_MARKER)}"
        (
            self.delta.merge(changes, predicate, source_alias="s", target_alias="t", commit_properties=applied.commit())
            .when_matched_delete(predicate=f"{marker} = {DELETE}")
            .when_matched_update_all(predicate=f"{marker} <> {INSERT}", except_cols=[ROW_MARKER])
            .when_not_matched_insert_all(predicate=f"{marker} <> {DELETE}", except_cols=[ROW_MARKER])
            .execute()
        )

    def record(self, applied: AppliedFile) -> None:
        """A commit that records `applied` and changes no row. delta-rs commits nothing for a
        MERGE that changes nothing (a zero-row file, deletes of keys the table does not hold),
        and the next replay would then wait for that file, already moved away, for ever."""
        now = int(time.time() * 1000)
        commit = applied.commit()
        info = {"timestamp": now, "operation": "WRITE", "operationParameters": {}, "clientVersion": "dbt-openmirror"}
        self._commit(
            self.delta.version() + 1,
            [
                {"commitInfo": {**info, **(commit.custom_metadata or {})}},
                {"txn": {"appId": APP_ID, "version": applied.number, "lastUpdated": now}},
            ],
        )
        self.delta.update_incremental()

    def ensure_column_mapping(self) -> None:
        """Give the table column mapping if a column name needs it. delta-rs cannot: it creates
        mapped tables with table features (timestamp_ntz) without the `columnMapping` feature and
        writes their files under logical names, and it refuses to enable mapping later."""
        mapped = MAPPING_MODE in self.delta.metadata().configuration
        if not mapped and any(needs_column_mapping(name) for name in self.delta.schema().to_arrow().names):
            self.add_columns([])

    def add_columns(self, added: Sequence[MirrorColumn]) -> None:
        """Commit `added` (nullable) columns after the existing ones, as the next log version,
        enabling column mapping when a name needs it (existing columns keep their names as
        physical names, as when Delta enables mapping on a table)."""
        version = self.delta.version()
        metadata = self.delta.metadata()
        schema = json.loads(self.delta.schema().to_json())
        configuration = dict(metadata.configuration)
        names = [c["name"] for c in schema["fields"]] + [c.name for c in added]
        actions: list[dict[str, Any]] = [
            {
                "commitInfo": {
                    "timestamp": int(time.time() * 1000),
                    "operation": "ADD COLUMNS" if added else "SET TBLPROPERTIES",
                    "operationParameters": {"columns": json.dumps([c.name for c in added])},
                    "clientVersion": "dbt-openmirror",
                }
            }
        ]
        if MAPPING_MODE not in configuration and any(needs_column_mapping(n) for n in names):
            actions.append({"protocol": self._with_column_mapping()})
            configuration[MAPPING_MODE] = "name"
            for number, column in enumerate(schema["fields"], start=1):
                column["metadata"].update({FIELD_ID: number, PHYSICAL_NAME: column["name"]})
            configuration[MAX_COLUMN_ID] = str(len(schema["fields"]))
        for column in added:
            described = _delta_field(column)
            if MAPPING_MODE in configuration:
                column_id = int(configuration.get(MAX_COLUMN_ID, "0")) + 1
                configuration[MAX_COLUMN_ID] = str(column_id)
                described["metadata"] = {FIELD_ID: column_id, PHYSICAL_NAME: f"col-{uuid.uuid4()}"}
            schema["fields"].append(described)
        actions.append(
            {
                "metaData": {
                    "id": metadata.id,
                    "name": metadata.name,
                    "description": metadata.description,
                    "format": {"provider": "parquet", "options": {}},
                    "schemaString": json.dumps(schema),
                    "partitionColumns": list(metadata.partition_columns),
                    "configuration": configuration,
                    "createdTime": metadata.created_time,
                }
            }
        )
        self._commit(version + 1, actions)
        self.delta = DeltaTable(str(self.path))

    def _with_column_mapping(self) -> dict[str, Any]:
        protocol = self.delta.protocol()
        if protocol.min_writer_version >= 7:  # table features: name the feature on both sides
            return {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": sorted(set(protocol.reader_features or []) | {"columnMapping"}),
                "writerFeatures": sorted(set(protocol.writer_features or []) | {"columnMapping"}),
            }
        return {
            "minReaderVersion": max(protocol.min_reader_version, 2),
            "minWriterVersion": max(protocol.min_writer_version, 5),
        }

    def _commit(self, version: int, actions: list[dict[str, Any]]) -> None:
        log = self.path / "_delta_log"
        entry = log / f"{version:020d}.json"
        temporary = log / f".{entry.name}.{uuid.uuid4().hex}.tmp"
        temporary.write_text("".join(json.dumps(a) + "\n" for a in actions), encoding="utf-8")
        try:
            os.link(temporary, entry)  # create-only: refuses a version another writer committed
        except FileExistsError:
            raise RuntimeError(
                f"{self.path}: another writer committed version {version} meanwhile; nothing was changed"
            ) from None
        finally:
            temporary.unlink()


def _delta_field(column: MirrorColumn) -> dict[str, Any]:
    """One column as the Delta schema's JSON describes it."""
    return json.loads(Schema.from_arrow(pa.schema([column.field()])).to_json())["fields"][0]

"""`dbt-openmirror validate`: check any landing zone against the open mirroring rules, read-only.

Each finding names the file, and the row or column where there is one. Errors are what stops or
corrupts replication; warnings are what works but is probably not intended.
"""

import json
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from dbt.adapters.openmirror.landing_zone import (
    METADATA_FILE,
    PROCESSED_FOLDERS,
    PUBLISH_RECORD_FILE,
    SCRATCH_FOLDER,
    SCHEMA_FOLDER_SUFFIX,
    folder_name_problem,
    parse_sequence_number,
    table_folders,
)
from dbt.adapters.openmirror.package_publish import MANIFEST_FOLDER, staged_runs
from dbt.adapters.openmirror.storage.base import LandingZoneStorage

ROW_MARKER = "__rowMarker__"
MARKERS = {0, 1, 2, 4}
CODECS = {"SNAPPY", "GZIP", "ZSTD", "UNCOMPRESSED"}
DETECTION_STRATEGIES = {"SequentialFileName", "LastUpdateTimeFileDetection"}
ERROR, WARNING = "error", "warning"


@dataclass(frozen=True)
class Finding:
    severity: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity.upper():7} {self.where}: {self.message}"


def _type_problem(data_type: pa.DataType) -> Optional[str]:
    if pa.types.is_timestamp(data_type) and data_type.unit == "ns":
        return "timestamp in nanoseconds (the mirror keeps microseconds)"
    if pa.types.is_nested(data_type):
        return f"{data_type} values must be written as JSON strings"
    if pa.types.is_duration(data_type) or pa.types.is_time(data_type) or pa.types.is_interval(data_type):
        return f"{data_type} has no Delta type"
    if pa.types.is_null(data_type):
        return "column of type null (no values and no type)"
    return None


class LandingZoneValidator:
    def __init__(self, storage: LandingZoneStorage) -> None:
        self.storage = storage
        self.findings: List[Finding] = []

    def _add(self, severity: str, where: str, message: str) -> None:
        self.findings.append(Finding(severity, where, message))

    def validate(self) -> List[Finding]:
        # Package mode's manifest, and the runs it lists as waiting for `dbt-openmirror publish`.
        expected = {MANIFEST_FOLDER, *(run.staged_folder for run in staged_runs(self.storage))}
        self._scratch_leftovers(SCRATCH_FOLDER, expected)
        for name in self.storage.list_names(""):
            if name.endswith(SCHEMA_FOLDER_SUFFIX):
                problem = folder_name_problem(name[: -len(SCHEMA_FOLDER_SUFFIX)])
                if problem:
                    self._add(ERROR, name, f"schema folder name: {problem}")
        for _, table, folder in table_folders(self.storage):
            problem = folder_name_problem(table)
            if problem:
                self._add(ERROR, folder, f"table folder name: {problem}")
            self._table_folder(folder)
        return self.findings

    def _scratch_leftovers(self, folder: str, expected: Set[str]) -> None:
        for name in self.storage.list_names(folder):
            path = f"{folder}/{name}"
            if path in expected:
                continue
            if self.storage.list_names(path):
                self._scratch_leftovers(path, expected)
            elif name.endswith(".parquet"):
                self._add(WARNING, path, "staged file left behind by an unfinished publish")

    def _metadata(self, folder: str) -> Optional[List[str]]:
        where = f"{folder}/{METADATA_FILE}"
        text = self.storage.read_text(where)
        if text is None:
            self._add(WARNING, folder, f"no {METADATA_FILE}: the table is insert-only")
            return []
        try:
            document = json.loads(text)
        except ValueError as exc:
            self._add(ERROR, where, f"not valid JSON ({exc})")
            return None
        if not isinstance(document, dict):
            self._add(ERROR, where, "must be a JSON object")
            return None
        keys = document.get("keyColumns", [])
        if not isinstance(keys, list) or not all(isinstance(k, str) and k for k in keys):
            self._add(ERROR, where, f"keyColumns must be a list of column names, got {keys!r}")
            return None
        strategy = document.get("fileDetectionStrategy", "SequentialFileName")
        if strategy not in DETECTION_STRATEGIES:
            self._add(ERROR, where, f"unknown fileDetectionStrategy {strategy!r}")
        if not isinstance(document.get("isUpsertDefaultRowMarker", False), bool):
            self._add(ERROR, where, "isUpsertDefaultRowMarker must be true or false")
        record = self.storage.read_text(f"{folder}/{PUBLISH_RECORD_FILE}")
        if record is not None:
            published_keys = json.loads(record).get("keyColumns")
            if published_keys is not None and published_keys != keys:
                self._add(ERROR, where, f"keyColumns {keys} differ from {published_keys} that the "
                          "files were published with: the key of a table can never change")
        return keys

    def _table_folder(self, folder: str) -> None:
        keys = self._metadata(folder)
        numbers: Dict[int, str] = {}
        pending = []
        for name in self.storage.list_names(folder):
            path = f"{folder}/{name}"
            number = parse_sequence_number(name)
            if name.startswith("_"):
                continue
            if number is None:
                kind = "folder" if self.storage.list_names(path) else "file"
                self._add(ERROR, path, f"{kind} name is not 20 digits + .parquet: the mirror will not apply it")
                continue
            numbers[number] = path
            pending.append(number)
        for processed in PROCESSED_FOLDERS:
            for name in self.storage.list_names(f"{folder}/{processed}"):
                number = parse_sequence_number(name)
                if number is not None:
                    numbers.setdefault(number, f"{folder}/{processed}/{name}")
        ordered = sorted(numbers)
        for before, after in zip(ordered, ordered[1:]):
            if after != before + 1:
                missing = f"{before + 1:020d}.parquet"
                self._add(ERROR, folder, f"{missing} is missing: every later file waits behind the gap")
        column_types: Dict[str, tuple] = {}
        for number in sorted(pending):
            self._data_file(numbers[number], keys, column_types)

    def _data_file(self, path: str, keys: Optional[Sequence[str]], column_types: Dict[str, tuple]) -> None:
        if self.storage.size(path) == 0:
            self._add(ERROR, path, "zero-byte file: the table stalls on it")
            return
        with self.storage.open_read(path) as handle:
            try:
                parquet = pq.ParquetFile(handle)
                self._file_contents(path, parquet, keys, column_types)
            except (pa.ArrowException, OSError) as exc:
                self._add(ERROR, path, f"not readable Parquet ({exc})")

    def _file_contents(self, path: str, parquet: pq.ParquetFile, keys, column_types) -> None:
        schema = parquet.schema_arrow
        metadata = parquet.metadata
        for group in range(metadata.num_row_groups):
            for index in range(metadata.num_columns):
                column = metadata.row_group(group).column(index)
                if column.compression not in CODECS:
                    self._add(ERROR, path, f"column {column.path_in_schema}: {column.compression} compression is not accepted")
                if column.physical_type == "INT96":
                    self._add(ERROR, path, f"column {column.path_in_schema}: INT96 timestamps; write microseconds")
        for field in schema:
            problem = _type_problem(field.type)
            if problem and field.name != ROW_MARKER:
                self._add(ERROR, path, f"column {field.name}: {problem}")
            previous = column_types.get(field.name)
            if previous and previous[0] != field.type and field.name != ROW_MARKER:
                self._add(ERROR, path, f"column {field.name} is {field.type} here but {previous[0]} in "
                          f"{previous[1]}: a type change stops the table")
            column_types.setdefault(field.name, (field.type, path))
        names = schema.names
        if ROW_MARKER not in names and keys and ROW_MARKER in column_types:
            # Marker-free files are the recommended full load; after marked files they insert
            # keys again (INSERT does not deduplicate).
            self._add(WARNING, path, f"no {ROW_MARKER} column after files with one: every row is an INSERT")
        if ROW_MARKER in names:
            marker_type = schema.field(ROW_MARKER).type
            if not pa.types.is_integer(marker_type):
                self._add(ERROR, path, f"{ROW_MARKER} is {marker_type}, not an integer")
                return
            if marker_type != pa.int32():
                self._add(WARNING, path, f"{ROW_MARKER} is {marker_type}; int32 is what the mirror's samples write")
            if names[-1] != ROW_MARKER:
                self._add(WARNING, path, f"{ROW_MARKER} is not the last column, as the current documentation asks")
        missing = [k for k in keys or [] if k not in names]
        if missing:
            self._add(ERROR, path, f"key columns {missing} are absent")
            return
        self._rows(path, parquet, list(keys or []), ROW_MARKER in names)

    def _rows(self, path: str, parquet: pq.ParquetFile, keys: List[str], has_marker: bool) -> None:
        offset = 0
        reported = set()
        for batch in parquet.iter_batches(batch_size=65536):
            table = pa.Table.from_batches([batch])
            markers = table.column(ROW_MARKER) if has_marker else None
            if markers is not None and "marker" not in reported:
                bad = pc.or_kleene(pc.is_null(markers), pc.invert(pc.is_in(markers, pa.array(sorted(MARKERS)))))
                row = _first(bad)
                if row is not None:
                    reported.add("marker")
                    value = markers[row].as_py()
                    self._add(ERROR, f"{path} row {offset + row}", f"{ROW_MARKER} is {value}, not 0, 1, 2 or 4")
            for key in keys:
                row = _first(pc.is_null(table.column(key)))
                if row is not None and key not in reported:
                    reported.add(key)
                    self._add(ERROR, f"{path} row {offset + row}", f"key column {key} is NULL")
            others = [c for c in table.column_names if c not in keys and c != ROW_MARKER]
            if markers is not None and keys and others and "full" not in reported:
                updates = pc.is_in(markers, pa.array([1, 4], markers.type))
                empty = updates
                for column in others:
                    empty = pc.and_kleene(empty, pc.is_null(table.column(column)))
                row = _first(empty)
                if row is not None:
                    reported.add("full")
                    self._add(WARNING, f"{path} row {offset + row}",
                              "UPDATE/UPSERT row with only its key set: updates must carry the full row")
            offset += batch.num_rows


def _first(mask: pa.ChunkedArray) -> Optional[int]:
    index = pc.index(mask, True).as_py()
    return None if index is None or index < 0 else index


def validate(storage: LandingZoneStorage) -> List[Finding]:
    return LandingZoneValidator(storage).validate()

"""The landing zone's small JSON files, parsed in one place for the mirror, the validator and the
publisher: a table folder's `_metadata.json` (spec section 2) and the root's `_partnerEvents.json`
(spec section 1).

Field names are matched regardless of case: one official example spells `KeyColumns`, and the
documentation does not say that case matters (uncertain). A field spelled otherwise than the
documentation is a warning, one field spelled twice is an error, and an unknown field is a warning
(the service ignores it, so a misspelt field silently does nothing). The JSON must be strict.
"""

import codecs
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.openmirror.rules.markers import ROW_MARKER

SEQUENTIAL = "SequentialFileName"
LAST_UPDATE_TIME = "LastUpdateTimeFileDetection"
PARQUET = "Parquet"
DELIMITED_TEXT = "DelimitedText"
#: The types a delimited-text table declares in `SchemaDefinition.Columns[].DataType`.
DELIMITED_TEXT_TYPES = (
    "Double",
    "Single",
    "Int16",
    "Int32",
    "Int64",
    "DateTime",
    "IDate",
    "ITime",
    "String",
    "Boolean",
    "ByteArray",
)
#: The declared types a row marker may have.
MARKER_TYPES = ("Int16", "Int32", "Int64")
#: Row separators the delimited-text reader understands (any of them in one file).
ROW_SEPARATORS = ("\n", "\r\n", "\r")

_TABLE_FIELDS = (
    "keyColumns",
    "fileDetectionStrategy",
    "isUpsertDefaultRowMarker",
    "FileFormat",
    "FileExtension",
    "FileFormatTypeProperties",
    "SchemaDefinition",
)
_TEXT_PROPERTIES = (
    "FirstRowAsHeader",
    "RowSeparator",
    "ColumnSeparator",
    "QuoteCharacter",
    "EscapeCharacter",
    "NullValue",
    "Encoding",
)
_PARTNER_FIELDS = ("partnerName", "sourceInfo")
_SOURCE_INFO_FIELDS = ("sourceType", "sourceVersion", "additionalInformation")


@dataclass(frozen=True)
class DeclaredColumn:
    name: str
    #: One of DELIMITED_TEXT_TYPES, spelled as documented.
    data_type: str
    nullable: bool = True


@dataclass(frozen=True)
class DelimitedText:
    """How a delimited-text table's files are read. Defaults are those of Azure Data Factory's
    DelimitedText format, whose property names these are (uncertain: not documented for mirroring)."""

    extension: str
    columns: tuple[DeclaredColumn, ...]
    column_separator: str = ","
    #: None: a line ends with "\n", "\r\n" or "\r".
    row_separator: str | None = None
    #: None: fields are not quoted.
    quote_character: str | None = '"'
    #: None: no escape character.
    escape_character: str | None = "\\"
    null_value: str = ""
    encoding: str = "utf-8"


@dataclass(frozen=True)
class TableMetadata:
    """A table folder's `_metadata.json`; the defaults are a table without one."""

    key_columns: tuple[str, ...] = ()
    file_detection: str = SEQUENTIAL
    upsert_default: bool = False
    delimited_text: DelimitedText | None = None

    @property
    def file_format(self) -> str:
        return DELIMITED_TEXT if self.delimited_text else PARQUET

    @property
    def extension(self) -> str:
        """The data files' extension, without the dot."""
        return self.delimited_text.extension if self.delimited_text else "parquet"

    def contract_differences(self) -> list[str]:
        """What this contract declares that changes how the mirror reads Parquet files named by
        sequence number, the files dbt-openmirror publishes ("field 'value'", none: it reads them
        as dbt-openmirror publishes them; `isUpsertDefaultRowMarker` changes no result)."""
        differences = []
        if self.file_format != PARQUET:
            differences.append(f"FileFormat '{self.file_format}'")
        if self.file_detection != SEQUENTIAL:
            differences.append(f"fileDetectionStrategy '{self.file_detection}'")
        return differences


@dataclass
class Parsed:
    """What a file says, or None when it has errors; warnings either way."""

    metadata: TableMetadata | None = None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class _Object:
    """One JSON object's documented fields, found regardless of case."""

    def __init__(self, document: dict[str, Any], where: str, documented: Sequence[str], parsed: Parsed) -> None:
        self.values: dict[str, Any] = {}
        spellings: dict[str, list[str]] = {}
        for name in document:
            spellings.setdefault(name.lower(), []).append(name)
        for names in spellings.values():
            known = next((d for d in documented if d.lower() == names[0].lower()), None)
            if known is None:
                parsed.warnings.append(f"unknown field {where}{names[0]!r} is ignored")
            elif len(names) > 1:
                parsed.errors.append(f"{where}{known!r} is given {len(names)} times, spelled {names}")
            else:
                if names[0] != known:
                    parsed.warnings.append(
                        f"{where}{names[0]!r} is spelled {known!r} in the documentation "
                        "(accepted here regardless of case; the service may not)"
                    )
                self.values[known] = document[names[0]]

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)


def load_json(text: str, **options: Any) -> Any:
    """json.loads for files anyone may write: a document nested deeper than Python's parser goes
    is invalid JSON (ValueError) like any other, not a RecursionError."""
    try:
        return json.loads(text, **options)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _strict_json(text: str) -> Any:
    """json.loads refusing NaN/Infinity and repeated fields (both silently accepted by Python)."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        names = [name for name, _ in items]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"field {repeated[0]!r} appears more than once")
        return dict(items)

    def constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return load_json(text, object_pairs_hook=pairs, parse_constant=constant)


def _json_object(text: str, documented: Sequence[str]) -> tuple[Parsed, _Object | None]:
    """The file's top-level object (None when the text is not one), and what is wrong with it."""
    parsed = Parsed()
    try:
        document = _strict_json(text)
    except ValueError as exc:
        parsed.errors.append(f"not valid JSON ({exc})")
        return parsed, None
    if not isinstance(document, dict):
        parsed.errors.append("must be a JSON object")
        return parsed, None
    return parsed, _Object(document, "", documented, parsed)


def _choice(value: Any, where: str, choices: Sequence[str], parsed: Parsed) -> str | None:
    """The documented spelling of `value` among `choices` (matched regardless of case)."""
    match = next((c for c in choices if isinstance(value, str) and c.lower() == value.lower()), None)
    if match is None:
        parsed.errors.append(f"{where} is {value!r}; expected one of {', '.join(choices)}")
    elif value != match:
        parsed.warnings.append(f"{where} {value!r} is spelled {match!r} in the documentation")
    return match


def _key_columns(value: Any, parsed: Parsed) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(k, str) and k for k in value):
        parsed.errors.append(f"keyColumns must be a list of column names, got {value!r}")
        return ()
    lowered = [k.lower() for k in value]
    repeated = sorted({k for k in value if lowered.count(k.lower()) > 1})
    if repeated:
        parsed.errors.append(f"keyColumns lists {repeated} more than once")
    return tuple(value)


def _character(properties: _Object, name: str, default: str | None, parsed: Parsed) -> str | None:
    """A one-character property; "" means none."""
    value = properties.get(name, default)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) != 1:
        parsed.errors.append(f"FileFormatTypeProperties.{name} must be one character, got {value!r}")
    return value


def _declared_columns(value: Any, parsed: Parsed) -> tuple[DeclaredColumn, ...]:
    definition = _Object(value, "SchemaDefinition.", ("Columns",), parsed) if isinstance(value, dict) else None
    columns = definition.get("Columns") if definition else None
    if not isinstance(columns, list) or not columns:
        parsed.errors.append("SchemaDefinition.Columns must list the columns of a delimited-text table")
        return ()
    declared = []
    for index, entry in enumerate(columns):
        where = f"SchemaDefinition.Columns[{index}]."
        if not isinstance(entry, dict):
            parsed.errors.append(f"{where[:-1]} must be an object with Name and DataType")
            continue
        column = _Object(entry, where, ("Name", "DataType", "IsNullable"), parsed)
        name, nullable = column.get("Name"), column.get("IsNullable", True)
        if not isinstance(name, str) or not name:
            parsed.errors.append(f"{where}Name must be a column name, got {name!r}")
            continue
        data_type = _choice(column.get("DataType"), f"{where}DataType of {name}", DELIMITED_TEXT_TYPES, parsed)
        if name == ROW_MARKER:  # every file carries it; declaring it adds no column
            if data_type in MARKER_TYPES:
                parsed.warnings.append(
                    f"{where[:-1]} declares {ROW_MARKER}, the row marker, which is not a column of the table: "
                    "read as the marker"
                )
            elif data_type is not None:
                parsed.errors.append(f"{where[:-1]} declares {ROW_MARKER} as {data_type}: the row marker is an integer")
            continue
        if not isinstance(nullable, bool):
            parsed.errors.append(f"{where}IsNullable must be true or false, got {nullable!r}")
        declared.append(DeclaredColumn(name, data_type or "String", nullable is not False))
    lowered = [c.name.lower() for c in declared]
    repeated = sorted({c.name for c in declared if lowered.count(c.name.lower()) > 1})
    if repeated:
        parsed.errors.append(f"SchemaDefinition declares {repeated} more than once (names are case-insensitive)")
    return tuple(declared)


def _delimited_text(table: _Object, keys: Sequence[str], parsed: Parsed) -> DelimitedText | None:
    extension = table.get("FileExtension")
    if not isinstance(extension, str) or not extension.strip("."):
        parsed.errors.append(f'FileExtension is required for DelimitedText (e.g. "csv"), got {extension!r}')
        return None
    extension = extension.lstrip(".")
    raw = table.get("FileFormatTypeProperties", {})
    if not isinstance(raw, dict):
        parsed.errors.append("FileFormatTypeProperties must be an object")
        raw = {}
    properties = _Object(raw, "FileFormatTypeProperties.", _TEXT_PROPERTIES, parsed)
    if properties.get("FirstRowAsHeader") is not True:
        parsed.errors.append("FileFormatTypeProperties.FirstRowAsHeader must be true: the header row names the columns")
    row_separator = properties.get("RowSeparator")
    if row_separator is not None and row_separator not in ROW_SEPARATORS:
        parsed.errors.append(
            f"FileFormatTypeProperties.RowSeparator {row_separator!r} cannot be read here (only \\n, \\r\\n or \\r)"
        )
    null_value = properties.get("NullValue", "")
    if not isinstance(null_value, str):
        parsed.errors.append(f"FileFormatTypeProperties.NullValue must be a string, got {null_value!r}")
        null_value = ""
    encoding = properties.get("Encoding", "UTF-8")
    try:
        codecs.lookup(encoding)
    except (LookupError, TypeError):
        parsed.errors.append(f"FileFormatTypeProperties.Encoding {encoding!r} is not a known encoding")
        encoding = "utf-8"
    columns = _declared_columns(table.get("SchemaDefinition"), parsed)
    declared = {c.name for c in columns}
    missing = [k for k in keys if k not in declared]
    if columns and missing:
        parsed.errors.append(f"keyColumns {missing} are not declared in SchemaDefinition.Columns")
    return DelimitedText(
        extension=extension,
        columns=columns,
        column_separator=_character(properties, "ColumnSeparator", ",", parsed) or ",",
        row_separator=row_separator,
        quote_character=_character(properties, "QuoteCharacter", '"', parsed),
        escape_character=_character(properties, "EscapeCharacter", "\\", parsed),
        null_value=null_value,
        encoding=encoding,
    )


def parse_table_metadata(text: str) -> Parsed:
    """A `_metadata.json` text: the table's contract, or the errors that keep it from having one."""
    parsed, table = _json_object(text, _TABLE_FIELDS)
    if table is None:
        return parsed
    keys = _key_columns(table.get("keyColumns", []), parsed)
    detection = _choice(
        table.get("fileDetectionStrategy", SEQUENTIAL), "fileDetectionStrategy", (SEQUENTIAL, LAST_UPDATE_TIME), parsed
    )
    upsert_default = table.get("isUpsertDefaultRowMarker", False)
    if not isinstance(upsert_default, bool):
        parsed.errors.append(f"isUpsertDefaultRowMarker must be true or false, got {upsert_default!r}")
    file_format = _choice(table.get("FileFormat", PARQUET), "FileFormat", (PARQUET, DELIMITED_TEXT), parsed)
    delimited_text = None
    if file_format == DELIMITED_TEXT:
        delimited_text = _delimited_text(table, keys, parsed)
    else:
        extension = table.get("FileExtension")
        if extension is not None and str(extension).lstrip(".").lower() != "parquet":
            parsed.errors.append(f"FileExtension {extension!r} with Parquet files: Parquet files end with .parquet")
        for ignored in ("FileFormatTypeProperties", "SchemaDefinition"):
            if ignored in table.values:
                parsed.warnings.append(
                    f"{ignored} is read for DelimitedText tables only; Parquet files carry their own types"
                )
    if not parsed.errors:
        parsed.metadata = TableMetadata(keys, detection or SEQUENTIAL, upsert_default is True, delimited_text)
    return parsed


def parse_partner_events(text: str) -> Parsed:
    """`_partnerEvents.json`: who publishes (`partnerName`, and `sourceInfo` about the source)."""
    parsed, events = _json_object(text, _PARTNER_FIELDS)
    if events is None:
        return parsed
    name = events.get("partnerName")
    if not isinstance(name, str) or not name.strip():
        parsed.errors.append(f"partnerName must name the publisher, got {name!r}")
    source = events.get("sourceInfo")
    if source is None:
        parsed.warnings.append("no sourceInfo (sourceType, sourceVersion, additionalInformation)")
    elif not isinstance(source, dict):
        parsed.errors.append(f"sourceInfo must be an object, got {source!r}")
    else:
        info = _Object(source, "sourceInfo.", _SOURCE_INFO_FIELDS, parsed)
        for text_field in ("sourceType", "sourceVersion"):
            value = info.get(text_field)
            if value is not None and not isinstance(value, str):
                parsed.errors.append(f"sourceInfo.{text_field} must be a string, got {value!r}")
        additional = info.get("additionalInformation")
        if additional is not None and not isinstance(additional, dict):
            parsed.errors.append(f"sourceInfo.additionalInformation must be an object, got {additional!r}")
    return parsed

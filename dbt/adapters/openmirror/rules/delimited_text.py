"""Reading a delimited-text (CSV) data file as its table's `_metadata.json` declares it (spec
section 2), for the mirror and the validator.

The header row names the columns: exactly the declared ones (any order) plus `__rowMarker__`,
which a delimited-text file always carries. Fields are read as text and converted per declared
type, so a bad value is reported with its column, row and text. An unquoted field equal to
`NullValue` is NULL (a quoted one is text), and so is an empty field of a column that is not text.
Decisions where the documentation is silent
(uncertain): `DateTime` is a Delta `timestamp` (text without a zone offset is UTC), `ITime` is
kept as its text (Delta has no time-of-day type), `ByteArray` is the field's bytes as written.
"""

import re
from typing import BinaryIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as csv

from dbt.adapters.openmirror.rules.markers import ROW_MARKER
from dbt.adapters.openmirror.rules.metadata_files import DelimitedText

DECLARED_TYPES: dict[str, pa.DataType] = {
    "Double": pa.float64(),
    "Single": pa.float32(),
    "Int16": pa.int16(),
    "Int32": pa.int32(),
    "Int64": pa.int64(),
    "DateTime": pa.timestamp("us", tz="UTC"),
    "IDate": pa.date32(),
    "ITime": pa.string(),
    "String": pa.string(),
    "Boolean": pa.bool_(),
    "ByteArray": pa.binary(),
}
_ZONE_OFFSET = r"(Z|[+-]\d\d(:?\d\d)?)$"
_TIME_OF_DAY = re.compile(r"^\d{1,2}:\d\d(:\d\d(\.\d{1,7})?)?$")


class DelimitedTextError(ValueError):
    """A delimited-text file that does not match its declaration; the message says where."""


def declared_schema(text: DelimitedText) -> pa.Schema:
    """The columns every file of the table has, as the mirror holds them."""
    return pa.schema([pa.field(c.name, DECLARED_TYPES[c.data_type], c.nullable) for c in text.columns])


def read_delimited_text(handle: BinaryIO, text: DelimitedText) -> pa.Table:
    """The file's rows: the declared columns in declared order, then the row marker (int32)."""
    as_text = {name: pa.string() for name in [c.name for c in text.columns] + [ROW_MARKER]}
    try:
        raw = csv.read_csv(
            handle,
            read_options=csv.ReadOptions(encoding=text.encoding),
            parse_options=csv.ParseOptions(
                delimiter=text.column_separator,
                quote_char=text.quote_character or False,
                # An escape equal to the quote means doubled quotes (RFC 4180), which pyarrow reads
                # without an escape character.
                escape_char=text.escape_character
                if text.escape_character not in (None, "", text.quote_character)
                else False,
                newlines_in_values=text.quote_character is not None,
            ),
            convert_options=csv.ConvertOptions(
                column_types=as_text,
                null_values=[text.null_value],
                strings_can_be_null=True,
                quoted_strings_can_be_null=False,
            ),
        )
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        raise DelimitedTextError(f"not readable as declared in _metadata.json ({exc})") from exc
    _check_header(raw.column_names, text)
    schema = declared_schema(text).append(pa.field(ROW_MARKER, pa.int32()))
    data_types = [c.data_type for c in text.columns] + ["Int32"]
    arrays = [_converted(raw.column(f.name), f.name, t) for f, t in zip(schema, data_types, strict=True)]
    return pa.Table.from_arrays(arrays, schema=schema)


def _check_header(names: list[str], text: DelimitedText) -> None:
    declared = [c.name for c in text.columns] + [ROW_MARKER]
    repeated = sorted({n for n in names if names.count(n) > 1})
    missing = [n for n in declared if n not in names]
    extra = [n for n in names if n not in declared]
    details = [
        f"{what} {which}"
        for what, which in (("missing", missing), ("not declared", extra), ("repeated", repeated))
        if which
    ]
    if details:
        raise DelimitedTextError(
            f"header row {names} does not match SchemaDefinition.Columns + {ROW_MARKER} ({'; '.join(details)}): "
            "a delimited-text table's columns cannot change"
        )


def _converted(values: pa.ChunkedArray, name: str, data_type: str) -> pa.ChunkedArray:
    """Text converted to its declared type; the first value that does not convert is reported."""
    if data_type == "String":
        return values
    if data_type == "ByteArray":
        return values.cast(pa.binary())
    values = pc.if_else(pc.equal(values, ""), None, values)  # an empty field of a typed column is NULL
    if data_type == "ITime":
        for row, value in enumerate(values.to_pylist()):
            if value is not None and not _TIME_OF_DAY.match(value):
                raise DelimitedTextError(f"column {name} row {row}: {value!r} is not a time of day (hh:mm:ss)")
        return values
    target = DECLARED_TYPES[data_type]
    try:
        if data_type != "DateTime":
            return values.cast(target)
        with_zone = pc.fill_null(pc.match_substring_regex(values, _ZONE_OFFSET), False)
        zoned = pc.if_else(with_zone, values, None).cast(target)
        utc = pc.if_else(with_zone, None, values).cast(pa.timestamp(target.unit)).cast(target)
        return pc.coalesce(zoned, utc)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    for row, value in enumerate(values.to_pylist()):
        if value is None:
            continue
        zoned = data_type == "DateTime" and re.search(_ZONE_OFFSET, value)
        try:
            pa.scalar(value).cast(target if zoned or data_type != "DateTime" else pa.timestamp(target.unit))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise DelimitedTextError(f"column {name} row {row}: {value!r} is not {data_type}") from None
    raise DelimitedTextError(f"column {name}: the values are not {data_type}")

"""Which columns a mirrored table can hold, and which schema changes between files it takes
(spec sections 3 and 5). One place for the mirror and the validator.

A data file's column is held as the Delta type its Arrow type maps to (`mirror_type`); a type
without a faithful Delta equivalent (unsigned integers, time of day, decimals wider than 38
digits, nanosecond timestamps, nested values, ...) is refused with the reason. Delta column names
are case-insensitive, so two columns differing only in case cannot coexist, and a column respelled
in case is a rename the table cannot hold.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from dbt.adapters.openmirror.rules.markers import ROW_MARKER

#: Compression codecs the service reads (spec section 3).
CODECS = ("SNAPPY", "GZIP", "ZSTD", "UNCOMPRESSED")
MAX_DECIMAL_PRECISION = 38
#: Characters Delta accepts in a column name only with column mapping.
MAPPED_NAME_CHARACTERS = set(" ,;{}()\n\t=")


class UnsupportedType(ValueError):
    """An Arrow type the mirror cannot hold; the message says why and what to write instead."""


@dataclass(frozen=True)
class Problem:
    """Why the mirror cannot take a file: a status error code and a message naming the column."""

    code: str
    message: str


def mirror_type(data_type: pa.DataType) -> pa.DataType:
    """The Arrow type a column of `data_type` is held as, or UnsupportedType."""
    if pa.types.is_dictionary(data_type):
        return mirror_type(data_type.value_type)
    if isinstance(data_type, pa.ExtensionType):
        return mirror_type(data_type.storage_type)
    if pa.types.is_boolean(data_type) or pa.types.is_date32(data_type):
        return data_type
    if pa.types.is_unsigned_integer(data_type):
        raise UnsupportedType(f"unsigned integer ({data_type}) has no Delta type; write a signed integer wide enough")
    if pa.types.is_integer(data_type) or pa.types.is_float32(data_type) or pa.types.is_float64(data_type):
        return data_type
    if pa.types.is_float16(data_type):
        raise UnsupportedType("half-precision float has no Delta type; write float or double")
    if pa.types.is_decimal(data_type):
        if data_type.precision > MAX_DECIMAL_PRECISION or data_type.scale < 0:
            raise UnsupportedType(
                f"decimal({data_type.precision},{data_type.scale}) is outside Delta's decimals (at most "
                f"{MAX_DECIMAL_PRECISION} digits, scale 0 or more)"
            )
        return pa.decimal128(data_type.precision, data_type.scale)
    if pa.types.is_string(data_type) or pa.types.is_large_string(data_type) or pa.types.is_string_view(data_type):
        return pa.string()
    if (
        pa.types.is_binary(data_type)
        or pa.types.is_large_binary(data_type)
        or pa.types.is_binary_view(data_type)
        or pa.types.is_fixed_size_binary(data_type)
    ):
        return pa.binary()
    if pa.types.is_date64(data_type):
        return pa.date32()
    if pa.types.is_timestamp(data_type):
        if data_type.unit == "ns":
            raise UnsupportedType("timestamp in nanoseconds (the mirror keeps microseconds); write microseconds")
        # Parquet keeps an instant adjusted to UTC whatever zone the writer named: one Delta type.
        return pa.timestamp("us", tz="UTC" if data_type.tz else None)
    if pa.types.is_time(data_type):
        raise UnsupportedType(f"time of day ({data_type}) has no Delta type; write it as a string")
    if pa.types.is_nested(data_type):
        raise UnsupportedType(f"{data_type} values must be written as JSON strings")
    if pa.types.is_null(data_type):
        raise UnsupportedType("column of type null (no values and no type); give the column a type")
    raise UnsupportedType(f"{data_type} has no Delta type")


def delta_type_name(data_type: pa.DataType) -> str:
    """The Delta name of a type `mirror_type` returned: 'long', 'decimal(10,2)', 'timestamp', ..."""
    if pa.types.is_decimal(data_type):
        return f"decimal({data_type.precision},{data_type.scale})"
    if pa.types.is_timestamp(data_type):
        return "timestamp" if data_type.tz else "timestamp_ntz"
    names = {
        pa.bool_(): "boolean",
        pa.int8(): "byte",
        pa.int16(): "short",
        pa.int32(): "integer",
        pa.int64(): "long",
        pa.float32(): "float",
        pa.float64(): "double",
        pa.string(): "string",
        pa.binary(): "binary",
        pa.date32(): "date",
    }
    return names.get(data_type, str(data_type))


def needs_column_mapping(name: str) -> bool:
    return bool(set(name) & MAPPED_NAME_CHARACTERS)


def schema_problems(schema: pa.Schema) -> list[Problem]:
    """What keeps the mirror from holding a file's columns: types, a name given twice or differing
    only in case, a row marker that is not an integer or not spelled as the marker. Each message
    names the column."""
    problems = []
    by_lower: dict[str, str] = {}
    seen: set[str] = set()
    for data_field in schema:
        if data_field.name in seen:
            twice = f"column {data_field.name} appears twice: a table holds each column once"
            problems.append(Problem("DuplicateColumnNames", twice))
            continue
        seen.add(data_field.name)
        if data_field.name != ROW_MARKER and data_field.name.lower() == ROW_MARKER.lower():
            problems.append(
                Problem(
                    "InvalidRowMarker",
                    f"column {data_field.name} differs from {ROW_MARKER} only in case: the documentation names "
                    "the marker as spelled, Delta's column names ignore case, so the service may read it as the "
                    f"marker or as data. Name it {ROW_MARKER}",
                )
            )
            continue
        if data_field.name == ROW_MARKER:
            if not pa.types.is_integer(data_field.type):
                problems.append(Problem("InvalidRowMarker", f"{ROW_MARKER} is {data_field.type}, not an integer"))
            continue
        try:
            mirror_type(data_field.type)
        except UnsupportedType as exc:
            problems.append(Problem("UnsupportedColumnType", f"column {data_field.name}: {exc}"))
        other = by_lower.setdefault(data_field.name.lower(), data_field.name)
        if other != data_field.name:
            problems.append(
                Problem(
                    "DuplicateColumnNames",
                    f"columns {other} and {data_field.name} differ only in case: Delta column names are "
                    "case-insensitive, so one table cannot hold both",
                )
            )
    return problems


def absent_keys(keys: Sequence[str], names: Sequence[str]) -> str | None:
    """Why a file's columns lack some of `keyColumns`, naming a column that differs only in case:
    whether the service matches `keyColumns` without case is not documented, so it is not matched."""
    missing = [k for k in keys if k not in names]
    if not missing:
        return None
    by_lower = {name.lower(): name for name in names}
    respelled = [f"{k} as {by_lower[k.lower()]}" for k in missing if k.lower() in by_lower]
    hint = (
        f" (the file spells {', '.join(respelled)}: write keyColumns as the columns are spelled, since "
        "whether the service matches them without case is not documented)"
        if respelled
        else ""
    )
    return f"key columns {missing} are absent{hint}"


def parquet_problems(metadata: pq.FileMetaData) -> list[Problem]:
    """What the service refuses in a Parquet file's layout: codecs, INT96 timestamps."""
    problems: dict[str, Problem] = {}
    for group in range(metadata.num_row_groups):
        for index in range(metadata.num_columns):
            column = metadata.row_group(group).column(index)
            name = column.path_in_schema
            if column.compression not in CODECS:
                problems.setdefault(
                    f"{name} codec",
                    Problem(
                        "UnsupportedCompression", f"column {name}: {column.compression} compression is not accepted"
                    ),
                )
            if column.physical_type == "INT96":
                problems.setdefault(
                    f"{name} int96",
                    Problem("UnsupportedColumnType", f"column {name}: INT96 timestamps; write microseconds"),
                )
    return list(problems.values())


@dataclass(frozen=True)
class MirrorColumn:
    name: str
    data_type: pa.DataType
    nullable: bool = True

    def field(self) -> pa.Field:
        return pa.field(self.name, self.data_type, self.nullable)


@dataclass(frozen=True)
class TableColumns:
    """A mirrored table's columns, in order."""

    columns: tuple[MirrorColumn, ...] = ()

    @classmethod
    def of(cls, schema: pa.Schema) -> "TableColumns":
        """The columns a file (or a Delta table's schema) gives; types must be held (see
        `schema_problems`). The row marker is not a column."""
        return cls(tuple(MirrorColumn(f.name, mirror_type(f.type), f.nullable) for f in schema if f.name != ROW_MARKER))

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([c.field() for c in self.columns])

    def changed_by(self, incoming: "TableColumns", may_add: bool = True) -> tuple["TableColumns", list[Problem]]:
        """The table's columns after a file with `incoming` columns, and why the table cannot take
        that file (spec section 5). Added columns are nullable: earlier rows have no value."""
        if not self.columns:
            return incoming, []
        problems = []
        own = {c.name.lower(): c for c in self.columns}
        added = []
        for column in incoming.columns:
            present = own.get(column.name.lower())
            if present is None:
                added.append(MirrorColumn(column.name, column.data_type, True))
            elif present.name != column.name:
                problems.append(
                    Problem(
                        "ColumnCaseChanged",
                        f"column {present.name} is spelled {column.name} here: a column respelled in case is a "
                        "rename (drop + add) that one Delta table cannot hold; rebuild the table",
                    )
                )
            elif present.data_type != column.data_type:
                problems.append(
                    Problem(
                        "ColumnTypeChanged",
                        f"column {column.name} changed type ({column.name}: {delta_type_name(present.data_type)} -> "
                        f"{delta_type_name(column.data_type)}); the table stops until it is rebuilt",
                    )
                )
        names = {c.name.lower() for c in incoming.columns}
        for column in self.columns:
            if column.name.lower() not in names and not column.nullable:
                problems.append(
                    Problem(
                        "SchemaMergeFailed",
                        f"column {column.name} is not nullable and is omitted: the schema merge fails; "
                        "rebuild the table",
                    )
                )
        if added and not may_add:
            problems.append(
                Problem(
                    "SchemaChangeNotSupported",
                    f"columns {[c.name for c in added]} are not in the table, whose schema cannot change",
                )
            )
        return TableColumns(self.columns + tuple(added)), problems


def first_null(rows: pa.Table, names: Sequence[str], among: pa.ChunkedArray | None = None) -> tuple[str, int] | None:
    """(column, row) of the first NULL in the columns `names` (those `rows` has), looking only at
    rows where `among` is true (when given)."""
    for name in names:
        if name not in rows.column_names:
            continue
        nulls = pc.is_null(rows.column(name))
        if among is not None:
            nulls = pc.and_(nulls, among)
        row = first_true(nulls)
        if row is not None:
            return name, row
    return None


def first_true(mask: pa.ChunkedArray) -> int | None:
    index = pc.index(mask, True).as_py()
    return None if index is None or index < 0 else index


def conformed(rows: pa.Table, columns: TableColumns) -> pa.Table:
    """`rows` as the table holds them: every table column in order, of the table's type (omitted
    ones NULL), then the row marker. Nullability is checked separately (`first_null`)."""
    arrays, fields = [], []
    for column in columns.columns:
        if column.name in rows.column_names:
            arrays.append(rows.column(column.name).cast(column.data_type))
        else:
            arrays.append(pa.nulls(rows.num_rows, column.data_type))
        fields.append(pa.field(column.name, column.data_type))
    arrays.append(rows.column(ROW_MARKER))
    fields.append(rows.schema.field(ROW_MARKER))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))

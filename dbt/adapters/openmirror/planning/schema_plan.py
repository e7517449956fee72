"""What to publish when the model's columns differ from the snapshot's (spec section 5)."""

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace

from dbt.adapters.openmirror.errors import SchemaChangeError

_COMPLEX_TYPE_PREFIXES = ("struct<", "array<", "map<")
FLOATING_POINT_TYPES = ("float", "double", "real")
#: Text, whatever its length limit or collation.
TEXT_TYPES = ("string", "varchar", "char")
#: A string collation other than byte for byte (UTF8_BINARY), in a lower-cased Spark type: values
#: equal under it can differ in the files.
NON_BINARY_COLLATION = re.compile(r"collate\s+(?!utf8_binary\b)\w+")
#: A string type's collation: not part of the type a Parquet file carries.
COLLATION_CLAUSE = re.compile(r"\s+collate\s+\w+")
#: A type DESCRIBE cut short (`struct<f0:int,...,f24:int,... 6 more fields>`: Spark shortens a
#: struct after spark.sql.debug.maxToStringFields fields), hiding what the checks look for inside.
SHORTENED_TYPE = re.compile(r"\.\.\. \d+ more fields")
#: Names the published files or the diff's own tables use: a model column cannot have them.
ROW_MARKER_NAME = "__rowmarker__"
INTERNAL_PREFIX = "__openmirror_"


@dataclass(frozen=True)
class ColumnSpec:
    name: str
    data_type: str
    #: The name the mirror knows the column by, when it differs from `name` in case only.
    published_as: str | None = None

    @property
    def published_name(self) -> str:
        return self.published_as or self.name

    @property
    def is_shortened(self) -> bool:
        return SHORTENED_TYPE.search(self.data_type) is not None

    @property
    def is_complex(self) -> bool:
        return self.data_type.strip().lower().startswith(_COMPLEX_TYPE_PREFIXES)

    @property
    def is_floating(self) -> bool:
        """A float or double: NaN and the sign of a zero compare differently in different engines."""
        return self.data_type.strip().lower() in FLOATING_POINT_TYPES

    @property
    def is_text(self) -> bool:
        return self.data_type.strip().lower().startswith(TEXT_TYPES)

    @property
    def is_collated(self) -> bool:
        """A string compared under a collation other than byte for byte (a complex value is
        compared as its JSON text)."""
        return not self.is_complex and bool(NON_BINARY_COLLATION.search(self.data_type.strip().lower()))

    @property
    def published_type(self) -> str:
        """The type the Parquet file carries: complex values travel as JSON strings, and a string
        is a string whatever its collation."""
        return "string" if self.is_complex else COLLATION_CLAUSE.sub("", self.data_type.strip().lower())


@dataclass(frozen=True)
class SchemaPlan:
    #: The model's columns, in its order, as they are published.
    columns: list[ColumnSpec]
    #: Columns the model no longer returns: published as NULL and kept in the snapshot.
    kept: list[ColumnSpec] = field(default_factory=list)
    #: Columns the model returns for the first time.
    added: list[ColumnSpec] = field(default_factory=list)
    #: Columns the model returns for the first time but does not publish (on_schema_change
    #: 'ignore'); the snapshot drops them too.
    ignored: list[ColumnSpec] = field(default_factory=list)
    #: Set when the change cannot be published in place and the table is rebuilt instead.
    rebuild_reason: str | None = None
    #: (published name, model's name) of columns the model now spells differently in case only.
    respelled: list[tuple[str, str]] = field(default_factory=list)


#: Spark types the mirror has no column type for (spec section 3), by their type name's first word
#: (`TYPE_WORD` ends it), with what to publish instead. Inside a struct, array or map they travel
#: as JSON text like the rest.
UNPUBLISHABLE_TYPES = {
    "void": "a column of NULLs without a type; cast it to the type it holds, e.g. cast(null as string)",
    "interval": (
        "intervals have no Delta type (the file would carry a bare count of months or microseconds); "
        "publish a number in a unit the column's name says, or a string"
    ),
    "time": "time of day has no Delta type; cast it to string",
    "variant": "variants have no Delta type; publish JSON text, to_json(...)",
    "geometry": "geometries have no Delta type; publish their WKT (string) or WKB (binary)",
    "geography": "geographies have no Delta type; publish their WKT (string) or WKB (binary)",
}
TYPE_WORD = re.compile(r"[\s(<]")
#: A map is published as JSON (`to_json`), whose object keys are text: Spark writes a string,
#: number or boolean key as it reads, a date or timestamp key as a raw count, and a binary, struct
#: or array key as a Java object's name that changes from run to run. Every `map<` of a type must
#: start one of these.
MAP_START = re.compile(r"map\s*<", re.IGNORECASE)
FAITHFUL_MAP_KEY = re.compile(
    r"map\s*<\s*(?:string(?:\s+collate\s+\w+)?|tinyint|smallint|int|integer|bigint|float|double|boolean"
    r"|decimal(?:\(\s*\d+\s*(?:,\s*\d+\s*)?\))?)\s*,",
    re.IGNORECASE,
)


def check_output_columns(model: str, columns: Sequence[ColumnSpec]) -> None:
    """Refuse output columns named like the row marker or the diff's own columns (any case),
    columns of a type the mirror cannot hold, and two columns named alike but for case (Spark
    allows them with spark.sql.caseSensitive; the mirror's Delta table cannot hold both)."""
    spelled: dict[str, str] = {}
    for column in columns:
        name = column.name
        other = spelled.get(name.lower())
        spelled[name.lower()] = name
        if other is not None:
            raise SchemaChangeError(
                f"Model '{model}': the output has columns '{other}' and '{name}', named alike but for case: the "
                "mirror's column names are case-insensitive, so one table cannot hold both. Rename one in the model."
            )
        if name.lower() == ROW_MARKER_NAME:
            raise SchemaChangeError(
                f"Model '{model}': the output has a column '{name}'. The mirror reads "
                "__rowMarker__ (in any letter case) as the row marker that dbt-openmirror writes "
                "itself; rename the column in the model."
            )
        if name.lower().startswith(INTERNAL_PREFIX):
            raise SchemaChangeError(
                f"Model '{model}': the output has a column '{name}'; names starting with "
                f"'{INTERNAL_PREFIX}' are dbt-openmirror's own. Rename the column in the model."
            )
        reason = UNPUBLISHABLE_TYPES.get(TYPE_WORD.split(column.data_type.strip().lower(), maxsplit=1)[0])
        if reason is not None:
            raise SchemaChangeError(
                f"Model '{model}': column '{name}' is {column.data_type.strip()}: {reason}. Nothing was published."
            )
        if len(MAP_START.findall(column.data_type)) != len(FAITHFUL_MAP_KEY.findall(column.data_type)):
            raise SchemaChangeError(
                f"Model '{model}': column '{name}' is {column.data_type.strip()}: a map is published as JSON, whose "
                "keys Spark writes as text only from strings, numbers and booleans (dates and timestamps come as raw "
                "counts, binary, struct and array keys as names that change every run). Convert the keys in the "
                "model, e.g. transform_keys(m, (k, v) -> date_format(k, 'yyyy-MM-dd')). Nothing was published."
            )


def _describe(changes: Sequence[tuple[str, str, str]]) -> str:
    return "; ".join(f"column '{name}' {old} -> {new}" for name, old, new in changes)


def _as_published(column: ColumnSpec, spelling: dict[str, str]) -> ColumnSpec:
    published = spelling.get(column.name.lower(), column.name)
    return column if published == column.name else replace(column, published_as=published)


def compared_type(column: ColumnSpec, key_names: Collection[str]) -> str:
    """What a change of the column's type is judged by: the type its files carry, and for a
    struct or array key its whole type. The mirror matches such a key by its JSON text, which
    follows the field names, their order and a decimal's scale, where Spark's `=` does not: a
    field renamed made every later update and delete miss its row."""
    if column.is_complex and column.name.lower() in key_names:
        return column.data_type.strip()
    return column.published_type


def retyped_columns(
    previous: Sequence[ColumnSpec],
    current: Sequence[ColumnSpec],
    published: bool = True,
    key_columns: Sequence[str] = (),
) -> list[tuple[str, str, str]]:
    """(name, type before, now) of the columns both have whose published type changed (or, with
    `published=False`, whose Spark type did: a struct's fields, which publish as the same text)."""
    key_names = {name.lower() for name in key_columns}

    def kind(column: ColumnSpec) -> str:
        return compared_type(column, key_names) if published else column.data_type.strip().lower()

    by_name = {c.name.lower(): c for c in previous}
    return [
        (c.name, kind(by_name[c.name.lower()]), kind(c))
        for c in current
        if c.name.lower() in by_name and kind(by_name[c.name.lower()]) != kind(c)
    ]


def check_candidate_types(model: str, previous: Sequence[ColumnSpec], candidates: Sequence[ColumnSpec]) -> None:
    """A candidate run merges what the model selected into the snapshot, whose other rows keep
    their types, with a `union all` that matches columns by position: a column whose Spark type
    changed among the candidates (a scalar type, a struct's fields) would take the snapshot's type
    or field names, whatever `on_schema_change` says."""
    retyped = retyped_columns(previous, candidates, published=False)
    if not retyped:
        return
    if retyped_columns(previous, candidates):
        run_in_full = (
            "with on_schema_change='sync_all_columns' rebuilds the mirrored table in the new type, "
            "as does --full-refresh"
        )
    else:
        # The files carry the same type (JSON text, a string without its collation).
        run_in_full = (
            "publishes the rows whose values changed, under any on_schema_change, rebuilding nothing: "
            "the published files' column type stays the same"
        )
    raise SchemaChangeError(
        f"Model '{model}': {_describe(retyped)} among the rows it selected (is_incremental() was true). "
        "The snapshot's other rows keep the old type, so a run that selects candidates cannot "
        "take the new one. Run the model in full: a reconcile run (--vars "
        f"'{{openmirror_reconcile: true}}') {run_in_full}. Nothing was published."
    )


def plan_schema(
    model: str,
    previous: Sequence[ColumnSpec] | None,
    current: Sequence[ColumnSpec],
    on_schema_change: str,
    published_names: Sequence[str] | None = None,
    key_columns: Sequence[str] = (),
) -> SchemaPlan:
    """Compare the snapshot's columns (None: no snapshot) with the model's; decide or fail.

    Column names are case-insensitive, as in Delta and Spark: a column the model now spells
    differently in case only is the same column and keeps the spelling the mirror has
    (`published_names`, else the snapshot's own), since the mirror cannot hold two spellings of
    one column; `sync_all_columns` rebuilds the table to take the new spelling instead."""
    if previous is None:
        return SchemaPlan(columns=list(current))
    spelling = {name.lower(): name for name in (published_names or [c.name for c in previous])}
    by_name = {c.name.lower(): c for c in previous}
    current_names = {c.name.lower() for c in current}
    added = [c for c in current if c.name.lower() not in by_name]
    removed = [_as_published(c, spelling) for c in previous if c.name.lower() not in current_names]
    retyped = retyped_columns(previous, current, key_columns=key_columns)
    published = [_as_published(c, spelling) for c in current]
    respelled = [(c.published_name, c.name) for c in published if c.published_name != c.name]
    if not (added or removed or retyped or respelled):
        return SchemaPlan(columns=list(current))

    if on_schema_change == "fail" and (added or removed or retyped):
        parts = [
            f"added {[c.name for c in added]}" if added else "",
            f"removed {[c.name for c in removed]}" if removed else "",
            f"retyped: {_describe(retyped)}" if retyped else "",
        ]
        raise SchemaChangeError(
            f"Model '{model}': columns changed ({', '.join(p for p in parts if p)}) and "
            "on_schema_change='fail'. Set on_schema_change='append_new_columns' to publish added "
            "columns, 'sync_all_columns' to rebuild the mirrored table, or run with --full-refresh."
        )
    if on_schema_change == "sync_all_columns" and (retyped or removed or respelled):
        reason = "; ".join(
            part
            for part in (
                _describe(retyped),
                f"columns {[c.name for c in removed]} were removed" if removed else "",
                "; ".join(f"column '{old}' is now spelled '{new}'" for old, new in respelled),
            )
            if part
        )
        return SchemaPlan(columns=list(current), added=added, rebuild_reason=reason)
    if retyped:
        raise SchemaChangeError(
            f"Model '{model}': {_describe(retyped)}. The mirror stops replicating a table whose "
            "column type changes, and matches a struct or array key by its JSON text, which the "
            "type decides; so this is not published in place (not even with "
            "on_schema_change='ignore'). Run with --full-refresh to rebuild the mirrored table, or "
            "set on_schema_change='sync_all_columns' to rebuild automatically."
        )
    if on_schema_change == "ignore":
        known = [c for c in published if c.name.lower() in by_name]
        return SchemaPlan(columns=known, kept=removed, ignored=added, respelled=respelled)
    return SchemaPlan(columns=published, kept=removed, added=added, respelled=respelled)

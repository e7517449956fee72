"""Unique-key rules: the key columns must exist, and be non-NULL and unique in every output."""

import re
from collections.abc import Iterable, Sequence

from dbt.adapters.openmirror.errors import KeyColumnsError
from dbt.adapters.openmirror.planning.schema_plan import NON_BINARY_COLLATION, ColumnSpec

HIDDEN = "(values hidden: show_key_values=false)"
#: A floating-point type inside a struct, array or map type (not a field named like one: a name is
#: followed by ':'), matched with the spaces removed.
NESTED_FLOAT = re.compile(r"[<:,](float|double|real)[,>]")


def resolve_key_columns(model: str, unique_key: Sequence[str], columns: Sequence[str]) -> list[str]:
    """The model's own spelling of each key column (Spark matches names case-insensitively)."""
    by_lower = {c.lower(): c for c in columns}
    missing = [k for k in unique_key if k.lower() not in by_lower]
    if missing:
        raise KeyColumnsError(
            f"Model '{model}': unique_key column(s) {missing} are not in the model's output; "
            f"its columns are {list(columns)}"
        )
    return [by_lower[k.lower()] for k in unique_key]


def check_key_types(model: str, key_columns: Sequence[ColumnSpec]) -> list[str]:
    """Refuse key types that cannot identify rows; warnings for those the mirror may compare
    differently than Spark does."""
    for column in key_columns:
        data_type = column.data_type.strip().lower()
        if "map<" in data_type:  # a name is followed by ':', so this is a map type, perhaps nested
            raise KeyColumnsError(
                f"Model '{model}': unique_key column '{column.name}' is {column.data_type}; maps "
                "cannot be compared or grouped, so they cannot identify rows. Use other key columns."
            )
        if column.is_complex and NESTED_FLOAT.search(data_type.replace(" ", "")):
            raise KeyColumnsError(
                f"Model '{model}': unique_key column '{column.name}' is {column.data_type}. The mirror "
                "matches a struct or array key by its JSON text, in which -0.0 and 0.0 differ although "
                "Spark takes them for one key: a change of sign would leave the old key in the mirror "
                "beside the new one. Cast its floating-point parts to decimal, or key on other columns."
            )
        if NON_BINARY_COLLATION.search(data_type):
            raise KeyColumnsError(
                f"Model '{model}': unique_key column '{column.name}' is {column.data_type}. The mirror "
                "compares keys byte for byte, so keys equal under this collation (e.g. 'A' and 'a', or 'a' and 'a ') "
                "would be one row here and two in the mirror, and updates and deletes would miss. Key "
                f"on collate({column.name}, 'UTF8_BINARY'), or normalise the key (e.g. upper(...)) if "
                "such keys mean the same thing."
            )
    return [
        f"Model '{model}': unique_key column '{column.name}' is {column.data_type}. Floating-point "
        "keys are fragile: NaN and -0.0 / 0.0 may match or not depending on who compares them (the "
        "mirror's MERGE, the SQL endpoint, Spark), so an update or delete can miss its row. Prefer "
        "an integer, decimal or string key."
        for column in key_columns
        if column.is_floating
    ]


def string_keys(key_columns: Sequence[ColumnSpec]) -> list[str]:
    """Key columns whose values the mirror's SQL may compare ignoring case or trailing spaces."""
    return [c.name for c in key_columns if c.is_text]


def raise_key_problems(
    model: str, key_columns: Sequence[str], problems: Iterable[tuple], show_values: bool = True
) -> None:
    """Fail on the first NULL or duplicated key found by the `openmirror_key_problems_sql` macro;
    its example values only when `show_values` (model config show_key_values)."""
    for problem, example, rows in problems:
        if problem == "NULL":
            where = f", e.g. the row with {example}" if show_values else f" {HIDDEN}"
            raise KeyColumnsError(
                f"Model '{model}': unique_key {list(key_columns)} has NULL values{where}. The "
                "mirror needs every key column set; filter or coalesce them."
            )
        which = example if show_values else f"a key {HIDDEN}"
        raise KeyColumnsError(
            f"Model '{model}': unique_key {list(key_columns)} is not unique: {which} appears "
            f"in {rows} rows. Each key must identify one row of the model's output."
        )


def lookalike_warning(model: str, key_columns: Sequence[str], pair: tuple[str, str], show_values: bool) -> str:
    """Two keys that differ only in case or trailing spaces (openmirror_key_lookalikes_sql)."""
    # Plain quotes, not repr(): package mode's Jinja (macros/package/plan.sql) writes the same text.
    shown = f"'{pair[0]}' and '{pair[1]}'" if show_values else f"two keys {HIDDEN}"
    return (
        f"Model '{model}': unique_key {list(key_columns)} has keys that differ only in letter case "
        f"or trailing spaces: {shown}. The mirror keeps them apart, but its SQL analytics endpoint "
        "ignores trailing spaces when it compares strings (and letter case under a "
        "case-insensitive collation), so queries there may see two rows for one key. Normalise "
        "the key in the model (e.g. upper(trim(...))) if they mean the same thing."
    )

"""Unique-key rules: the key columns must exist, and be non-NULL and unique in every output."""

from typing import Iterable, List, Sequence, Tuple

from dbt.adapters.openmirror.errors import KeyColumnsError
from dbt.adapters.openmirror.schema_plan import ColumnSpec

_FLOATING_POINT = ("float", "double", "real")


def resolve_key_columns(model: str, unique_key: Sequence[str], columns: Sequence[str]) -> List[str]:
    """The model's own spelling of each key column (Spark matches names case-insensitively)."""
    by_lower = {c.lower(): c for c in columns}
    missing = [k for k in unique_key if k.lower() not in by_lower]
    if missing:
        raise KeyColumnsError(
            f"Model '{model}': unique_key column(s) {missing} are not in the model's output; "
            f"its columns are {list(columns)}"
        )
    return [by_lower[k.lower()] for k in unique_key]


def check_key_types(model: str, key_columns: Sequence[ColumnSpec]) -> List[str]:
    """Refuse key types that cannot identify rows; warnings for those the mirror may compare
    differently than Spark does."""
    for column in key_columns:
        if column.data_type.strip().lower().startswith("map<"):
            raise KeyColumnsError(
                f"Model '{model}': unique_key column '{column.name}' is {column.data_type}; maps "
                "cannot be compared or grouped, so they cannot identify rows. Use other key columns."
            )
    return [
        f"Model '{model}': unique_key column '{column.name}' is {column.data_type}. Floating-point "
        "keys are fragile: NaN and -0.0 / 0.0 may match or not depending on who compares them (the "
        "mirror's MERGE, the SQL endpoint, Spark), so an update or delete can miss its row. Prefer "
        "an integer, decimal or string key."
        for column in key_columns
        if column.data_type.strip().lower() in _FLOATING_POINT
    ]


def raise_key_problems(model: str, key_columns: Sequence[str], problems: Iterable[Tuple]) -> None:
    """Fail on the first NULL or duplicated key found by the `openmirror_key_problems_sql` macro."""
    for problem, example, rows in problems:
        if problem == "NULL":
            raise KeyColumnsError(
                f"Model '{model}': unique_key {list(key_columns)} has NULL values, e.g. the row "
                f"with {example}. The mirror needs every key column set; filter or coalesce them."
            )
        raise KeyColumnsError(
            f"Model '{model}': unique_key {list(key_columns)} is not unique: {example} appears "
            f"in {rows} rows. Each key must identify one row of the model's output."
        )

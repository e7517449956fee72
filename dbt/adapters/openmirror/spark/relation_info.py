"""What `show table extended` says a relation is.

Its information text holds the relation's own lines (`Type: VIEW`, `Provider: delta`) and also
what users write: the table's comment (a model's description under `persist_docs`), its
properties (among them the names the snapshot records as published) and its column names
(`Schema: root |-- Type: VIEW: string`). dbt-spark looks for those words anywhere in the text: a
table with a column named `Type: VIEW` was cached as a view, and every later run failed dropping
it as one. Spark writes the relation's type, then its provider, before anything a user wrote (and
dbt-spark's DESCRIBE-built text for Iceberg has only column types before them, which are never a
table type).
"""

import re
from typing import Any

TABLE_TYPE_LINE = re.compile(r"Type: (MANAGED|EXTERNAL|VIEW)")
PROVIDER_LINE = re.compile(r"Provider: (\S+)")


def as_described(relation: Any) -> Any:
    """`relation`, with its type and table format as its information's own lines state them."""
    lines = iter((relation.information or "").splitlines())
    kind = next((found[1] for line in lines if (found := TABLE_TYPE_LINE.fullmatch(line))), None)
    provider = next((found[1].lower() for line in lines if (found := PROVIDER_LINE.fullmatch(line))), None)
    return relation.incorporate(
        type="view" if kind == "VIEW" else "table",
        is_delta=provider == "delta",
        is_hudi=provider == "hudi",
        is_iceberg=provider == "iceberg",
    )

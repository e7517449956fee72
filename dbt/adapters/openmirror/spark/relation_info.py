"""What `show table extended` says a relation is.

Its information text holds the relation's own lines (`Type: VIEW`, `Provider: delta`) and also its
column names (`Schema: root |-- Type: VIEW: string`) and table properties, among them the names
the snapshot records as published. dbt-spark looks for those words anywhere in the text: a table
with a column named `Type: VIEW` was cached as a view, and every later run failed dropping it.
Only a line of its own is Spark's statement.
"""

from typing import Any

VIEW_LINE = "Type: VIEW"
PROVIDER_LINE = "Provider: {}"


def as_described(relation: Any) -> Any:
    """`relation`, with its type and table format as its information's own lines state them."""
    lines = set((relation.information or "").splitlines())
    return relation.incorporate(
        type="view" if VIEW_LINE in lines else "table",
        is_delta=PROVIDER_LINE.format("delta") in lines,
        is_hudi=PROVIDER_LINE.format("hudi") in lines,
        is_iceberg=PROVIDER_LINE.format("iceberg") in lines,
    )

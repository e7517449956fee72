"""A relation's type and table format come from its own lines of `show table extended`, not from
column names or properties that contain the same words (spark/relation_info.py)."""

import pytest
from dbt.adapters.spark.relation import SparkRelation

from dbt.adapters.openmirror.spark.relation_info import as_described


def _information(kind: str, provider: str, column: str) -> str:
    """The information text Spark 4 gives a relation in `show table extended`."""
    return (
        f"Catalog: spark_catalog\nDatabase: s\nTable: t\nType: {kind}\nProvider: {provider}\n"
        f'Table Properties: [openmirror.published_columns=["id","{column}"]]\n'
        f"Location: file:/w/s.db/t\nSchema: root\n |-- id: integer (nullable = true)\n"
        f" |-- {column}: string (nullable = true)\n"
    )


@pytest.mark.parametrize(
    "kind, provider, column, expected",
    [
        ("MANAGED", "parquet", "Type: VIEW", ("table", False)),
        ("MANAGED", "parquet", "Provider: delta", ("table", False)),
        ("EXTERNAL", "delta", "name", ("table", True)),
        ("VIEW", "parquet", "Type: MANAGED", ("view", False)),
    ],
)
def test_only_the_relations_own_lines_count(kind, provider, column, expected):
    listed = SparkRelation.create(schema="s", identifier="t", information=_information(kind, provider, column))
    described = as_described(listed)
    assert (described.type, described.is_delta) == expected
    assert (described.schema, described.identifier, described.information) == ("s", "t", listed.information)

"""A relation's type and table format come from its own lines of `show table extended`, not from
column names or properties that contain the same words (spark/relation_info.py)."""

import pytest
from dbt.adapters.spark.relation import SparkRelation

from dbt.adapters.openmirror.spark.relation_info import as_described


def _information(kind: str, provider: str, column: str) -> str:
    """The information text Spark 4 gives a relation in `show table extended`, with a comment
    (a model's description under persist_docs) of several lines."""
    return (
        f"Catalog: spark_catalog\nDatabase: s\nTable: t\nType: {kind}\nProvider: {provider}\n"
        f"Comment: Orders.\nType: VIEW\nProvider: delta\n"
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
        ("EXTERNAL", "Delta", "Type: VIEW", ("table", True)),
        ("VIEW", "parquet", "Type: MANAGED", ("view", False)),
    ],
)
def test_only_the_relations_own_lines_count(kind, provider, column, expected):
    listed = SparkRelation.create(schema="s", identifier="t", information=_information(kind, provider, column))
    described = as_described(listed)
    assert (described.type, described.is_delta) == expected
    assert described.is_hudi is described.is_iceberg is False
    assert (described.schema, described.identifier, described.information) == ("s", "t", listed.information)


def test_dbt_sparks_describe_built_text_for_iceberg():
    """Column lines (`name: type`) come first there; a column named Type or Provider is no table type."""
    information = "Type: int\nProvider: string\nid: int\nCatalog: c\nType: MANAGED\nProvider: iceberg\n"
    described = as_described(SparkRelation.create(schema="s", identifier="t", information=information))
    assert (described.type, described.is_iceberg, described.is_delta) == ("table", True, False)
    assert as_described(SparkRelation.create(schema="s", identifier="t")).type == "table"

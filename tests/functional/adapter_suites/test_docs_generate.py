"""`dbt docs generate` under `type: openmirror`: dbt's catalog checks with the types, owner and
column positions that dbt-spark's catalog reports."""

import getpass

import pytest
from dbt.tests.adapter.basic import expected_catalog
from dbt.tests.adapter.basic.test_docs_generate import BaseDocsGenerate, BaseDocsGenReferences
from dbt.tests.util import AnyInteger

# dbt-spark reads column types from Spark's schema tree string, which names bigint "long".
SPARK_TYPES = {
    "id_type": "long",
    "text_type": "string",
    "time_type": "timestamp",
    "view_type": "view",
    "table_type": "table",
}


def table_stats() -> dict:
    """Spark records size and row statistics for a table built by `create table as select`
    (not for views, nor for seeds, which are filled by inserts)."""

    def statistic(name):
        return {"id": name, "label": name, "value": AnyInteger(), "include": True, "description": None}

    has_stats = expected_catalog.no_stats()["has_stats"]
    return {"has_stats": {**has_stats, "value": True}, "bytes": statistic("bytes"), "rows": statistic("rows")}


def zero_based_positions(catalog: dict) -> dict:
    """dbt-spark numbers catalog columns from 0; dbt's expected catalogs number some from 1."""
    for section in ("nodes", "sources"):
        for node in catalog[section].values():
            # New column dicts: nodes and sources share them.
            node["columns"] = {
                name: {**column, "index": column["index"] - 1} if type(column["index"]) is int else column
                for name, column in node["columns"].items()
            }
    return catalog


class TestDocsGenerate(BaseDocsGenerate):
    @pytest.fixture(scope="class")
    def expected_catalog(self, project):
        return expected_catalog.base_expected_catalog(
            project, role=getpass.getuser(), model_stats=expected_catalog.no_stats(), **SPARK_TYPES
        )


class TestDocsGenReferences(BaseDocsGenReferences):
    @pytest.fixture(scope="class")
    def expected_catalog(self, project):
        return zero_based_positions(
            expected_catalog.expected_references_catalog(
                project,
                role=getpass.getuser(),
                bigint_type="long",
                model_stats=table_stats(),
                seed_stats=expected_catalog.no_stats(),
                view_summary_stats=expected_catalog.no_stats(),
                **SPARK_TYPES,
            )
        )

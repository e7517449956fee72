"""`dbt docs generate` documents open_mirror models: the catalog has the snapshot's columns."""

import json
from pathlib import Path

import pytest
from dbt.tests.util import run_dbt

from tests.support.mirror import set_source

MODELS_YML = """
version: 2
models:
  - name: customers
    description: Customers, mirrored.
    columns:
      - name: id
        description: The key.
        data_tests: [unique, not_null]
"""


class TestDocsGenerate:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "customers.sql": "{{ config(materialized='open_mirror', unique_key='id', persist_docs={'relation': true},"
            " post_hook=\"alter table {{ this }} set tblproperties ('test.post_hook' = 'ran')\") }}\n"
            "select * from {{ target.schema }}.src",
            "schema.yml": MODELS_YML,
        }

    def test_catalog_and_manifest_describe_the_model(self, project, warehouse):
        set_source(warehouse, project.test_schema, "select * from values (1, 'a', 2.5) as t(id, name, score)")
        run_dbt(["build"])
        run_dbt(["docs", "generate"])
        target = Path(project.project_root) / "target"
        catalog = json.loads((target / "catalog.json").read_text())
        node = catalog["nodes"]["model.test.customers"]
        assert [c.lower() for c in node["columns"]] == ["id", "name", "score"]
        assert node["metadata"]["type"] == "table"
        manifest = json.loads((target / "manifest.json").read_text())
        assert manifest["nodes"]["model.test.customers"]["config"]["materialized"] == "open_mirror"
        properties = dict(project.run_sql(f"show tblproperties {project.test_schema}.customers", fetch="all"))
        assert properties["test.post_hook"] == "ran"

"""Full loads nobody asked for are dbt warnings: counted in the summary's WARN=, "warn" in
run_results.json with the reason, and errors under --warn-error (before anything is published)."""

import json
import shutil

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.functional.mirror import assert_mirror_equals, set_source, table_folder, tree_digest

MODEL = """
{{ config(materialized='open_mirror', unique_key='id') }}
select * from {{ target.schema }}.src
"""


class TestUnexpectedFullLoads:
    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": MODEL}

    def test_a_deleted_table_folder_is_reloaded_with_a_warning(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        set_source(warehouse, schema, "select * from values (1, 'a'), (2, 'b') as t(id, name)")
        _, output = run_dbt_and_capture(["run"])
        assert "WARN=0" in output
        shutil.rmtree(folder)

        # Under --warn-error the warning stops the run before anything is published.
        before = tree_digest(landing_zone)
        results, output = run_dbt_and_capture(["--warn-error", "run"], expect_pass=False)
        assert "table folder was missing" in results[0].message
        assert tree_digest(landing_zone) == before

        results, output = run_dbt_and_capture(["run"])
        assert "WARN=1" in output and "table folder was missing" in output
        assert results[0].status == "warn"
        run_results = json.loads((project.project_root / "target" / "run_results.json").read_text("utf-8"))
        [result] = run_results["results"]
        assert result["status"] == "warn"
        assert any("table folder was missing" in w for w in result["adapter_response"]["warnings"])
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")
        # The next run is an ordinary one again.
        assert run_dbt(["run"])[0].status == "success"

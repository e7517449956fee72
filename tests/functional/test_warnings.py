"""Full loads nobody asked for are dbt warnings: counted in the summary's WARN=, "warn" in
run_results.json with the reason, and errors under --warn-error (before anything is published)."""

import json
import shutil

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.support.mirror import assert_mirror_equals, set_source, table_folder, tree_digest

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


class TestEmptyOutputs:
    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": MODEL}

    def test_an_empty_output_that_deletes_every_row_warns(self, project, warehouse, landing_zone):
        """An input left empty (`dbt build --empty` leaves its tables so) makes the next run delete
        every mirrored row: allowed, never silent."""
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        set_source(warehouse, schema, "select * from values (1, 'a'), (2, 'b') as t(id, name)")
        run_dbt(["run"])
        set_source(warehouse, schema, "select * from values (1, 'a') as t(id, name) where id < 0")
        before = tree_digest(landing_zone)
        results = run_dbt(["--warn-error", "run"], expect_pass=False)
        assert "its output is empty, so this run deletes every row" in results[0].message
        assert tree_digest(landing_zone) == before
        results, output = run_dbt_and_capture(["run"])
        assert results[0].status == "warn" and "WARN=1" in output
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")
        # Empty again: nothing to delete, nothing to say.
        results, output = run_dbt_and_capture(["run", "--vars", "{openmirror_reconcile: true}"])
        assert results[0].status == "success" and "WARN=0" in output


class TestKeysTheMirrorMayCompareDifferently:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "codes.sql": "{{ config(materialized='open_mirror', unique_key='code') }}\n"
            "select * from {{ target.schema }}.src",
            "ratios.sql": "{{ config(materialized='open_mirror', unique_key='ratio') }}\n"
            "select cast(id as double) as ratio, code from {{ target.schema }}.src",
            "secret.sql": "{{ config(materialized='open_mirror', unique_key='code', show_key_values=false) }}\n"
            "select upper(code) as code, id from {{ target.schema }}.src",
        }

    def test_case_and_trailing_space_lookalikes_and_floating_point_keys_warn(self, project, warehouse, landing_zone):
        schema = project.test_schema
        set_source(warehouse, schema, "select * from values ('ABC', 1), ('abc ', 2), ('x', 3) as t(code, id)")
        results = {r.node.name: r for r in run_dbt(["run", "--select", "codes", "ratios"])}
        [lookalike] = results["codes"].adapter_response["warnings"]
        assert "'code=ABC' and 'code=abc '" in lookalike or "'code=abc ' and 'code=ABC'" in lookalike
        assert any("Floating-point" in w and "'ratio'" in w for w in results["ratios"].adapter_response["warnings"])
        # An incremental run compares only its new keys with all keys.
        set_source(warehouse, schema, "select * from values ('ABC', 1), ('abc ', 2), ('x', 3), ('y', 4) as t(code, id)")
        assert run_dbt(["run", "--select", "codes"])[0].adapter_response["warnings"] == []
        set_source(
            warehouse,
            schema,
            "select * from values ('ABC', 1), ('abc ', 2), ('x', 3), ('y', 4), ('X ', 5) as t(code, id)",
        )
        [warned] = run_dbt(["run", "--select", "codes"])[0].adapter_response["warnings"]
        assert "code=X " in warned and "code=x" in warned
        assert_mirror_equals(warehouse, table_folder(landing_zone, schema, "codes"), f"select * from {schema}.src")

    def test_example_values_can_be_kept_out_of_messages(self, project, warehouse, landing_zone):
        set_source(warehouse, project.test_schema, "select * from values ('abc', 1), ('ABC', 2) as t(code, id)")
        before = tree_digest(landing_zone)
        [result] = run_dbt(["run", "--select", "secret"], expect_pass=False)
        assert "not unique" in result.message and "show_key_values=false" in result.message
        assert "ABC" not in result.message
        assert tree_digest(landing_zone) == before

"""`{{ this }}` is the record of what was published. A run that reads its rows — to compare whole
rows, or to merge an incremental model's candidates into it — first checks that its complete
table (the table itself, or an overlaid snapshot's base) holds as many rows as the run that wrote
it left. A table whose files are gone (a folder deleted, or moved away by a rename cut off over
Thrift, where nothing repairs it) reads as empty, and a diff against it would publish every row
again as an INSERT, or every other row as a DELETE. Such a run fails before publishing."""

import shutil
from pathlib import Path
from urllib.parse import urlparse

import pytest
from dbt.tests.util import run_dbt

from tests.functional.test_incremental_models import MODEL as INCREMENTAL_MODEL
from tests.functional.test_incremental_models import _source
from tests.support.mirror import assert_mirror_equals, file_markers, set_source, table_folder, tree_digest

#: The incremental model's source after its first run: row 2 changed.
CHANGED = "(1, 'a', 1, false), (2, 'B', 2, false), (3, 'c', 1, false)"

MODEL = """
{{ config(materialized='open_mirror', unique_key='id') }}
select * from {{ target.schema }}.src
"""


def _folder_of(project, relation: str) -> Path:
    rows = project.run_sql(f"describe table extended {relation}", fetch="all")
    [location] = [str(row[1]) for row in rows if str(row[0]) == "Location"]
    return Path(urlparse(location).path)


def _lose_rows(project, relation: str, how: str) -> None:
    """What another actor or a cut-off statement does to a snapshot table's rows behind the
    catalog's back."""
    if how == "folder deleted":
        shutil.rmtree(_folder_of(project, relation))
    else:
        project.run_sql(f"insert into {relation} select * from {relation} limit 1")
    project.run_sql(f"refresh table {relation}")


def _refused(project, landing_zone, args=()) -> str:
    before = tree_digest(landing_zone)
    [result] = run_dbt(["run", *args], expect_pass=False)
    assert tree_digest(landing_zone) == before
    return str(result.message)


class TestAFullDiffSnapshotThatLostRows:
    @pytest.fixture(scope="class")
    def models(self):
        return {"accounts.sql": MODEL}

    @pytest.mark.parametrize("how", ["folder deleted", "row inserted by hand"])
    def test_whole_rows_are_not_compared_against_it(self, project, warehouse, landing_zone, how):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "accounts")
        set_source(warehouse, schema, "select * from values (1, 'a'), (2, 'b'), (3, 'c') as t(id, name)")
        run_dbt(["run", "--full-refresh"])
        set_source(warehouse, schema, "select * from values (1, 'a'), (2, 'B'), (3, 'c') as t(id, name)")
        run_dbt(["run"])
        published = len(file_markers(folder))

        _lose_rows(project, f"{schema}.accounts", how)
        project.run_sql(f"drop table {schema}.accounts__om_hashes")  # whole rows are compared
        message = _refused(project, landing_zone)
        counted = 0 if how == "folder deleted" else 4
        assert f"Model 'accounts': {schema}.accounts holds {counted} rows, but the run that wrote it left 3" in message
        assert "Nothing was published" in message and "--full-refresh" in message

        run_dbt(["run", "--full-refresh"])
        assert len(file_markers(folder)) == 1 and published == 2
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")

    def test_key_hashes_that_lost_their_rows_are_not_trusted(self, project, warehouse, landing_zone):
        """Dropping them is harmless (whole rows are compared); losing their files must be too."""
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "accounts")
        set_source(warehouse, schema, "select * from values (1, 'a'), (2, 'b'), (3, 'c') as t(id, name)")
        run_dbt(["run", "--full-refresh"])
        _lose_rows(project, f"{schema}.accounts__om_hashes", "folder deleted")
        set_source(warehouse, schema, "select * from values (1, 'a'), (2, 'B'), (4, 'd') as t(id, name)")
        run_dbt(["run"])
        assert sorted(file_markers(folder)[-1]) == [0, 1, 2]
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")


@pytest.mark.extended
class TestAnIncrementalSnapshotThatLostRows:
    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": INCREMENTAL_MODEL}

    def _start(self, project, warehouse):
        rows = "(1, 'a', 1, false), (2, 'b', 1, false), (3, 'c', 1, false)"
        set_source(warehouse, project.test_schema, _source(rows))
        run_dbt(["run", "--full-refresh"])

    def _start_then_lose_rows(self, project, warehouse, table: str, how: str):
        """A first run; then `table` loses rows, and the source changes one candidate."""
        self._start(project, warehouse)
        _lose_rows(project, f"{project.test_schema}.{table}", how)
        set_source(warehouse, project.test_schema, _source(CHANGED))

    def test_a_candidate_run_over_its_table_fails(self, project, warehouse, landing_zone):
        schema = project.test_schema
        self._start_then_lose_rows(project, warehouse, "orders", "folder deleted")
        # A dry run, which does not repair (it holds no lease), refuses a table without its folder.
        message = _refused(project, landing_zone, ["--vars", "{openmirror_dry_run: true}"])
        assert "Model 'orders': table orders has no folder and reads as empty" in message
        assert "the folder was deleted (then run the model with --full-refresh)" in message
        message = _refused(project, landing_zone)
        assert f"Model 'orders': {schema}.orders holds 0 rows, but the run that wrote it left 3" in message

    def test_a_candidate_run_whose_key_hashes_lost_their_rows_compares_whole_rows(
        self, project, warehouse, landing_zone
    ):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "orders")
        self._start(project, warehouse)
        _lose_rows(project, f"{schema}.orders__om_hashes", "folder deleted")
        changed = "(1, 'a', 1, false), (2, 'B', 2, false), (3, 'c', 2, true), (4, 'd', 2, false)"
        set_source(warehouse, schema, _source(changed))
        run_dbt(["run"])
        assert sorted(file_markers(folder)[-1]) == [0, 1, 2]
        assert_mirror_equals(warehouse, folder, f"select id, name, updated_at from {schema}.src where not deleted")

    def test_a_dry_run_does_not_merge_candidates_into_it(self, project, warehouse, landing_zone):
        schema = project.test_schema
        self._start_then_lose_rows(project, warehouse, "orders", "row inserted by hand")
        message = _refused(project, landing_zone, ["--vars", "{openmirror_dry_run: true}"])
        assert f"Model 'orders': {schema}.orders holds 4 rows, but the run that wrote it left 3" in message

    def test_a_candidate_run_over_an_overlay_whose_base_lost_its_rows_fails(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "orders")
        self._start(project, warehouse)
        set_source(warehouse, schema, _source(CHANGED))
        run_dbt(["run"])
        assert_mirror_equals(warehouse, folder, f"select id, name, updated_at from {schema}.src")
        _lose_rows(project, f"{schema}.orders__om_base", "folder deleted")
        set_source(warehouse, schema, _source("(1, 'a', 1, false), (2, 'B', 2, false), (3, 'C', 3, false)"))
        message = _refused(project, landing_zone)
        assert f"Model 'orders': {schema}.orders__om_base holds 0 rows, but the run that wrote it left 3" in message

        run_dbt(["run", "--full-refresh"])
        assert_mirror_equals(warehouse, folder, f"select id, name, updated_at from {schema}.src")

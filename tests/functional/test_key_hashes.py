"""The diff by key hashes: the snapshot's hashes table follows the snapshot, finds exactly the
changed rows (also a value moving between a column and NULL), checks keys on the way, and is
ignored (whole rows are compared) whenever it does not provably belong to the snapshot."""

import re

import pytest
from dbt.tests.util import run_dbt

from tests.support.mirror import (
    assert_mirror_equals,
    file_markers,
    rewrite_key_hashes,
    set_source,
    sorted_bucket_scans,
    table_folder,
    tree_digest,
)
from tests.support.sql_macros import sql_macros

MODEL = """
{{ config(materialized='open_mirror', unique_key='id') }}
select id, a, b, tags from {{ target.schema }}.src
"""

BASE = [
    (1, "'x'", "null", "array('p')"),
    (2, "null", "'x'", "array('q', 'r')"),
    (3, "'c'", "'d'", "array()"),
    (4, "'e'", "'f'", "null"),
]


def _values(rows) -> str:
    return "select * from values " + ", ".join(f"({', '.join(map(str, r))})" for r in rows) + " as t(id, a, b, tags)"


class TestKeyHashes:
    @pytest.fixture(scope="class")
    def models(self):
        return {"hashed.sql": MODEL}

    def _run(self, project, warehouse, rows, expect_pass=True):
        set_source(warehouse, project.test_schema, _values(rows))
        results = run_dbt(["run"], expect_pass=expect_pass)
        return results[0]

    def _run_id(self, warehouse, relation):
        rows = warehouse.project.run_sql(f"show tblproperties {relation}", fetch="all")
        return {str(key): str(value) for key, value in rows}.get("openmirror.run_id")

    def _changed_keys_plan(self, project, hashes):
        """Spark's plan for the changed-keys join of `hashes` with itself, with bucketed scans read
        as sorted where they are (as during a run)."""
        changed_keys = sql_macros().openmirror_changed_keys_sql(
            target="unused",
            new_hashes=hashes,
            previous_hashes=hashes,
            key_columns=["id"],
            change_markers="insert_update_delete",
        )
        project.run_sql(sql_macros().openmirror_sorted_bucket_scans_sql(on=True))
        try:
            return "\n".join(
                str(row[0]) for row in project.run_sql("explain " + changed_keys.split(" as\n", 1)[1], fetch="all")
            )
        finally:
            project.run_sql(sql_macros().openmirror_sorted_bucket_scans_sql(on=False))

    def _assert_join_needs_no_shuffle(self, project, hashes):
        """The hashes table is bucketed and sorted by the key, so the next run's changed-keys join
        (against a table written the same way) moves no rows between tasks and sorts none."""
        described = {
            str(row[0]).strip(): str(row[1]).strip()
            for row in project.run_sql(f"describe table extended {hashes}", fetch="all")
        }
        assert (described["Num Buckets"], described["Bucket Columns"], described["Sort Columns"]) == (
            "1",
            "[`id`]",
            "[`id`]",
        )
        plan = self._changed_keys_plan(project, hashes)
        assert "SortMergeJoin" in plan or "ShuffledHashJoin" in plan
        assert "Exchange" not in plan, plan
        assert not re.search(r"\bSort \[", plan), plan

    def test_hashes_follow_the_snapshot_and_find_exactly_the_changes(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "hashed")
        source = f"select id, a, b, to_json(tags) as tags from {schema}.src"  # published as JSON
        self._run(project, warehouse, BASE)
        # Spark trusts declared bucket orders only while the diff runs: the session is as before.
        assert sorted_bucket_scans(project) == "false"
        snapshot_run = self._run_id(warehouse, f"{schema}.hashed")
        assert snapshot_run and self._run_id(warehouse, f"{schema}.hashed__om_hashes") == snapshot_run
        assert warehouse.columns(f"{schema}.hashed") == ["id", "a", "b", "tags"]  # nothing leaks into ref()
        self._assert_join_needs_no_shuffle(project, f"{schema}.hashed__om_hashes")

        # Row 1 and 2 swap a value with NULL between columns; row 3 changes only inside an array.
        changed = [
            (1, "null", "'x'", "array('p')"),
            (2, "'x'", "null", "array('q', 'r')"),
            (3, "'c'", "'d'", "array('')"),
            (4, "'e'", "'f'", "null"),
            (5, "'n'", "null", "null"),
        ]
        result = self._run(project, warehouse, changed)
        assert (result.adapter_response["inserts"], result.adapter_response["updates"]) == (1, 3)
        assert sorted(file_markers(folder)[-1]) == [0, 1, 1, 1]
        assert_mirror_equals(warehouse, folder, source)
        assert self._run_id(warehouse, f"{schema}.hashed__om_hashes") == self._run_id(warehouse, f"{schema}.hashed")

        # Keys are checked inside the changed-keys join: a repeated or NULL key fails, nothing lands.
        before = tree_digest(landing_zone)
        failed = self._run(project, warehouse, changed + [(3, "'c'", "'d'", "array('')")], expect_pass=False)
        assert "not unique" in failed.message and "id=3" in failed.message and "2 rows" in failed.message
        failed = self._run(project, warehouse, changed + [("null", "'z'", "null", "null")], expect_pass=False)
        assert "NULL" in failed.message and "id=NULL" in failed.message
        assert tree_digest(landing_zone) == before

        # Hashes that do not belong to the snapshot are never trusted: here they are wrong for
        # every row and stamped by another run, so using them would publish 5 updates.
        hashes = f"{schema}.hashed__om_hashes"
        rewrite_key_hashes(warehouse, hashes, "id", hash1_offset=1, run_id="another run")
        files = len(file_markers(folder))
        result = self._run(project, warehouse, changed)
        assert result.adapter_response["files"] == [] and len(file_markers(folder)) == files
        assert self._run_id(warehouse, hashes) == self._run_id(warehouse, f"{schema}.hashed")

        # A lost hashes table: whole rows are compared, and the run writes the hashes again.
        warehouse.run(f"drop table {hashes}")
        result = self._run(project, warehouse, changed[1:])
        assert sorted(file_markers(folder)[-1]) == [2]
        assert_mirror_equals(warehouse, folder, source)
        assert self._run_id(warehouse, hashes) == self._run_id(warehouse, f"{schema}.hashed")

        # Hashes in another bucket count than the new ones (as after the table grew past a power
        # of two): Spark shuffles one side of the join, and the changes are as exact.
        rewrite_key_hashes(warehouse, hashes, "id", buckets=4)
        changed[1] = (2, "'y'", "null", "array('q', 'r')")
        result = self._run(project, warehouse, changed)
        assert (result.adapter_response["inserts"], result.adapter_response["updates"]) == (1, 1)
        assert sorted(file_markers(folder)[-1]) == [0, 1]
        assert_mirror_equals(warehouse, folder, source)

        # Hashes written before the buckets were sorted (same bucket count, no sort columns): Spark
        # sorts that side itself, and the changes are as exact.
        rewrite_key_hashes(warehouse, hashes, "id", buckets=1)
        assert re.search(r"\bSort \[", self._changed_keys_plan(project, hashes))
        changed[2] = (3, "'c'", "'d2'", "array('')")
        result = self._run(project, warehouse, changed)
        assert (result.adapter_response["inserts"], result.adapter_response["updates"]) == (0, 1)
        assert sorted(file_markers(folder)[-1]) == [1]
        assert_mirror_equals(warehouse, folder, source)


class TestAKeyRespelledInCase:
    """The mirror compares keys byte for byte: a key respelled in case only is another key (a
    DELETE and an INSERT), also when the model keys on a collated string made binary, as the
    refusal of collated keys advises (keys.check_key_types)."""

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "binary.sql": """
{{ config(materialized='open_mirror', unique_key='code') }}
select collate(code, 'UTF8_BINARY') as code, amount from {{ target.schema }}.src
"""
        }

    def test_respelled_keys_are_deleted_and_inserted(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "binary")
        set_source(warehouse, schema, "select * from values ('A', 1), ('c', 1) as t(code, amount)")
        run_dbt(["run"])
        set_source(warehouse, schema, "select * from values ('a', 2), ('C', 1) as t(code, amount)")
        result = run_dbt(["run"])[0]
        assert (
            result.adapter_response["inserts"],
            result.adapter_response["updates"],
            result.adapter_response["deletes"],
        ) == (2, 0, 2)
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")
        set_source(warehouse, schema, "select * from values ('C', 1) as t(code, amount)")
        run_dbt(["run"])
        assert file_markers(folder)[-1] == [2]
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")

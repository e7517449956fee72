"""A full-diff run whose model reads exactly what its snapshot was built from builds and publishes
nothing (spark/model_inputs.py), on the real in-process session. What the models read is changed
the ways users change it (a source file rewritten in place under the same name and size, an
upstream view's inline rows); each time the run builds, and replaying the landing zone equals the
model's output. test_model_inputs.py tries the digest itself on more cases."""

import os

import pytest
from dbt.tests.util import run_dbt

from tests.support.mirror import (
    assert_mirror_equals,
    findings_for,
    model_output,
    settle,
    table_folder,
    tree_digest,
)

CUSTOMERS = """
{{ config(materialized='open_mirror', unique_key='id', meta={'owner': var('owner', 'a')}) }}
select cast(_c0 as int) as id, _c1 as name from csv.`{{ var('csv_dir') }}`
"""
LOOKUP = """
{{ config(materialized='view') }}
select * from values (1, '{{ var("label") }}'), (2, 'fixed') as t(id, label)
"""
LABELS = """
{{ config(materialized='open_mirror', unique_key='id') }}
select * from {{ ref('lookup') }}
"""
UNCHANGED = "inputs unchanged since run"


class TestUnchangedInputs:
    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": CUSTOMERS, "lookup.sql": LOOKUP, "labels.sql": LABELS}

    def run(self, csv_dir, label, *args):
        settle(csv_dir)  # written well before the run, as a scheduled run finds its sources
        results = run_dbt(["run", "--vars", f"{{csv_dir: '{csv_dir}', label: {label}{''.join(args)}}}"])
        return {r.node.name: r.adapter_response for r in results if r.node.name != "lookup"}

    def check(self, project, warehouse, landing_zone, csv_dir):
        schema = project.test_schema
        expected = {
            "customers": f"select cast(_c0 as int) as id, _c1 as name from csv.`{csv_dir}`",
            "labels": f"select * from {schema}.lookup",
        }
        for name, sql in expected.items():
            folder = table_folder(landing_zone, schema, name)
            assert_mirror_equals(warehouse, folder, sql)
            assert findings_for(landing_zone, folder) == []
            assert model_output(warehouse, f"select * from {schema}.{name}") == model_output(warehouse, sql)

    def test_only_runs_whose_inputs_changed_build(self, project, warehouse, landing_zone, tmp_path):
        csv_dir = tmp_path / "customers"
        csv_dir.mkdir()
        (csv_dir / "part.csv").write_text("1,a\n2,b\n3,c\n")
        first = self.run(csv_dir, "x")
        assert {name: r["mode"] for name, r in first.items()} == dict.fromkeys(("customers", "labels"), "initial")
        self.check(project, warehouse, landing_zone, csv_dir)

        # Nothing read changed: nothing is built, nothing published, the table folders untouched.
        skipped = [table_folder(landing_zone, project.test_schema, name) for name in ("customers", "labels")]
        before = [tree_digest(folder) for folder in skipped]
        again = self.run(csv_dir, "x")
        assert UNCHANGED in again["customers"]["_message"] and UNCHANGED in again["labels"]["_message"]
        assert all(r["rows_affected"] == 0 for r in again.values())
        assert [tree_digest(folder) for folder in skipped] == before

        # The file rewritten in place (same name, same size) and the view's rows changed.
        (csv_dir / "part.csv").write_text("1,a\n2,B\n3,c\n")
        changed = self.run(csv_dir, "y")
        assert (changed["customers"]["updates"], changed["labels"]["updates"]) == (1, 1)
        self.check(project, warehouse, landing_zone, csv_dir)
        assert UNCHANGED in self.run(csv_dir, "y")["customers"]["_message"]

        # A reconcile run always builds and compares.
        reconciled = self.run(csv_dir, "y", ", openmirror_reconcile: true")
        assert UNCHANGED not in reconciled["customers"]["_message"] and reconciled["customers"]["files"] == []
        self.check(project, warehouse, landing_zone, csv_dir)

        # The model's config is part of the model: changed, the run builds (and finds no change).
        configured = self.run(csv_dir, "y", ", owner: b")
        assert UNCHANGED not in configured["customers"]["_message"] and configured["customers"]["files"] == []
        assert UNCHANGED in configured["labels"]["_message"]
        self.check(project, warehouse, landing_zone, csv_dir)


class TestFreshSources:
    """A store that keeps modification times to the second (object stores) shows a file rewritten
    in place with the same size within that second with the time it had: a run right after a
    source was written builds and records no digest, so the next run builds too."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": CUSTOMERS}

    def test_a_source_written_moments_before_the_run_is_not_vouched_for(
        self, project, warehouse, landing_zone, tmp_path
    ):
        csv_dir = tmp_path / "fresh"
        csv_dir.mkdir()
        source = csv_dir / "part.csv"
        source.write_text("1,a\n2,b\n")
        written = source.stat()
        run = ["run", "--vars", f"{{csv_dir: '{csv_dir}'}}"]
        assert run_dbt(run)[0].adapter_response["mode"] == "initial"
        source.write_text("1,a\n2,c\n")
        os.utime(source, ns=(written.st_atime_ns, written.st_mtime_ns))  # the time a 1 s store would show
        response = run_dbt(run)[0].adapter_response
        assert UNCHANGED not in response["_message"] and response["updates"] == 1
        expected = f"select cast(_c0 as int) as id, _c1 as name from csv.`{csv_dir}`"
        assert_mirror_equals(warehouse, table_folder(landing_zone, project.test_schema, "customers"), expected)

"""The open_mirror materialization publishing into a OneLake landing zone: the local DFS stand-in
(tests/support/dfs_emulator) on loopback HTTPS, reached through the real Azure SDK and our backend.

Spark runs locally, so change files are written to a local folder and uploaded (spark_staging
auto → upload). After every run the table folder (read from the stand-in's disk) is replayed in
file order by the independent oracle, `dbt-openmirror validate <url>` finds nothing, and
`dbt-openmirror replay <url>` brings a local Delta table to exactly the model output.
"""

import json
from pathlib import Path

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from dbt.adapters.openmirror.tools.cli import main as openmirror
from tests.support.delta_reader import read_delta
from tests.support.mirror import assert_mirror_equals, file_markers, model_output, normalized, set_source
from tests.support.onelake import ITEM_ROOT, SECRET, TOKEN, OnOneLake, onelake_landing_zone_on_disk

MODEL = """
{{ config(materialized='open_mirror', unique_key='id', max_rows_per_file=2) }}
select * from {{ target.schema }}.src
"""
COLUMNS = "as t(id, name, amount)"
STEPS = [
    # (source rows, extra dbt args, mode, new files, their markers); two rows per file at most
    ("(1, 'a', 10), (2, 'b', 20), (3, 'c', 30)", [], "initial", 2, [0, 0, 0]),
    ("(1, 'a', 11), (3, 'c', 30), (4, 'd', 40)", [], "incremental", 2, [0, 1, 2]),
    ("(1, 'a', 12), (5, 'e', 50)", ["--full-refresh"], "rebuild", 1, [0, 0]),
    ("(1, 'a', 13), (6, 'f', 60)", [], "incremental", 2, [0, 1, 2]),
]


class TestPublishToOneLake(OnOneLake):
    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": MODEL}

    def test_runs_publish_exactly_the_changes_and_replay_to_the_model(
        self, project, warehouse, onelake, tmp_path, capsys
    ):
        schema = project.test_schema
        url = f"{onelake.url}/workspace/{ITEM_ROOT}"
        on_disk = onelake_landing_zone_on_disk(onelake)
        folder = on_disk / f"{schema}.schema" / "customers"
        source = f"select * from {schema}.src"
        for rows, args, mode, new_files, markers in STEPS:
            if "--full-refresh" in args:
                # The service still holds the folder at first: the delete is retried.
                onelake.inject(
                    status=409,
                    code="OperationNotAllowedOnThePath",
                    times=1,
                    operation="delete",
                    path=f"/workspace/{ITEM_ROOT}/{schema}.schema/customers",
                )
            before = 0 if "--full-refresh" in args or not folder.exists() else len(file_markers(folder))
            set_source(warehouse, schema, f"select * from values {rows} {COLUMNS}")
            response = run_dbt(["run", *args])[0].adapter_response
            published = file_markers(folder)[before:]
            assert (len(published), sorted(sum(published, []))) == (new_files, markers)
            assert response["mode"] == mode
            assert_mirror_equals(warehouse, folder, source)
            assert openmirror(["validate", url]) == 0
            assert capsys.readouterr().out.strip().endswith("0 errors, 0 warnings")
            assert openmirror(["replay", url, "--target", str(tmp_path / "mirror")]) == 0
            mirrored = read_delta(tmp_path / "mirror" / schema / "customers")
            assert normalized(mirrored) == model_output(warehouse, source)

        # Staging went through uploads; the retried delete happened; nothing is left staged.
        assert onelake.recorded("append") and onelake.recorded("flush")
        assert 409 in [r.status for r in onelake.recorded("delete")]
        assert [n for n in (on_disk / "_scratchPad" / "dbt-openmirror").iterdir() if n.name != "leases"] == []
        assert set(onelake.tokens) == {TOKEN}
        # Every rename into the table folder was create-only.
        renames = onelake.recorded("rename", path=f"/workspace/{ITEM_ROOT}/{schema}.schema/customers/0*")
        assert renames and all(r.header("If-None-Match") == "*" for r in renames)
        events = json.loads((on_disk / "_partnerEvents.json").read_text())
        assert events["partnerName"] == "dbt-openmirror" and events["sourceInfo"]["sourceType"] == "dbt"
        assert json.loads((folder / "_metadata.json").read_text()) == {"keyColumns": ["id"]}

    def test_a_publish_the_service_keeps_failing_is_finished_by_the_next_run(self, project, warehouse, onelake):
        schema = project.test_schema
        folder = onelake_landing_zone_on_disk(onelake) / f"{schema}.schema" / "customers"
        published = len(file_markers(folder))
        set_source(warehouse, schema, f"select * from values (1, 'a', 14), (7, 'g', 70) {COLUMNS}")
        # Every attempt to rename the run's second file into place fails: the run stops after
        # journaling and publishing the first one.
        second = f"{published + 2:020d}.parquet"
        # (A short Retry-After, which the retries honour, keeps the eight attempts quick.)
        onelake.inject(
            status=500, times=1000, operation="rename", path=f"*/customers/{second}", headers={"Retry-After": "0.1"}
        )
        _, output = run_dbt_and_capture(["run"], expect_pass=False)
        assert "HTTP 500" in output and len(file_markers(folder)) == published + 1
        onelake.faults.clear()
        _, output = run_dbt_and_capture(["run"])
        assert "Rolling forward" in output
        assert len(file_markers(folder)) == published + 2
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")

    def test_the_secret_appears_nowhere(self, project, logs_dir):
        _, output = run_dbt_and_capture(["debug"])
        assert "All checks passed" in output and "client_id" in output and SECRET not in output
        written = [
            p
            for root in (Path(str(project.project_root)), Path(logs_dir))
            for p in root.rglob("*")
            if p.is_file() and p.suffix in (".json", ".log")
        ]
        assert any(p.name == "run_results.json" for p in written)
        assert any(p.name == "dbt.log" for p in written)
        assert [p for p in written if SECRET in p.read_text(errors="replace")] == []

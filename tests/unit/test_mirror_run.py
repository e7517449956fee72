"""One model's publish, driven as the materialization drives it, against a warehouse without Spark
(tests/support/fake_warehouse.py) and a real local landing zone: what reaches the table folder,
what the snapshot records, and which statements ran."""

import json
from pathlib import Path
from typing import Any

import pytest

from dbt.adapters.openmirror.errors import RunInterruptedError
from dbt.adapters.openmirror.planning.run_plan import SNAPSHOT_HELD, SNAPSHOT_RUN_ID, SNAPSHOT_SEQUENCE_NUMBER
from dbt.adapters.openmirror.publishing import lease
from dbt.adapters.openmirror.rules.markers import ROW_MARKER
from dbt.adapters.openmirror.run.held_changes import HeldChanges
from dbt.adapters.openmirror.spark.model_inputs import ModelInputs
from tests.support.fake_warehouse import FakeRelation
from tests.support.mirror_runs import FIRST, THIS, Project


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


def test_a_first_load_publishes_every_row_as_an_insert_and_records_the_snapshot(project: Project) -> None:
    response = project.run(FIRST)
    assert project.files() == ["00000000000000000001.parquet"]
    assert [(r["id"], r[ROW_MARKER]) for r in project.rows("00000000000000000001.parquet")] == [(1, 0), (2, 0), (3, 0)]
    assert json.loads((project.folder / "_metadata.json").read_text())["keyColumns"] == ["id"]
    assert project.snapshot()[SNAPSHOT_SEQUENCE_NUMBER] == "1"
    assert project.snapshot()[SNAPSHOT_RUN_ID] == "run-1" == project.record()["lastRunId"]
    assert project.warehouse.table(THIS).rows == FIRST
    assert (response.inserts, response.files, response.mode) == (3, ["00000000000000000001.parquet"], "initial")
    assert "openmirror_initial_load_sql" in project.warehouse.rendered
    assert project.warehouse.statements == [
        "openmirror_row_counts_sql",
        "openmirror_key_hashes_sql",
        "openmirror_sorted_bucket_scans_sql",
        "openmirror_key_problems_sql",
        "openmirror_sorted_bucket_scans_sql",
        "openmirror_spark_setting_sql",
        "openmirror_spark_setting_sql",
        "openmirror_write_files_sql",
        "openmirror_marker_counts_sql",
        "openmirror_snapshot_record_sql",
    ]
    # The key hashes and nothing else stay beside the snapshot.
    assert sorted(project.warehouse.tables) == ["customers", "customers__om_hashes"]
    assert not list((project.landing_zone / "_scratchPad").rglob("*.parquet"))


def test_an_incremental_run_publishes_the_changed_keys_from_the_key_hashes(project: Project) -> None:
    project.run(FIRST)
    response = project.run([{"id": 1, "name": "a"}, {"id": 2, "name": "B"}, {"id": 4, "name": "d"}])
    assert project.files() == ["00000000000000000001.parquet", "00000000000000000002.parquet"]
    assert [(r["id"], r["name"], r[ROW_MARKER]) for r in project.rows("00000000000000000002.parquet")] == [
        (4, "d", 0),
        (2, "B", 1),
        (3, None, 2),
    ]
    assert (response.inserts, response.updates, response.deletes, response.mode) == (1, 1, 1, "incremental")
    assert project.snapshot()[SNAPSHOT_SEQUENCE_NUMBER] == "2"
    assert project.record()["lastSequenceNumber"] == 2
    # The snapshot's key hashes were trusted: the changed keys, not a whole-row comparison.
    assert "openmirror_changed_keys_sql" in project.warehouse.statements
    assert "openmirror_changed_rows_sql" in project.warehouse.rendered
    assert "openmirror_change_rows_sql" not in project.warehouse.rendered
    # The counts are the changed keys' (one row per change row): the written file is not read back.
    second_run = project.warehouse.statements[project.warehouse.statements.index("openmirror_changed_keys_sql") :]
    assert "openmirror_count_markers_sql" in second_run and "openmirror_marker_counts_sql" not in second_run


def test_a_run_asks_for_the_snapshot_record_once(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    """Held changes, the inputs check and the diff all need `{{ this }}`'s record; on a remote
    catalog each read is a round trip, so the run reads it once (and the key hashes' once)."""
    project.inputs = ModelInputs("digest-1")  # the inputs check reads the record too
    project.run(FIRST)
    project.inputs = ModelInputs("digest-2")
    read: list[str] = []
    query = project.warehouse.query

    def recording(macro: str, **values: Any) -> list[tuple[Any, ...]]:
        if macro == "openmirror_show_properties_sql":
            read.append(str(values["relation"]))
        return query(macro, **values)

    monkeypatch.setattr(project.warehouse, "query", recording)
    project.run([{"id": 1, "name": "z"}, *FIRST[1:]])
    assert project.built[-1] and "openmirror_changed_keys_sql" in project.warehouse.statements
    assert sorted(read) == ["analytics.customers", "analytics.customers__om_hashes"]


def test_key_hashes_that_do_not_match_the_snapshot_compare_whole_rows(project: Project) -> None:
    project.run(FIRST)
    project.warehouse.drop(FakeRelation("analytics", "customers__om_hashes"))
    project.run([{"id": 1, "name": "z"}, *FIRST[1:]])
    assert [(r["id"], r[ROW_MARKER]) for r in project.rows("00000000000000000002.parquet")] == [(1, 1)]
    assert "openmirror_change_rows_sql" in project.warehouse.rendered
    assert "openmirror_changed_keys_sql" not in project.warehouse.statements


def test_a_run_without_changes_publishes_no_file_and_the_journal_names_it(project: Project) -> None:
    project.run(FIRST)
    response = project.run(FIRST)
    assert project.files() == ["00000000000000000001.parquet"]
    assert response.files == [] and response.mode == "incremental"
    assert project.record()["lastRunId"] == "run-2" == project.snapshot()[SNAPSHOT_RUN_ID]
    assert project.record()["lastSequenceNumber"] == 1 and "pending" not in project.record()
    # No changed keys: nothing is read back, written or counted.
    second_run = project.warehouse.statements[project.warehouse.statements.index("openmirror_changed_keys_sql") :]
    assert "openmirror_write_files_sql" not in second_run and "openmirror_marker_counts_sql" not in second_run


def test_a_full_refresh_rebuilds_the_table_folder_from_one(project: Project) -> None:
    project.run(FIRST)
    project.run([{"id": 1, "name": "x"}])
    response = project.run([{"id": 7, "name": "g"}], full_refresh=True)
    assert project.files() == ["00000000000000000001.parquet"]
    assert [(r["id"], r[ROW_MARKER]) for r in project.rows("00000000000000000001.parquet")] == [(7, 0)]
    assert response.mode == "rebuild" and project.snapshot()[SNAPSHOT_SEQUENCE_NUMBER] == "1"


def test_a_dry_run_writes_nothing_and_reports_the_change(project: Project) -> None:
    project.run(FIRST)
    before = sorted(p.relative_to(project.landing_zone) for p in project.landing_zone.rglob("*"))
    response = project.run([*FIRST, {"id": 4, "name": "d"}], dry_run=True)
    assert sorted(p.relative_to(project.landing_zone) for p in project.landing_zone.rglob("*")) == before
    assert response.inserts == 1 and response.files == ["00000000000000000002.parquet"]
    assert response.mode == "dry run: incremental"
    assert project.snapshot()[SNAPSHOT_RUN_ID] == "run-1"
    assert sorted(project.warehouse.tables) == ["customers", "customers__om_hashes"]


class Crash(Exception):
    """The process stops here."""


def test_a_run_that_stopped_at_the_snapshot_rename_is_rolled_forward_by_the_next(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.run(FIRST)
    rename = project.warehouse.rename

    def rename_then_crash(relation: Any, to: Any) -> None:
        rename(relation, to)
        if to.identifier == f"{relation.identifier}__dbt_backup":
            raise Crash(f"moved {relation} aside")

    monkeypatch.setattr(project.warehouse, "rename", rename_then_crash)
    with pytest.raises(Crash, match="moved analytics.customers aside"):
        project.run([*FIRST, {"id": 4, "name": "d"}])
    monkeypatch.undo()
    assert "pending" in project.record()  # journaled, renamed, not committed
    assert "customers" not in project.warehouse.tables  # renamed aside, the output not yet in place
    response = project.run([*FIRST, {"id": 4, "name": "d"}])
    assert any("recovering" in w and "Rolling forward" in w for w in project.warned)
    assert response.warnings and response.files == []  # the crashed run published the change
    assert project.files() == ["00000000000000000001.parquet", "00000000000000000002.parquet"]
    assert project.record()["lastRunId"] == "run-3" and "pending" not in project.record()
    assert project.warehouse.table(THIS).rows == [*FIRST, {"id": 4, "name": "d"}]


def test_a_run_that_stopped_before_publishing_is_discarded_by_the_next(project: Project) -> None:
    project.run(FIRST)
    # Journaled, nothing renamed yet, and then its output is gone too.
    original = project.context.publisher.complete

    def stop(pending: Any, fence: Any) -> None:
        raise Crash("stopped before the renames")

    project.context.publisher.complete = stop  # type: ignore[method-assign]
    with pytest.raises(Crash):
        project.run([*FIRST, {"id": 4, "name": "d"}])
    project.context.publisher.complete = original  # type: ignore[method-assign]
    project.warehouse.drop(FakeRelation("analytics", "customers__om_new"))  # the output went too
    project.run(FIRST)
    assert any("discarding what it staged" in w for w in project.warned)
    assert project.files() == ["00000000000000000001.parquet"]
    assert project.record()["lastRunId"] == "run-3"
    assert not list((project.landing_zone / "_scratchPad").rglob("*.parquet"))


def test_a_change_whose_tests_failed_is_discarded_and_the_snapshot_goes_back(tmp_path: Path) -> None:
    project = Project(tmp_path, {"publish": "after_tests"})
    project.run(FIRST)
    project.held.finish([], {"nodes": {}})
    published = project.warehouse.table(THIS).rows
    project.run([*FIRST, {"id": 4, "name": "d"}])
    test = "test.shop.unique_customers_id"
    nodes = {test: {"resource_type": "test", "depends_on": {"nodes": ["model.shop.customers"]}}}
    [line] = project.held.finish([{"node": {"unique_id": test}, "status": "fail"}], {"nodes": nodes}).lines
    assert "not published" in line and project.files() == ["00000000000000000001.parquet"]
    assert project.warehouse.table(THIS).rows == published and SNAPSHOT_HELD not in project.snapshot()


def test_a_change_held_for_its_tests_is_published_at_the_invocations_end(tmp_path: Path) -> None:
    project = Project(tmp_path, {"publish": "after_tests"})
    response = project.run(FIRST)
    assert response._message.startswith("held: ") and project.files() == []
    assert response.mode == "held: initial" and response.files == ["00000000000000000001.parquet"]
    assert project.snapshot()[SNAPSHOT_HELD] == "true"
    lines = project.held.finish([], {"nodes": {}}).lines
    assert lines == [
        "Model 'customers': published analytics.schema/customers (1 files, run run-1): the model has no tests"
    ]
    assert project.files() == ["00000000000000000001.parquet"]
    assert SNAPSHOT_HELD not in project.snapshot()
    assert "openmirror_unset_properties_sql" in project.warehouse.statements


@pytest.mark.parametrize("renamed_last", ["customers__om_new", "customers__om_audit_base"])
def test_a_snapshot_a_killed_process_left_aside_is_put_back_by_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, renamed_last: str
) -> None:
    """Holding a change renames the published snapshot aside, then the output (`__om_new`) into
    `{{ this }}`; discarding it after a failed test drops `{{ this }}`, then renames the snapshot
    back (`__om_audit_base`). A process killed before that second rename left no `{{ this }}`: the
    next run took itself for a first run and rebuilt the mirrored table."""
    project = Project(tmp_path, {"publish": "after_tests"})
    project.run(FIRST)
    project.held.finish([], {"nodes": {}})
    published = project.warehouse.table(THIS).rows
    rename = project.warehouse.rename

    def killed_at_the_second_rename(relation: Any, to: Any) -> None:
        if relation.identifier == renamed_last:
            raise SystemExit("killed")
        rename(relation, to)

    monkeypatch.setattr(project.warehouse, "rename", killed_at_the_second_rename)
    test = "test.shop.unique_customers_id"
    nodes = {test: {"resource_type": "test", "depends_on": {"nodes": ["model.shop.customers"]}}}
    with pytest.raises(SystemExit):
        project.run([*FIRST, {"id": 4, "name": "d"}])
        project.held.finish([{"node": {"unique_id": test}, "status": "fail"}], {"nodes": nodes})
    monkeypatch.undo()
    lease._ACTIVE_RUNS.pop("run-2", None)  # the process that held the lease is gone
    assert "customers" not in project.warehouse.tables and "customers__om_audit_base" in project.warehouse.tables
    project.held = HeldChanges(project.context)
    response = project.run([*FIRST, {"id": 5, "name": "e"}])
    project.held.finish([], {"nodes": {}})
    assert response.mode == "held: incremental" and response.inserts == 1
    assert any("customers__om_audit_base" in w and "back in place" in w for w in project.warned)
    assert project.files() == ["00000000000000000001.parquet", "00000000000000000002.parquet"]
    assert [(r["id"], r[ROW_MARKER]) for r in project.rows("00000000000000000002.parquet")] == [(5, 0)]
    assert project.warehouse.table(THIS).rows == [*published, {"id": 5, "name": "e"}]


def test_a_run_cancelled_after_staging_its_files_leaves_none_behind(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dbt cancelled the run (--fail-fast, Ctrl-C) after Spark wrote the change files but before
    they were numbered: nothing journals them, so no later run would ever find them."""
    query = project.warehouse.query

    def cancelled_at_the_count(macro: str, **values: Any) -> list[tuple[Any, ...]]:
        if macro == "openmirror_marker_counts_sql":
            raise RunInterruptedError("interrupted: the run was cancelled before this statement")
        return query(macro, **values)

    monkeypatch.setattr(project.warehouse, "query", cancelled_at_the_count)
    with pytest.raises(RunInterruptedError):
        project.run(FIRST)
    assert "openmirror_write_files_sql" in project.warehouse.statements
    assert not list((project.landing_zone / "_scratchPad" / "dbt-openmirror").glob("run-*"))
    monkeypatch.undo()
    project.run(FIRST)
    assert project.files() == ["00000000000000000001.parquet"]


def test_an_empty_output_that_deletes_every_row_is_a_warning(project: Project) -> None:
    """An upstream table built by `dbt build --empty` (or a source emptied) makes the next run
    delete every mirrored row: allowed, but never silent (and `--warn-error` stops it)."""
    project.run(FIRST)
    project.run([])
    assert [r[ROW_MARKER] for r in project.rows("00000000000000000002.parquet")] == [2, 2, 2]
    assert any("its output is empty, so this run deletes every row" in w for w in project.warned)
    warned = len(project.warned)
    project.run([])  # an empty table staying empty deletes nothing
    project.warehouse.drop(FakeRelation("analytics", "customers__om_hashes"))
    project.run([])  # also when whole rows are compared (nothing counted before writing)
    assert "openmirror_change_rows_sql" in project.warehouse.rendered
    assert len(project.warned) == warned

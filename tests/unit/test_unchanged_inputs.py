"""A full-diff run whose model reads what its snapshot was built from builds and publishes nothing
(MirrorRun.inputs_unchanged); every other run builds, and records what it read. Against the fake
warehouse, with the digest the in-process session would give injected."""

import hashlib
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from dbt.adapters.openmirror.planning.run_plan import SNAPSHOT_INPUTS, SNAPSHOT_RUN_ID, snapshot_record
from dbt.adapters.openmirror.spark.model_inputs import ADAPTER_SETTINGS, ModelInputs
from dbt.adapters.openmirror.spark.parquet_writes import PARQUET_WRITE_SETTINGS
from tests.support.mirror_runs import FIRST, THIS, Project

CHANGED = [{"id": 1, "name": "a"}, {"id": 2, "name": "B"}]


def landing_zone_bytes(project: Project) -> dict[str, str]:
    return {
        str(path.relative_to(project.landing_zone)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(project.landing_zone.rglob("*"))
        if path.is_file()
    }


@pytest.fixture
def project(tmp_path: Path) -> Project:
    project = Project(tmp_path)
    project.inputs = ModelInputs("digest-1")
    project.run(FIRST)
    return project


def test_a_run_reading_what_its_snapshot_was_built_from_builds_and_publishes_nothing(project: Project) -> None:
    before, snapshot = landing_zone_bytes(project), dict(project.snapshot())
    response = project.run(CHANGED)  # rows the run would have built, had it built
    assert project.built == [True, False]
    assert (response.rows_affected, response.files, response.mode) == (0, [], "incremental")
    assert "inputs unchanged since run run-1" in str(response)
    assert landing_zone_bytes(project) == before
    assert project.snapshot() == snapshot
    assert project.warehouse.table(THIS).rows == FIRST
    # No statement ran but the reads of the snapshot's record.
    assert set(project.warehouse.statements) == {"openmirror_show_properties_sql"}
    # The lease is free: another run of the same table can start.
    project.inputs = ModelInputs("digest-2")
    assert project.run(CHANGED).updates == 1 and project.built[-1]


def test_a_run_reading_other_inputs_builds_and_records_them(project: Project) -> None:
    project.inputs = ModelInputs("digest-2")
    response = project.run(CHANGED)
    assert project.built == [True, True] and (response.updates, response.deletes) == (1, 1)
    record = snapshot_record(project.snapshot())
    assert record is not None and record.built_from("digest-2") and not record.built_from("digest-1")
    assert project.run(CHANGED).rows_affected == 0 and project.built[-1] is False


@pytest.mark.parametrize(
    "run_kwargs",
    [{"full_refresh": True}, {"reconcile": True}],
    ids=["full-refresh", "reconcile"],
)
def test_full_refresh_and_reconcile_runs_always_build(project: Project, run_kwargs: dict[str, bool]) -> None:
    project.run(CHANGED, **run_kwargs)
    assert project.built == [True, True]
    assert project.warehouse.table(THIS).rows == CHANGED


def test_without_a_digest_a_run_builds_and_records_none(project: Project) -> None:
    project.inputs = ModelInputs(None, "it reads JDBCRelation, which is not a file relation")
    project.run(FIRST)
    project.run(FIRST)
    assert project.built == [True, True, True]
    assert SNAPSHOT_INPUTS not in project.snapshot()


def test_a_table_folder_that_no_longer_ends_where_the_snapshot_does_is_loaded_again(project: Project) -> None:
    shutil.rmtree(project.folder)
    response = project.run(FIRST)
    assert project.built == [True, True]
    assert response.mode == "initial" and response.inserts == 3
    assert project.files() == ["00000000000000000001.parquet"]


def test_inputs_that_change_while_the_output_is_built_are_not_recorded(project: Project) -> None:
    """Read before the build they are one thing, after it another: the output may be either, so a
    later run reading the first again (a source changed back) must build."""
    read = iter([ModelInputs("digest-2"), ModelInputs("digest-3")])
    project.context = replace(project.context, model_inputs=lambda sql, context: next(read))
    project.run(CHANGED)
    assert SNAPSHOT_INPUTS not in project.snapshot()
    project.context = replace(project.context, model_inputs=lambda sql, context: ModelInputs("digest-2"))
    project.run(CHANGED)
    assert project.built == [True, True, True]
    # Read alike before and after the build, they are recorded: the next run skips.
    project.run(CHANGED)
    assert project.built[-1] is False


def test_a_model_can_turn_the_skip_off(tmp_path: Path) -> None:
    project = Project(tmp_path, {"skip_unchanged_inputs": False})
    project.inputs = ModelInputs("digest-1")
    project.run(FIRST)
    project.run(FIRST)
    assert project.built == [True, True]
    assert SNAPSHOT_INPUTS not in project.snapshot()


def test_the_recorded_digest_is_bound_to_the_run_that_built_the_snapshot(project: Project) -> None:
    """A record carried onto another snapshot (a later run's table or view) never matches."""
    properties = dict(project.snapshot())
    assert properties[SNAPSHOT_INPUTS] != "digest-1"
    carried = snapshot_record({**properties, SNAPSHOT_RUN_ID: "run-9"})
    assert carried is not None and not carried.built_from("digest-1")
    held = snapshot_record({**properties, "openmirror.held": "true"})
    assert held is not None and not held.built_from("digest-1")


def test_the_settings_left_out_of_the_digest_are_exactly_those_the_adapters_statements_set() -> None:
    """A setting the adapter changes mid-invocation would make two runs over the same inputs
    differ; any other `spark.sql.*` setting may change what a query returns and stays in. The
    settings Spark writes files with are set from spark/parquet_writes.py."""
    root = Path(__file__).parents[2] / "macros"
    set_by_macros = {
        match.group(1)
        for path in root.rglob("*.sql")
        for match in re.finditer(r"\b(?:set|reset)\s+(spark\.sql\.[\w.]+)", path.read_text(), re.IGNORECASE)
    }
    assert set_by_macros | set(PARQUET_WRITE_SETTINGS) == ADAPTER_SETTINGS

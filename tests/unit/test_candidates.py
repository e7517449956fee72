"""Incremental open_mirror models: when `is_incremental()` is true, and the delete flag column."""

import pytest

from dbt.adapters.openmirror.errors import MirrorConfigError
from dbt.adapters.openmirror.planning.candidates import candidate_runs_after, delete_flag_column, selects_candidates
from dbt.adapters.openmirror.planning.run_plan import (
    Destination,
    SnapshotRecord,
    snapshot_properties,
    snapshot_record,
)
from dbt.adapters.openmirror.planning.schema_plan import ColumnSpec
from dbt.adapters.openmirror.run.config import mirror_config

RECORDED = SnapshotRecord("s.schema/t", 3, "run-3")


@pytest.mark.parametrize(
    "snapshot, full_refresh, reconcile, reconcile_every, expected",
    [
        (None, False, False, 0, False),  # first run, or a snapshot this adapter did not record
        (RECORDED, False, False, 0, True),
        (SnapshotRecord("s.schema/t", 3, "run-3", held=True), False, False, 0, False),  # a dead run's held change
        (RECORDED, True, False, 0, False),
        (RECORDED, False, True, 0, False),
        (RECORDED, False, False, 1, False),  # every run in full
        (RECORDED, False, False, 2, True),  # the run after a full one
        (SnapshotRecord("s.schema/t", 3, "run-3", candidate_runs=1), False, False, 2, False),
        (SnapshotRecord("s.schema/t", 3, "run-3", candidate_runs=1), False, False, 3, True),
        (SnapshotRecord("s.schema/t", 3, "run-3", candidate_runs=2), False, False, 3, False),
    ],
)
def test_when_a_model_selects_candidates(snapshot, full_refresh, reconcile, reconcile_every, expected):
    assert selects_candidates(snapshot, full_refresh, reconcile, reconcile_every) is expected


def test_the_snapshot_counts_candidate_runs_in_a_row():
    assert candidate_runs_after(None, candidates=False) == 0
    assert candidate_runs_after(RECORDED, candidates=True) == 1
    two = candidate_runs_after(SnapshotRecord("f", 1, candidate_runs=1), candidates=True)
    assert two == 2
    assert candidate_runs_after(SnapshotRecord("f", 1, candidate_runs=5), candidates=False) == 0
    properties = snapshot_properties(Destination("m", "lz", "f", "o"), 1, "run-1", ["id"], candidate_runs=two)
    record = snapshot_record(properties)
    assert record is not None and record.candidate_runs == 2
    del properties["openmirror.candidate_runs"]  # a snapshot recorded before incremental models
    assert snapshot_record(properties).candidate_runs == 0


def test_the_delete_flag_is_a_boolean_column_of_the_model():
    columns = [ColumnSpec("id", "int"), ColumnSpec("_Fivetran_Deleted", "boolean"), ColumnSpec("n", "int")]
    assert delete_flag_column("m", "_fivetran_deleted", columns) == "_Fivetran_Deleted"
    with pytest.raises(MirrorConfigError, match=r"Model 'm': delete_flag column 'n' is int, not boolean"):
        delete_flag_column("m", "n", columns)
    with pytest.raises(MirrorConfigError, match=r"delete_flag 'gone' is not a column of the model \(it has id,"):
        delete_flag_column("m", "gone", columns)


@pytest.mark.parametrize(
    "config, message",
    [
        ({"delete_flag": ""}, "delete_flag must name a boolean column"),
        ({"delete_flag": 1}, "delete_flag must name a boolean column"),
        ({"delete_flag": "ID"}, "delete_flag 'ID' is a unique_key column"),
        ({"reconcile_every": -1}, "reconcile_every must be a whole number of at least 0"),
        ({"reconcile_every": True}, "reconcile_every must be a whole number of at least 0"),
    ],
)
def test_bad_incremental_configs_are_refused(config, message):
    with pytest.raises(MirrorConfigError, match=message):
        mirror_config("m", "s", "t", {"unique_key": "id", **config})


def test_incremental_configs():
    mirror = mirror_config("m", "s", "t", {"unique_key": "id", "delete_flag": "deleted", "reconcile_every": 24})
    assert (mirror.delete_flag, mirror.reconcile_every) == ("deleted", 24)
    assert mirror_config("m", "s", "t", {"unique_key": "id"}).delete_flag is None

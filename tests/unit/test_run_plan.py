import pytest

from dbt.adapters.openmirror.errors import KeyColumnsError, PublishError
from dbt.adapters.openmirror.publisher import TableFolderState
from dbt.adapters.openmirror.run_plan import (
    INCREMENTAL,
    INITIAL,
    REBUILD,
    SnapshotRecord,
    plan_run,
    snapshot_properties,
    snapshot_record,
)
from dbt.adapters.openmirror.schema_plan import ColumnSpec

FOLDER = "s.schema/t"
COLUMNS = [ColumnSpec("id", "int"), ColumnSpec("v", "string")]
NO_FOLDER = TableFolderState(False, None, 0)
AT_3 = TableFolderState(True, ["id"], 3)


def plan(folder=AT_3, snapshot=SnapshotRecord(FOLDER, 3), full_refresh=False, previous=COLUMNS,
         current=COLUMNS, on_schema_change="append_new_columns", keys=("id",)):
    return plan_run("m", FOLDER, list(keys), folder, snapshot, full_refresh, previous, current,
                    on_schema_change)


def test_snapshot_matching_the_folder_publishes_incrementally():
    assert plan().mode == INCREMENTAL


def test_first_publish_and_missing_folder_are_initial_loads():
    assert plan(folder=NO_FOLDER, snapshot=None, previous=None).mode == INITIAL
    assert plan(folder=NO_FOLDER).reason == "the table folder was missing"


@pytest.mark.parametrize(
    "snapshot, reason",
    [
        (None, "no snapshot table"),
        (SnapshotRecord("other.schema/t", 3), "published to other.schema/t"),
        (SnapshotRecord(FOLDER, 2), "matches file 2 but the table folder ends at 3"),
    ],
)
def test_untrusted_snapshot_rebuilds(snapshot, reason):
    result = plan(snapshot=snapshot)
    assert result.mode == REBUILD and reason in result.reason
    assert result.schema.kept == []  # a rebuild publishes the model's columns only


def test_full_refresh():
    assert plan(full_refresh=True).mode == REBUILD
    assert plan(folder=NO_FOLDER, full_refresh=True).mode == INITIAL


def test_changed_key_fails_unless_full_refresh():
    with pytest.raises(KeyColumnsError, match="declared with keyColumns \\['id'\\]"):
        plan(keys=("v",))
    assert plan(keys=("v",), full_refresh=True).mode == REBUILD


def test_schema_rebuild_under_sync_all_columns():
    result = plan(current=[ColumnSpec("id", "int")], on_schema_change="sync_all_columns")
    assert result.mode == REBUILD and "sync_all_columns" in result.reason


def test_snapshot_record_from_table_properties():
    properties = {"openmirror.table_folder": FOLDER, "openmirror.sequence_number": "12", "x": "y"}
    assert snapshot_record(properties) == SnapshotRecord(FOLDER, 12, None)
    properties = snapshot_properties(FOLDER, 12, "run-7")
    assert snapshot_record(properties) == SnapshotRecord(FOLDER, 12, "run-7")
    assert snapshot_record({"openmirror.table_folder": FOLDER}) is None
    assert snapshot_record({"openmirror.table_folder": FOLDER, "openmirror.sequence_number": "x"}) is None


def test_files_we_did_not_publish_stop_the_run_unless_it_rebuilds():
    conflict = TableFolderState(True, ["id"], 4, numbering_conflict="holds file 4 but ... 3")
    with pytest.raises(PublishError, match="Model 'm': holds file 4"):
        plan(folder=conflict)
    assert plan(folder=conflict, full_refresh=True).mode == REBUILD

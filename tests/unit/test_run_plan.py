import pytest

from dbt.adapters.openmirror.errors import KeyColumnsError, PublishError
from dbt.adapters.openmirror.planning.run_plan import (
    INCREMENTAL,
    INITIAL,
    REBUILD,
    Destination,
    SnapshotRecord,
    left_behind,
    plan_run,
    snapshot_properties,
    snapshot_record,
)
from dbt.adapters.openmirror.planning.schema_plan import ColumnSpec
from dbt.adapters.openmirror.publishing.publisher import PublishRecord, TableFolderState

FOLDER = "s.schema/t"
LANDING_ZONE = "/data/lz"
HERE = Destination("m", LANDING_ZONE, FOLDER, "analytics.m")
COLUMNS = [ColumnSpec("id", "int"), ColumnSpec("v", "string")]
NO_FOLDER = TableFolderState(False, None, 0)
AT_3 = TableFolderState(True, ["id"], 3)


def plan(
    folder=AT_3,
    snapshot=SnapshotRecord(FOLDER, 3),
    full_refresh=False,
    previous=COLUMNS,
    current=COLUMNS,
    on_schema_change="append_new_columns",
    keys=("id",),
    destination=HERE,
):
    return plan_run(destination, list(keys), folder, snapshot, full_refresh, previous, current, on_schema_change)


def test_snapshot_matching_the_folder_publishes_incrementally():
    assert plan().mode == INCREMENTAL


def test_first_publish_and_missing_folder_are_initial_loads():
    assert plan(folder=NO_FOLDER, snapshot=None, previous=None).mode == INITIAL
    assert plan(folder=NO_FOLDER).reason == "the table folder was missing"


@pytest.mark.parametrize(
    "snapshot, reason",
    [
        (SnapshotRecord("other.schema/t", 3), f"the snapshot was published to other.schema/t, not {FOLDER}"),
        (
            SnapshotRecord(FOLDER, 3, landing_zone="/elsewhere"),
            f"the snapshot was published to /elsewhere/{FOLDER}, not to {LANDING_ZONE}/{FOLDER}",
        ),
    ],
)
def test_a_missing_folder_says_when_the_snapshot_was_published_elsewhere(snapshot, reason):
    """A model given another mirror_table or target finds no folder there: the reason is where its
    snapshot went, not a folder that went missing."""
    result = plan(folder=NO_FOLDER, snapshot=snapshot)
    left = "; that table folder is left as last published (delete it to drop its mirrored table)"
    assert (result.mode, result.reason) == (INITIAL, reason + left)


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


def test_only_full_loads_nobody_asked_for_are_unexpected():
    assert not plan(full_refresh=True).unexpected and not plan().unexpected
    assert not plan(folder=NO_FOLDER, snapshot=None, previous=None).unexpected
    assert plan(folder=NO_FOLDER).unexpected  # the folder was deleted: a full reload
    assert plan(snapshot=None).unexpected


def test_changed_key_fails_unless_full_refresh():
    with pytest.raises(KeyColumnsError, match="declared with keyColumns \\['id'\\]"):
        plan(keys=("v",))
    assert plan(keys=("v",), full_refresh=True).mode == REBUILD
    # Declared in a folder without our journal (another publisher's, or the journal deleted): not
    # a key the model changed, and said so.
    with pytest.raises(KeyColumnsError, match=r"declares keyColumns \['id'\], and no journal of dbt-openmirror"):
        plan(keys=("v",), folder=TableFolderState(True, ["id"], 0, journaled=False), snapshot=None)


@pytest.mark.parametrize("snapshot", [SnapshotRecord(FOLDER, 3), SnapshotRecord(FOLDER, 2), None])
def test_a_folder_without_our_journal_is_taken_over_only_by_a_full_refresh(snapshot):
    """Data files no journal accounts for may be anyone's (another publisher's table, a folder
    copied from another table): publishing changes after them is as wrong as rebuilding over them,
    also where their last number is the snapshot's. Package mode's publish refuses the same."""
    folder = TableFolderState(True, ["id"], 3, journaled=False)
    with pytest.raises(PublishError, match=r"holds files up to 00000000000000000003.parquet, and no journal"):
        plan(folder=folder, snapshot=snapshot)
    assert plan(folder=folder, snapshot=snapshot, full_refresh=True).mode == REBUILD


def test_schema_rebuild_under_sync_all_columns():
    result = plan(current=[ColumnSpec("id", "int")], on_schema_change="sync_all_columns")
    assert result.mode == REBUILD and "sync_all_columns" in result.reason


def test_snapshot_record_from_table_properties():
    properties = {"openmirror.table_folder": FOLDER, "openmirror.sequence_number": "12", "x": "y"}
    assert snapshot_record(properties) == SnapshotRecord(FOLDER, 12, None)
    properties = snapshot_properties(HERE, 12, "run-7", ["id", "V"])
    assert snapshot_record(properties) == SnapshotRecord(FOLDER, 12, "run-7", LANDING_ZONE, ["id", "V"])
    assert snapshot_record({"openmirror.table_folder": FOLDER}) is None
    assert snapshot_record({"openmirror.table_folder": FOLDER, "openmirror.sequence_number": "x"}) is None


def test_files_we_did_not_publish_stop_the_run_unless_it_rebuilds():
    conflict = TableFolderState(True, ["id"], 4, folder_conflict="holds file 4 but ... 3")
    with pytest.raises(PublishError, match="Model 'm': holds file 4"):
        plan(folder=conflict)
    assert plan(folder=conflict, full_refresh=True).mode == REBUILD


def test_a_snapshot_published_to_another_landing_zone_rebuilds():
    """One model, several landing zones (a var, or dev and prod sharing a metastore): the
    snapshot matches the folder it was published to, in the landing zone it was published to."""
    elsewhere = SnapshotRecord(FOLDER, 3, "run-2", "/data/other_lz", ["id", "v"])
    result = plan(folder=TableFolderState(True, ["id"], 3, last_run_id="run-2"), snapshot=elsewhere)
    assert result.mode == REBUILD and "/data/other_lz" in result.reason and LANDING_ZONE in result.reason


def test_a_folder_whose_last_publish_is_not_the_snapshots_rebuilds():
    """A -> B -> A: file numbers alone match, but A's journal names another run."""
    snapshot = SnapshotRecord(FOLDER, 3, "run-2", LANDING_ZONE, ["id", "v"])
    result = plan(folder=TableFolderState(True, ["id"], 3, last_run_id="run-1"), snapshot=snapshot)
    assert result.mode == REBUILD and "run-1" in result.reason and "run-2" in result.reason
    same = plan(folder=TableFolderState(True, ["id"], 3, last_run_id="run-2"), snapshot=snapshot)
    assert same.mode == INCREMENTAL
    # Snapshots written before the landing zone was recorded are not held to the run check.
    assert (
        plan(
            folder=TableFolderState(True, ["id"], 3, last_run_id="run-1"), snapshot=SnapshotRecord(FOLDER, 3, "run-2")
        ).mode
        == INCREMENTAL
    )


def test_two_models_or_targets_publishing_one_table_folder_fail_naming_both():
    folder = TableFolderState(True, ["id"], 3, owner="analytics.other")
    with pytest.raises(PublishError) as failed:
        plan(folder=folder)
    message = str(failed.value)
    assert "Model 'm'" in message and "analytics.other" in message and "analytics.m" in message
    assert "mirror_table" in message and "--full-refresh" in message
    assert plan(folder=folder, full_refresh=True).mode == REBUILD  # taking the folder over
    assert plan(folder=TableFolderState(True, ["id"], 3, owner="analytics.m")).mode == INCREMENTAL


def test_keys_keep_the_spelling_the_mirror_declared():
    snapshot = SnapshotRecord(FOLDER, 3, None, None, ["ID", "v"])
    result = plan(folder=TableFolderState(True, ["ID"], 3), snapshot=snapshot, keys=("id",))
    assert result.mode == INCREMENTAL and result.key_columns == ["ID"]
    assert [c.published_name for c in result.schema.columns] == ["ID", "v"]
    rebuilt = plan(folder=TableFolderState(True, ["ID"], 3), snapshot=snapshot, keys=("id",), full_refresh=True)
    assert rebuilt.key_columns == ["id"]  # a rebuild declares the model's spelling


def test_a_snapshot_whose_columns_are_not_the_published_ones_rebuilds():
    """Someone added or dropped a column of `{{ this }}` by hand: its rows no longer say what the
    mirror holds under the names it knows, so the table is loaded again from the model."""
    recorded = SnapshotRecord(FOLDER, 3, None, None, ["id", "V"])
    altered = [*COLUMNS, ColumnSpec("note", "string")]
    result = plan(snapshot=recorded, previous=altered, current=altered)
    assert result.mode == REBUILD and "note" in result.reason and "outside" in result.reason
    assert result.schema.kept == [] and [c.name for c in result.schema.columns] == ["id", "v", "note"]
    dropped = plan(snapshot=recorded, previous=COLUMNS[:1], current=COLUMNS)
    assert dropped.mode == REBUILD and "'V'" in dropped.reason
    # Spelled otherwise only in case, or recorded before the published columns were: as published.
    assert plan(snapshot=recorded).mode == INCREMENTAL
    assert plan(snapshot=SnapshotRecord(FOLDER, 3), previous=altered, current=altered).mode == INCREMENTAL


def test_a_folder_the_model_published_under_another_relation_of_its_schema_is_named():
    journals = {
        "s.schema/old_alias": PublishRecord(1, ["id"], "m", owner="analytics.old_alias"),  # its alias changed: named
        "s.schema/other": PublishRecord(1, ["id"], "other_model", owner="analytics.other"),  # renamed: named
        "s.schema/dev": PublishRecord(1, ["id"], "m", owner="dev_schema.m"),  # another target's schema: not this one's
        "s.schema/m_again": PublishRecord(
            1, ["id"], "m", owner="analytics.m"
        ),  # the same relation (mirror_table changed): run_plan says so
        "s.schema/no_owner": PublishRecord(1, ["id"], "m", owner=None),
        "s.schema/m_v2": PublishRecord(
            1, ["id"], "m", owner="analytics.m_v2"
        ),  # another version of the model, built by the project
    }
    old_alias, other = left_behind(HERE, journals, {"analytics.m", "analytics.m_v2"})
    assert old_alias.startswith("s.schema/old_alias was published by this model as analytics.old_alias")
    # A model whose file was renamed: its journal names the old model, which the project no longer has.
    assert other.startswith(
        "s.schema/other was published by model 'other_model', which the project no longer has "
        "(renamed to this one?), as analytics.other"
    )
    assert all("left as last published" in said for said in (old_alias, other))
    # Built by the project under another model: not left behind.
    built = {"analytics.m", "analytics.m_v2", "analytics.other", "analytics.old_alias"}
    assert left_behind(HERE, journals, built) == []

"""The publisher against a real local landing zone, with Parquet files written by pyarrow."""

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dbt.adapters.openmirror.errors import LeaseHeldError, PublishError, TargetExistsError, WriteConflictError
from dbt.adapters.openmirror.publishing.lease import LeaseManager, lease_folder
from dbt.adapters.openmirror.publishing.publisher import Publisher, PublishRecord, TableFolderState
from dbt.adapters.openmirror.rules.landing_zone import STAGING_ROOT, scratch_path
from dbt.adapters.openmirror.rules.markers import INSERT
from dbt.adapters.openmirror.storage import LocalStorage
from tests.support.killed_midway import Killed, killed_after_unlinks

TABLE = "s.schema/t"
STAGED = "_scratchPad/dbt-openmirror/run-1"


@pytest.fixture
def storage(tmp_path):
    return LocalStorage(tmp_path)


def stage(storage, *row_counts, marker_type=pa.int32(), run_id="run-1", columns=("id",)):
    """Spark-like staging: part files, a _SUCCESS marker and checksum files (without a marker
    column when `marker_type` is None, as full loads are written)."""
    folder = storage.root / scratch_path(run_id)
    folder.mkdir(parents=True, exist_ok=True)
    for index, rows in enumerate(row_counts):
        table = pa.table({column: list(range(rows)) for column in columns})
        if marker_type is not None:
            table = table.append_column("__rowMarker__", pa.array([0] * rows, marker_type))
        pq.write_table(table, folder / f"part-{index:05d}-x.snappy.parquet")
        (folder / f".part-{index:05d}-x.snappy.parquet.crc").write_bytes(b"crc")
    (folder / "_SUCCESS").write_bytes(b"")


def prepare(storage, expected_rows, last=0, rebuild=False, full_load=None, run_id="run-1"):
    publisher = Publisher(storage)
    state = TableFolderState(last > 0, ["id"], last)
    full_load = (last == 0 or rebuild) if full_load is None else full_load
    expected = {INSERT: expected_rows}  # stage() marks every row an insert
    return publisher.prepare(TABLE, ["id"], scratch_path(run_id), state, expected, "m", run_id, full_load, rebuild)


class Run:
    """A run holding the table's lease; the publisher's writes show its fence."""

    def __init__(self, storage, run_id, leases=None):
        self.leases = leases or LeaseManager(storage)
        self.lease = self.leases.acquire(TABLE, run_id, "m", ttl_seconds=60, wait_seconds=0)
        self.fence = self.leases.fence(self.lease)

    def end(self):
        self.leases.release(self.lease)


def publish_under(run, pending, storage):
    publisher = Publisher(storage)
    publisher.begin(pending, run.fence)
    publisher.complete(pending, run.fence)
    publisher.commit(pending, run.fence)


def publish(storage, expected_rows, last=0, rebuild=False):
    pending = prepare(storage, expected_rows, last, rebuild)
    run = Run(storage, pending.run_id)
    publish_under(run, pending, storage)
    run.end()
    return pending


def test_first_publish_writes_metadata_then_numbered_files(storage):
    stage(storage, 2, 3)
    published = publish(storage, 5)
    assert published.names == ["00000000000000000001.parquet", "00000000000000000002.parquet"]
    folder = storage.root / TABLE
    assert json.loads((folder / "_metadata.json").read_text()) == {"keyColumns": ["id"]}
    assert json.loads((folder / "_dbt_openmirror.json").read_text())["lastSequenceNumber"] == 2
    assert not (storage.root / STAGED).exists()
    state = Publisher(storage).table_state(TABLE)
    assert (state.exists, state.key_columns, state.last_sequence_number) == (True, ["id"], 2)


def test_next_numbers_continue_and_empty_parts_are_skipped(storage):
    stage(storage, 1)
    publish(storage, 1)
    stage(storage, 0, 2, 0)
    assert publish(storage, 2, last=1).names == ["00000000000000000002.parquet"]


def test_an_all_empty_stage_publishes_one_zero_row_file(storage):
    stage(storage, 0, 0)
    assert publish(storage, 0).names == ["00000000000000000001.parquet"]
    assert pq.read_metadata(storage.root / TABLE / "00000000000000000001.parquet").num_rows == 0


def test_numbers_in_processed_folders_and_the_record_count(storage):
    stage(storage, 1)
    publish(storage, 1)
    processed = storage.root / TABLE / "_ProcessedFiles"
    processed.mkdir()
    (storage.root / TABLE / "00000000000000000001.parquet").rename(processed / "00000000000000000001.parquet")
    assert Publisher(storage).table_state(TABLE).last_sequence_number == 1
    # After the service purges processed files, our record still knows the number.
    (processed / "00000000000000000001.parquet").unlink()
    assert Publisher(storage).table_state(TABLE).last_sequence_number == 1


def test_unexpected_last_number_publishes_nothing(storage):
    stage(storage, 1)
    publish(storage, 1)
    stage(storage, 1)
    pending = prepare(storage, 1, last=0, full_load=False)
    with pytest.raises(PublishError, match="changed during the run"):
        Publisher(storage).begin(pending, Run(storage, "run-1").fence)
    assert sorted(p.name for p in (storage.root / TABLE).glob("*.parquet")) == ["00000000000000000001.parquet"]


def test_row_count_mismatch_and_bad_marker_type(storage):
    stage(storage, 2)
    with pytest.raises(PublishError, match="hold 2 rows in 1 files, Spark counted 3"):
        publish(storage, 3)
    storage.delete_folder(STAGED)
    stage(storage, 2, marker_type=pa.int64())
    with pytest.raises(PublishError, match="no int32 __rowMarker__"):
        publish(storage, 2)
    assert not (storage.root / TABLE).exists()


@pytest.mark.parametrize(
    "written, problem",
    [
        ({"ts": pa.array([1], pa.timestamp("ms", tz="UTC"))}, "column ts holds timestamps in ms, not microseconds"),
        ({"ts": pa.array([1], pa.timestamp("ns"))}, "column ts holds timestamps in ns"),
        (
            pa.schema([("d", pa.date32())], metadata={"org.apache.spark.legacyDateTime": ""}),
            "rebased to Spark's legacy calendar",
        ),
        # Written under int96RebaseModeInWrite=LEGACY, whatever the file holds: nothing rebased.
        (pa.schema([("d", pa.date32())], metadata={"org.apache.spark.legacyINT96": ""}), None),
    ],
)
def test_staged_files_spark_wrote_with_other_settings_are_not_published(storage, written, problem):
    """A hook or a cluster's defaults can change how Spark writes after the adapter set it."""
    folder = storage.root / scratch_path("run-1")
    folder.mkdir(parents=True)
    if isinstance(written, pa.Schema):
        table = pa.table({"d": pa.array([0], pa.date32())}, schema=written)
    else:
        table = pa.table(written)
    table = table.append_column("id", pa.array([1])).append_column("__rowMarker__", pa.array([0], pa.int32()))
    pq.write_table(table, folder / "part-00000-x.parquet", coerce_timestamps=None, allow_truncated_timestamps=True)
    if problem is None:
        assert publish(storage, 1).names == ["00000000000000000001.parquet"]
        return
    with pytest.raises(PublishError, match=problem):
        publish(storage, 1)
    assert not (storage.root / TABLE).exists()


def test_a_full_load_may_be_marker_free_a_change_file_may_not(storage):
    stage(storage, 2, marker_type=None)
    assert publish(storage, 2).names == ["00000000000000000001.parquet"]
    stage(storage, 1, marker_type=None)
    with pytest.raises(PublishError, match="no int32 __rowMarker__"):
        publish(storage, 1, last=1)
    assert sorted(p.name for p in (storage.root / TABLE).glob("*.parquet")) == ["00000000000000000001.parquet"]


def test_rebuild_restarts_numbering(storage):
    stage(storage, 1)
    publish(storage, 1)
    stage(storage, 1)
    publish(storage, 1, last=1)
    stage(storage, 4)
    assert publish(storage, 4, last=2, rebuild=True).names == ["00000000000000000001.parquet"]
    assert sorted(p.name for p in (storage.root / TABLE).iterdir()) == [
        "00000000000000000001.parquet",
        "_dbt_openmirror.json",
        "_metadata.json",
    ]


def test_a_rebuild_killed_while_deleting_the_table_folder_leaves_a_state_the_next_run_finishes(storage, monkeypatch):
    stage(storage, 1)
    publish(storage, 1)
    stage(storage, 1)
    publish(storage, 1, last=1)
    stage(storage, 4)
    pending = prepare(storage, 4, last=2, rebuild=True)
    run = Run(storage, pending.run_id)
    killed_after_unlinks(monkeypatch, 1)
    with pytest.raises(Killed):
        Publisher(storage).begin(pending, run.fence)
    monkeypatch.undo()
    run.end()  # as the next run takes the dead one's lease over

    # The folder went in one step: no data files left that no journal accounts for.
    state = Publisher(storage).table_state(TABLE)
    assert not state.exists and state.unjournaled_files() is None
    rerun = Run(storage, pending.run_id)
    publish_under(rerun, pending, storage)
    rerun.end()
    assert sorted(p.name for p in (storage.root / TABLE).iterdir()) == [
        "00000000000000000001.parquet",
        "_dbt_openmirror.json",
        "_metadata.json",
    ]
    assert [name for name in storage.list_names(STAGING_ROOT) if name != "leases"] == []


def test_rename_never_overwrites(storage):
    storage.write_text("a/x.txt", "one", create_only=True)
    storage.write_text("a/y.txt", "two", create_only=True)
    with pytest.raises(TargetExistsError):
        storage.rename_create_only("a/y.txt", "a/x.txt")
    assert storage.read_text("a/x.txt") == "one" and storage.read_text("a/y.txt") == "two"
    with pytest.raises(TargetExistsError):
        storage.write_text("a/x.txt", "three", create_only=True)
    assert sorted(storage.list_names("a")) == ["x.txt", "y.txt"]  # no temporary file left


def test_a_conditional_write_replaces_only_the_version_it_read(storage):
    first = storage.write_text_if("t/j.json", "one", None)
    with pytest.raises(WriteConflictError):
        storage.write_text_if("t/j.json", "two", None)  # None: only while there is none
    assert storage.read_versioned("t/j.json") == ("one", first)
    second = storage.write_text_if("t/j.json", "two", first)
    assert second != first
    with pytest.raises(WriteConflictError):
        storage.write_text_if("t/j.json", "three", first)  # written since it was read
    assert storage.read_text("t/j.json") == "two"
    with pytest.raises(WriteConflictError):
        storage.write_text_if("t/gone.json", "x", second)
    assert storage.read_versioned("t/gone.json") is None
    assert sorted(storage.list_names("t")) == ["j.json"]  # no temporary file left


def test_paths_cannot_leave_the_landing_zone(storage):
    with pytest.raises(Exception, match="would leave the landing zone"):
        storage.read_text("../outside.txt")


@pytest.mark.parametrize(
    "path",
    ["", ".", "/", "./", "_scratchPad", "_scratchPad/", "./_scratchPad/.", "_SCRATCHPAD", "..", "t/../..", "t\\..\\.."],
)
def test_deletes_refuse_the_root_the_scratch_pad_and_paths_outside(tmp_path, path):
    from tests.support.mirror import tree_digest

    storage = LocalStorage(tmp_path / "landing_zone")  # its parent holds only this test's files
    storage.write_text("t/f.txt", "kept", create_only=True)
    storage.write_text("_scratchPad/dbt-openmirror/run-1/f.txt", "kept", create_only=True)
    (tmp_path / "beside.txt").write_text("outside the landing zone")
    before = tree_digest(tmp_path)
    with pytest.raises(PublishError, match="refusing to delete"):
        storage.delete_folder(path)
    with pytest.raises(PublishError, match="refusing to delete"):
        storage.delete_file(path)
    assert tree_digest(tmp_path) == before
    storage.delete_folder("_scratchPad/dbt-openmirror/run-1")  # strictly inside: allowed
    assert storage.list_names("_scratchPad/dbt-openmirror") == []


def test_a_journal_naming_a_staged_folder_not_its_runs_is_damaged(storage):
    publisher, pending, run = journaled_second_publish(storage, 2)
    path = storage.root / TABLE / "_dbt_openmirror.json"
    for folder in ("", "s.schema", "_scratchPad/dbt-openmirror/run-1"):
        journal = json.loads(path.read_text())
        journal["pending"]["stagedFolder"] = folder
        path.write_text(json.dumps(journal))
        with pytest.raises(PublishError, match="is damaged"):
            publisher.table_state(TABLE)
    journal["pending"]["stagedFolder"] = "_scratchPad/dbt-openmirror/run-2"
    journal["pending"]["files"][0]["staged"] = f"{TABLE}/00000000000000000001.parquet"
    path.write_text(json.dumps(journal))
    with pytest.raises(PublishError, match="is damaged"):
        publisher.table_state(TABLE)


def test_a_journal_naming_one_of_our_own_folders_as_its_run_is_damaged(storage):
    """Recovery discards a journaled run's staged folder: the leases' is not one."""
    publisher, pending, run = journaled_second_publish(storage, 2)
    (storage.root / "_scratchPad/dbt-openmirror/leases/elsewhere").mkdir(parents=True)
    path = storage.root / TABLE / "_dbt_openmirror.json"
    journal = json.loads(path.read_text())
    staged = journal["pending"]["stagedFolder"]
    journal["pending"]["runId"] = "leases"
    journal["pending"]["stagedFolder"] = "_scratchPad/dbt-openmirror/leases"
    for file in journal["pending"]["files"]:
        file["staged"] = file["staged"].replace(staged, "_scratchPad/dbt-openmirror/leases")
    path.write_text(json.dumps(journal))
    with pytest.raises(PublishError, match="is damaged"):
        publisher.table_state(TABLE)
    assert (storage.root / "_scratchPad/dbt-openmirror/leases/elsewhere").is_dir()


def test_spark_uri_is_not_percent_encoded(tmp_path):
    storage = LocalStorage(tmp_path / "my lz")
    assert storage.spark_uri("a b/c") == f"file://{tmp_path}/my lz/a b/c"


def test_check_writable_leaves_nothing(storage):
    storage.check_writable("_scratchPad/dbt-openmirror/debug-1")
    assert not (storage.root / "_scratchPad/dbt-openmirror/debug-1").exists()


def journaled_second_publish(storage, *row_counts):
    """File 1 published; a second publish of `row_counts` staged and journaled, not renamed."""
    stage(storage, 1)
    publish(storage, 1)
    stage(storage, *row_counts, run_id="run-2")
    pending = prepare(storage, sum(row_counts), last=1, run_id="run-2")
    publisher = Publisher(storage)
    run = Run(storage, "run-2")
    publisher.begin(pending, run.fence)
    return publisher, pending, run


def _names(storage):
    return sorted(p.name for p in (storage.root / TABLE).glob("*.parquet"))


def test_an_incremental_run_without_rows_publishes_nothing(storage):
    stage(storage, 1)
    publish(storage, 1)
    stage(storage, 0)
    assert prepare(storage, 0, last=1).files == []


def test_a_zero_row_file_is_published_once_to_add_a_column(storage):
    """A column added with no row to change reaches the mirror in a zero-row file: the journal
    records the columns of the last file, which every later file carries."""
    stage(storage, 1)
    publish(storage, 1)
    publisher = Publisher(storage)

    def prepared(run_id, columns):
        stage(storage, 0, run_id=run_id, columns=columns)
        state = publisher.table_state(TABLE)
        return publisher.prepare(TABLE, ["id"], scratch_path(run_id), state, {}, "m", run_id, False, False)

    assert Publisher(storage).table_state(TABLE).published_columns == ["id"]
    assert prepared("run-2", ("id", "Note")).names == ["00000000000000000002.parquet"]
    run = Run(storage, "run-2")
    publish_under(run, prepared("run-2", ("id", "Note")), storage)
    run.end()
    assert publisher.table_state(TABLE).published_columns == ["id", "Note"]
    assert prepared("run-3", ("ID", "note")).files == []  # the same columns, as the mirror compares names
    run = Run(storage, "run-3")
    publish_under(run, prepared("run-3", ("ID", "note")), storage)  # a run without files keeps the record's
    run.end()
    assert publisher.table_state(TABLE).published_columns == ["id", "Note"]
    # A journal of an earlier version names no columns: nothing is known to be missing.
    journal = storage.root / TABLE / "_dbt_openmirror.json"
    journal.write_text(
        json.dumps({k: v for k, v in json.loads(journal.read_text()).items() if k != "publishedColumns"})
    )
    assert prepared("run-4", ("id", "Note", "more")).files == []


def test_the_journal_lets_an_interrupted_publish_finish(storage):
    publisher, pending, run = journaled_second_publish(storage, 2, 3)
    # Stop after the first rename, and again between link and unlink of the second.
    storage.rename_create_only(*_final(pending.files[0]))
    staged, final = _final(pending.files[1])
    (storage.root / final).hardlink_to(storage.root / staged)
    state = publisher.table_state(TABLE)
    assert state.pending == pending and state.last_sequence_number == 3
    record = json.loads((storage.root / TABLE / "_dbt_openmirror.json").read_text())
    assert record["lastSequenceNumber"] == 1 and record["pending"]["runId"] == "run-2"
    publisher.complete(pending, run.fence)
    publisher.commit(pending, run.fence)
    assert _names(storage) == [f"{n:020d}.parquet" for n in (1, 2, 3)]
    assert not (storage.root / scratch_path("run-2")).exists()
    state = publisher.table_state(TABLE)
    assert (state.pending, state.last_sequence_number) == (None, 3)


def test_a_staged_listing_behind_the_renames_is_not_taken_for_another_writer(storage):
    """Recovery lists the staged folder: a listing not caught up still shows a file already
    renamed into place, which is then nowhere to compare."""
    publisher, pending, run = journaled_second_publish(storage, 2, 3)
    storage.rename_create_only(*_final(pending.files[0]))
    renamed = pending.files[0][0].rsplit("/", 1)[-1]

    class StaleStaging(LocalStorage):
        def list_names(self, folder):
            names = super().list_names(folder)
            return sorted({*names, renamed}) if folder == pending.staged_folder else names

    lagging = Publisher(StaleStaging(storage.root))
    lagging.complete(pending, run.fence)
    lagging.commit(pending, run.fence)
    assert _names(storage) == [f"{n:020d}.parquet" for n in (1, 2, 3)]


def _final(file):
    staged, name = file
    return staged, f"{TABLE}/{name}"


def test_abandoning_keeps_the_committed_number(storage):
    publisher, pending, run = journaled_second_publish(storage, 2)
    publisher.abandon(pending, run.fence)
    state = publisher.table_state(TABLE)
    assert (state.pending, state.last_sequence_number) == (None, 1)
    assert not (storage.root / scratch_path("run-2")).exists() and _names(storage) == ["00000000000000000001.parquet"]


@pytest.mark.parametrize("same_size", [False, True])
def test_another_writers_file_under_a_pending_number_is_refused(storage, same_size):
    publisher, pending, run = journaled_second_publish(storage, 2)
    staged = storage.root / pending.files[0][0]
    theirs = bytearray(staged.read_bytes())
    theirs[4] ^= 0xFF  # the same size as ours, other content
    final = storage.root / TABLE / pending.names[0]
    final.write_bytes(bytes(theirs) if same_size else b"someone else")
    with pytest.raises(PublishError, match="is not the staged .* another writer used this number"):
        publisher.complete(pending, run.fence)
    assert final.read_bytes() == (bytes(theirs) if same_size else b"someone else")
    assert staged.exists()  # ours is kept, not taken for published


# -- a writer that lost its lease cannot damage the table ------------------------------------


def expire_leases(storage, seconds=61):
    """The storage's time moves past the leases' time to live (the holder stalled)."""
    for path in (storage.root / lease_folder(TABLE)).iterdir():
        written = path.stat().st_mtime - seconds
        os.utime(path, (written, written))


def take_over_and_publish(storage, publisher, rows):
    """Another run takes the stale lease, finishes the journaled publish it finds (rolling it
    forward, as recovery does when the output is there) and publishes `rows` rows of its own."""
    expire_leases(storage)
    taker = Run(storage, "run-3")
    state = publisher.table_state(TABLE)
    if state.pending is not None:
        publisher.complete(state.pending, taker.fence)
        publisher.commit(state.pending, taker.fence)
    stage(storage, rows, run_id="run-3")
    last = publisher.table_state(TABLE).last_sequence_number
    publish_under(taker, prepare(storage, rows, last=last, run_id="run-3"), storage)
    taker.end()


def assert_lost_its_lease(failure):
    message = failure.value.msg
    assert "run run-2 lost its lease on s.schema/t" in message, message
    assert not any(blame in message for blame in ("someone else", "another writer", "changed during"))


def assert_published_once(storage, *row_counts, generation):
    names = _names(storage)
    assert names == [f"{n:020d}.parquet" for n in range(1, len(row_counts) + 1)]
    rows = [pq.read_metadata(storage.root / TABLE / name).num_rows for name in names]
    assert rows == list(row_counts)
    record = json.loads((storage.root / TABLE / "_dbt_openmirror.json").read_text())
    assert (record["lastSequenceNumber"], record["leaseGeneration"]) == (len(names), generation)
    assert "pending" not in record


def test_a_writer_that_lost_its_lease_before_begin_is_refused(storage):
    stage(storage, 1)
    publish(storage, 1)
    stale = Run(storage, "run-2")
    stage(storage, 2, run_id="run-2")
    pending = prepare(storage, 2, last=1, run_id="run-2")
    publisher = Publisher(storage)
    take_over_and_publish(storage, publisher, 4)  # while run-2 stalled
    with pytest.raises(LeaseHeldError) as failure:
        publisher.begin(pending, stale.fence)
    assert_lost_its_lease(failure)
    assert_published_once(storage, 1, 4, generation=3)


def test_a_writer_that_lost_its_lease_between_renames_is_refused(storage):
    publisher, pending, stale = journaled_second_publish(storage, 2, 3)
    storage.rename_create_only(*_final(pending.files[0]))  # file 2 in place; then it stalled
    take_over_and_publish(storage, publisher, 4)  # finishes file 3, publishes file 4
    with pytest.raises(LeaseHeldError) as failure:
        publisher.complete(pending, stale.fence)
    assert_lost_its_lease(failure)
    assert_published_once(storage, 1, 2, 3, 4, generation=3)


def test_a_writer_that_lost_its_lease_cannot_roll_the_journal_back(storage):
    publisher, pending, stale = journaled_second_publish(storage, 2)
    publisher.complete(pending, stale.fence)  # file 2 in place; it stalled before its commit
    take_over_and_publish(storage, publisher, 4)
    for late_write in (publisher.commit, publisher.abandon, publisher.begin):
        with pytest.raises(LeaseHeldError) as failure:
            late_write(pending, stale.fence)
        assert_lost_its_lease(failure)
    assert_published_once(storage, 1, 2, 4, generation=3)


def test_a_second_journal_entry_is_refused(storage):
    _, pending, run = journaled_second_publish(storage, 2)
    with pytest.raises(PublishError, match="changed during the run"):
        Publisher(storage).begin(pending, run.fence)


def test_status_shows_the_lease_and_an_unfinished_publish(storage, capsys):
    from dbt.adapters.openmirror.tools.cli import main

    journaled_second_publish(storage, 2)[2].end()  # that run stopped
    lease = LeaseManager(storage).acquire(TABLE, "run-3", "m", ttl_seconds=60, wait_seconds=0)
    assert main(["status", str(storage.root)]) == 0
    out = capsys.readouterr().out
    assert "lease: run run-3 (model 'm'" in out
    assert "unfinished publish of run run-2 (1 files after 1); the next dbt run of 'm'" in out
    LeaseManager(storage).release(lease)


def test_status_says_what_a_deleted_journal_stops(storage, capsys):
    from dbt.adapters.openmirror.tools.cli import main

    stage(storage, 1)
    publish(storage, 1)
    assert main(["status", str(storage.root)]) == 0
    assert "--full-refresh" not in capsys.readouterr().out
    (storage.root / TABLE / "_dbt_openmirror.json").unlink()
    assert main(["status", str(storage.root)]) == 0
    out = capsys.readouterr().out
    assert "holds files up to 00000000000000000001.parquet, and no journal of dbt-openmirror" in out
    assert "a dbt run refuses it, as does `dbt-openmirror publish`, unless it is a --full-refresh" in out


def test_status_shows_the_landing_zone_when_the_mirrors_status_is_unreadable(tmp_path, capsys):
    """A tables.json or replicator.json caught half-written beside the landing zone: said in a
    line, not a traceback; what the other says is still shown."""
    from dbt.adapters.openmirror.tools.cli import main

    storage = LocalStorage(tmp_path / "Files" / "LandingZone")
    storage.root.mkdir(parents=True)
    stage(storage, 1)
    publish(storage, 1)
    monitoring = tmp_path / "Files" / "Monitoring"
    monitoring.mkdir()
    (monitoring / "tables.json").write_text('{"tables": [')
    (monitoring / "replicator.json").write_text('{"status": "Running"}')
    assert main(["status", str(storage.root)]) == 0
    out = capsys.readouterr().out
    assert "mirror status not readable: Files/Monitoring tables.json is not valid JSON" in out
    assert "mirrored database (Files/Monitoring): Running" in out
    assert "s.t " in out

    (monitoring / "tables.json").write_text(
        '{"tables": [{"sourceTableName": "t", "sourceSchemaName": "s", "status": "Replicating"}]}'
    )
    (monitoring / "replicator.json").write_text('{"status": "Runn')
    assert main(["status", str(storage.root)]) == 0
    out = capsys.readouterr().out
    assert "mirrored database (Files/Monitoring): not readable: replicator.json is not valid JSON" in out
    assert "Replicating" in out


def test_a_new_folder_the_mirror_would_take_for_another_is_refused(storage):
    stage(storage, 1)
    publish(storage, 1)  # s.schema/t
    publisher = Publisher(storage)
    with pytest.raises(PublishError) as refused:
        publisher.check_new_folder_name("S.schema/T", "m")
    assert "Model 'm':" in refused.value.msg and "S.schema/T and s.schema/t differ only in case" in refused.value.msg
    assert "Nothing was published" in refused.value.msg
    publisher.check_new_folder_name("s.schema/t2", "m")
    (storage.root / "S.schema" / "T").mkdir(parents=True)  # an empty folder is no table
    with pytest.raises(PublishError, match="s.schema/T and s.schema/t differ"):
        publisher.check_new_folder_name("s.schema/T", "m")
    (storage.root / "t3").mkdir()
    (storage.root / "t3" / "00000000000000000001.parquet").write_bytes(b"x")
    with pytest.raises(PublishError, match=r"dbo.schema/t3 and t3 name the same table .*root is schema dbo's"):
        publisher.check_new_folder_name("dbo.schema/t3", "m")


def test_files_beyond_our_record_are_an_error_that_says_what_to_do(storage):
    stage(storage, 1)
    publish(storage, 1)
    # Someone else put file 2 into the folder; our record says we published up to 1.
    (storage.root / TABLE / "00000000000000000002.parquet").write_bytes(b"foreign")
    state = Publisher(storage).table_state(TABLE)
    assert state.last_sequence_number == 2
    assert "holds file 00000000000000000002.parquet" in state.folder_conflict
    assert "last number it published is 1" in state.folder_conflict
    assert "--full-refresh" in state.folder_conflict
    assert "remove the files after 1 if they are not wanted" in state.folder_conflict
    # Once the mirror applied it, removing it would take nothing out, and its number stays used.
    processed = storage.root / TABLE / "_ProcessedFiles"
    processed.mkdir()
    (storage.root / TABLE / "00000000000000000002.parquet").rename(processed / "00000000000000000002.parquet")
    conflict = Publisher(storage).table_state(TABLE).folder_conflict
    assert "already applied 00000000000000000002.parquet" in conflict and "--full-refresh" in conflict
    assert "remove the files" not in conflict


def test_fewer_files_than_recorded_is_the_service_cleaning_up(storage):
    stage(storage, 1)
    publish(storage, 1)
    stage(storage, 1)
    publish(storage, 1, last=1)
    for name in ("00000000000000000001.parquet", "00000000000000000002.parquet"):
        (storage.root / TABLE / name).unlink()
    state = Publisher(storage).table_state(TABLE)
    assert (state.last_sequence_number, state.folder_conflict) == (2, None)


def publish_one_file_each(storage, runs):
    for _ in range(runs):
        stage(storage, 1)
        publish(storage, 1, last=Publisher(storage).table_state(TABLE).last_sequence_number)


@pytest.mark.parametrize("deleted", [2, 3])
def test_a_file_missing_behind_one_the_mirror_has_not_processed_is_an_error(storage, deleted):
    publish_one_file_each(storage, 3)
    # File 1 still waits in the folder, so the mirror cannot have processed (and purged) the
    # file deleted after it: the middle one, or the newest, which the record still counts.
    (storage.root / TABLE / f"{deleted:020d}.parquet").unlink()
    state = Publisher(storage).table_state(TABLE)
    assert state.last_sequence_number == 3
    assert f"is missing file {deleted:020d}.parquet" in state.folder_conflict
    assert "--full-refresh" in state.folder_conflict


@pytest.mark.parametrize("change", ["truncated", "replaced"])
def test_a_published_file_changed_before_the_mirror_applied_it_is_an_error(storage, tmp_path, change):
    """A file of the last publish still waiting in the folder, truncated or overwritten by
    another table's file of the same number: the mirror would apply (or stall on) it, and the
    next file would follow rows the model never produced."""
    publish_one_file_each(storage, 2)
    last = storage.root / TABLE / f"{2:020d}.parquet"
    if change == "truncated":
        last.write_bytes(b"")
    else:
        other = tmp_path / "other.parquet"
        pq.write_table(pa.table({"id": [7, 8, 9], "__rowMarker__": pa.array([0, 0, 0], pa.int32())}), other)
        last.write_bytes(other.read_bytes())
    state = Publisher(storage).table_state(TABLE)
    assert f"{TABLE}/{2:020d}.parquet is not the file dbt-openmirror published" in state.folder_conflict
    assert "--full-refresh" in state.folder_conflict
    # The mirror applied it (moved out of the folder): nothing more to say of it.
    processed = storage.root / TABLE / "_ProcessedFiles"
    processed.mkdir()
    for applied in (storage.root / TABLE / f"{1:020d}.parquet", last):
        applied.rename(processed / applied.name)
    assert Publisher(storage).table_state(TABLE).folder_conflict is None


def test_files_of_the_last_publish_keep_their_sizes_in_the_journal(storage):
    publish_one_file_each(storage, 1)
    record = Publisher(storage).read_record(TABLE)
    name = f"{1:020d}.parquet"
    assert record.file_sizes == {name: (storage.root / TABLE / name).stat().st_size}
    assert PublishRecord.from_json(record.to_json()) == record


class LaggingListings(LocalStorage):
    """Storage whose folder listings do not show `hidden` yet, though reads find it (a listing not
    caught up with the writes)."""

    hidden = "00000000000000000003.parquet"

    def list_names(self, folder):
        return [name for name in super().list_names(folder) if name != self.hidden]

    def list_files(self, folder):
        return [entry for entry in super().list_files(folder) if entry.name != self.hidden]


def test_a_file_the_listing_has_not_caught_up_with_is_not_called_deleted(storage):
    publish_one_file_each(storage, 3)
    state = Publisher(LaggingListings(storage.root)).table_state(TABLE)
    assert "did not show 00000000000000000003.parquet, which is there" in state.folder_conflict
    assert "run again" in state.folder_conflict and "--full-refresh" not in state.folder_conflict


def test_files_moved_to_the_processed_folders_leave_no_gap(storage):
    publish_one_file_each(storage, 3)
    processed = storage.root / TABLE / "_ProcessedFiles"
    processed.mkdir()
    (storage.root / TABLE / "00000000000000000001.parquet").rename(processed / "00000000000000000001.parquet")
    (storage.root / TABLE / "00000000000000000002.parquet").unlink()  # processed and purged
    assert Publisher(storage).table_state(TABLE).folder_conflict is None
    (processed / "00000000000000000001.parquet").unlink()
    assert Publisher(storage).table_state(TABLE).folder_conflict is None


@pytest.mark.parametrize(
    "contract, declared",
    [
        (
            {
                "FileFormat": "DelimitedText",
                "FileExtension": "csv",
                "FileFormatTypeProperties": {"FirstRowAsHeader": True},
                "SchemaDefinition": {"Columns": [{"Name": "id", "DataType": "Int64"}]},
            },
            "FileFormat 'DelimitedText'",
        ),
        (
            {"fileDetectionStrategy": "LastUpdateTimeFileDetection"},
            "fileDetectionStrategy 'LastUpdateTimeFileDetection'",
        ),
    ],
)
def test_a_metadata_file_rewritten_to_another_contract_is_an_error(storage, contract, declared):
    stage(storage, 1)
    publish(storage, 1)
    path = storage.root / TABLE / "_metadata.json"
    path.write_text(json.dumps({"keyColumns": ["id"], **contract}))
    state = Publisher(storage).table_state(TABLE)
    assert state.key_columns == ["id"]
    assert declared in state.folder_conflict and "--full-refresh" in state.folder_conflict
    path.write_text(json.dumps({"keyColumns": ["id"], "isUpsertDefaultRowMarker": True}))
    assert Publisher(storage).table_state(TABLE).folder_conflict is None  # changes no result


@pytest.mark.parametrize("declared", [["other"], ["ID"], [], ["id", "other"]])
def test_a_metadata_file_rewritten_to_another_key_is_an_error(storage, declared):
    stage(storage, 1)
    publish(storage, 1)
    (storage.root / TABLE / "_metadata.json").write_text(json.dumps({"keyColumns": declared}))
    conflict = Publisher(storage).table_state(TABLE).folder_conflict
    assert f"declares keyColumns {declared}" in conflict and "declared ['id']" in conflict


def test_a_deleted_metadata_file_leaves_the_recorded_key_declared_and_is_written_back(storage):
    stage(storage, 1)
    publish(storage, 1)
    path = storage.root / TABLE / "_metadata.json"
    path.unlink()
    assert Publisher(storage).table_state(TABLE).key_columns == ["id"]
    stage(storage, 1)
    publish(storage, 1, last=1)
    assert json.loads(path.read_text()) == {"keyColumns": ["id"]}


def test_abandoning_after_renames_records_the_numbers_it_published(storage):
    publisher, pending, run = journaled_second_publish(storage, 2, 3)
    storage.rename_create_only(*_final(pending.files[0]))
    publisher.abandon(pending, run.fence)
    state = publisher.table_state(TABLE)
    # File 2 is ours: no conflict, and the snapshot (at 1) no longer matches, so the plan rebuilds.
    assert (state.pending, state.last_sequence_number, state.folder_conflict) == (None, 2, None)


def test_the_first_publish_identifies_the_publisher_once(storage):
    from dbt.version import __version__ as dbt_version

    from dbt.adapters.openmirror.__version__ import version

    stage(storage, 1)
    publish(storage, 1)
    events = json.loads((storage.root / "_partnerEvents.json").read_text())
    assert events == {
        "partnerName": "dbt-openmirror",
        "sourceInfo": {
            "sourceType": "dbt",
            "sourceVersion": dbt_version,
            "additionalInformation": {"publisher": "dbt-openmirror", "publisherVersion": version},
        },
    }
    # Written create-only and never replaced: a file someone edited stays as it is.
    (storage.root / "_partnerEvents.json").write_text('{"partnerName": "edited"}')
    stage(storage, 1)
    publish(storage, 1, last=1)
    assert json.loads((storage.root / "_partnerEvents.json").read_text()) == {"partnerName": "edited"}


def test_the_journals_beside_a_new_folder_leave_out_what_cannot_be_read(storage):
    stage(storage, 1)
    publish(storage, 1)  # s.schema/t
    for name, journal in (("damaged", b"{not json"), ("binary", b"\xff\xfe\x00")):
        (storage.root / "s.schema" / name).mkdir()
        (storage.root / "s.schema" / name / "_dbt_openmirror.json").write_bytes(journal)
    (storage.root / "s.schema" / "other").mkdir()  # no journal: another publisher's folder
    records = Publisher(storage).records_beside("s.schema/new")
    assert list(records) == [TABLE] and records[TABLE].model == "m"


def test_a_number_another_writer_takes_during_the_renames_is_named_with_the_model(storage, monkeypatch):
    stage(storage, 1, 1)
    pending = prepare(storage, 2)
    run = Run(storage, pending.run_id)
    publisher = Publisher(storage)
    publisher.begin(pending, run.fence)
    rename = storage.rename_create_only

    def racing(source, target):
        if target.endswith("2.parquet"):  # another writer links the next number first
            (storage.root / target).write_bytes(b"theirs")
        rename(source, target)

    monkeypatch.setattr(storage, "rename_create_only", racing)
    with pytest.raises(PublishError, match=r"Model 'm': .*00000000000000000002.parquet appeared while this run"):
        publisher.complete(pending, run.fence)
    assert (storage.root / TABLE / "00000000000000000002.parquet").read_bytes() == b"theirs"


@pytest.mark.parametrize(
    "name, content, named",
    [
        ("_metadata.json", b'{"keyColumns": ["\xff"]}', "_metadata.json is not UTF-8 text"),
        ("_dbt_openmirror.json", b'{"x": ' + b"[" * 5000 + b"]" * 5000 + b"}", r"is damaged \(nested too deeply\)"),
        ("_metadata.json", b'{"keyColumns": ["id"], "x": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nested too deeply"),
    ],
)
def test_files_anyone_may_write_that_are_not_utf8_or_nested_too_deeply_name_themselves(storage, name, content, named):
    from dbt.adapters.openmirror.tools.cli import main

    stage(storage, 1)
    publish(storage, 1)
    (storage.root / TABLE / name).write_bytes(content)
    with pytest.raises(PublishError, match=named) as failure:
        Publisher(storage).table_state(TABLE)
    assert TABLE in failure.value.msg
    assert main(["validate", str(storage.root)]) in (0, 1, 2)  # a finding or a one-line error, not a traceback

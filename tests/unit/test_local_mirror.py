"""The local mirror (`dbt-openmirror replay`) on hand-written landing zones, checked with an
independent Delta reader."""

import json
import math
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dbt.adapters.openmirror.storage import LocalStorage
from dbt.adapters.openmirror.tools.cli import main
from dbt.adapters.openmirror.tools.local_mirror.apply import merge_is_exact, replay_rows, with_markers
from dbt.adapters.openmirror.tools.local_mirror.replay import LocalMirror
from tests.support.delta_reader import protocol, read_delta, read_delta_table
from tests.support.faults import FaultInjectingStorage, FaultInjector
from tests.support.mirror import tree_digest


def write(folder, number, rows, markers=None, schema=None):
    table = pa.Table.from_pylist(rows, schema=schema)
    if markers is not None:
        table = table.append_column("__rowMarker__", pa.array(markers, pa.int32()))
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / f"{number:020d}.parquet")


def declare(folder, keys, **extra):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_metadata.json").write_text(json.dumps({"keyColumns": keys, **extra}))


def rows_of(mirror, schema, table):
    return sorted(read_delta(mirror.target / schema / table), key=lambda r: json.dumps(r, default=str))


def test_reference_semantics_follow_the_spec_table():
    changes = with_markers(
        pa.table(
            {"id": [1, 3, 9, 2], "v": ["a2", "c", None, "b2"], "__rowMarker__": pa.array([0, 1, 2, 4], pa.int32())}
        ),
        0,
        keyed=True,
    )
    result = replay_rows([{"id": 1, "v": "a"}, {"id": 2, "v": "b"}], changes, ["id"])
    assert sorted(result, key=lambda r: (r["id"], r["v"])) == [
        {"id": 1, "v": "a"},
        {"id": 1, "v": "a2"},
        {"id": 2, "v": "b2"},
        {"id": 3, "v": "c"},
    ]


def test_row_by_row_replay_matches_nan_keys_as_the_merge_does(lz, mirror):
    """A file that names a key twice is replayed row by row; NaN is one key there as in the MERGE
    of other files (delta-rs matches NaN to NaN), not a new key each time."""
    for folder, updates in (("repeated", [(math.nan, 2), (math.nan, 3)]), ("merged", [(math.nan, 3)])):
        declare(lz / folder, ["k"])
        write(lz / folder, 1, [{"k": math.nan, "v": 1}, {"k": 1.0, "v": 1}])
        write(lz / folder, 2, [{"k": k, "v": v} for k, v in updates], [1] * len(updates))
    mirror.replay()
    for folder in ("repeated", "merged"):
        rows = read_delta(mirror.target / "dbo" / folder)
        assert sorted(("NaN" if math.isnan(r["k"]) else str(r["k"]), r["v"]) for r in rows) == [("1.0", 1), ("NaN", 3)]


def test_row_by_row_replay_keeps_timestamps_python_cannot_hold(lz, mirror):
    """Parquet and Delta hold microsecond timestamps in UTC before year 1 and after 9999 (a
    session's local 0001-01-01 can be year 0 in UTC), and dates likewise; Python's types cannot.
    A file that names a key twice is replayed row by row, without them."""
    schema = pa.schema([("id", pa.int32()), ("at", pa.timestamp("us", tz="UTC")), ("on", pa.date32())])
    counts = pa.schema([("id", pa.int32()), ("at", pa.int64()), ("on", pa.int32())])
    year_0, year_10000 = -62_135_683_200_000_000, 253_402_300_800_000_000  # 0000-12-31, 10000-01-01
    declare(lz / "t", ["id"])
    (lz / "t").mkdir(exist_ok=True)
    first = pa.table({"id": [1, 2], "at": [year_0, year_10000], "on": [-719_163, 2_932_897]}, schema=counts)
    pq.write_table(first.cast(schema), lz / "t" / f"{1:020d}.parquet")
    second = pa.table({"id": [1, 1], "at": [0, year_10000], "on": [0, -719_163]}, schema=counts).cast(schema)
    pq.write_table(second.append_column("__rowMarker__", pa.array([1, 1], pa.int32())), lz / "t" / f"{2:020d}.parquet")
    declare(lz / "first", ["id"])  # a first file that names a key twice is replayed row by row too
    pq.write_table(
        second.append_column("__rowMarker__", pa.array([0, 1], pa.int32())), lz / "first" / f"{1:020d}.parquet"
    )
    statuses = mirror.replay()
    assert [(s.status, s.lastAppliedFile) for s in statuses] == [("Replicating", 1), ("Replicating", 2)]
    replayed = read_delta_table(mirror.target / "dbo" / "t").cast(counts).sort_by("id").to_pylist()
    assert replayed == [{"id": 1, "at": year_10000, "on": -719_163}, {"id": 2, "at": year_10000, "on": 2_932_897}]
    assert read_delta_table(mirror.target / "dbo" / "first").cast(counts).to_pylist() == replayed[:1]


def test_merge_is_used_only_when_exact():
    unique = with_markers(pa.table({"id": [1, 2], "__rowMarker__": pa.array([0, 1], pa.int32())}), 0, keyed=True)
    repeated = with_markers(pa.table({"id": [1, 1], "__rowMarker__": pa.array([0, 2], pa.int32())}), 0, keyed=True)
    assert merge_is_exact(unique, ["id"], pa.table({"id": [3]}))
    assert merge_is_exact(unique, ["id"], pa.table({"id": [2]}))  # an UPDATE of a present key
    assert not merge_is_exact(unique, ["id"], pa.table({"id": [1]}))  # an INSERT of a present key
    assert not merge_is_exact(unique, ["id"], pa.table({"id": [2, 2]}))  # a key the table holds twice
    assert merge_is_exact(unique, ["id"], pa.table({"id": [3, 3]}))  # twice, but not in the file
    assert not merge_is_exact(repeated, ["id"], None)


def test_markers_out_of_range_are_rejected():
    with pytest.raises(ValueError, match="row 1: __rowMarker__ is 3, not 0, 1, 2 or 4"):
        with_markers(pa.table({"__rowMarker__": pa.array([0, 3], pa.int32())}), 0, keyed=True)
    with pytest.raises(ValueError, match="row 0: __rowMarker__ is None"):
        with_markers(pa.table({"__rowMarker__": pa.array([None], pa.int32())}), 0, keyed=True)
    with pytest.raises(ValueError, match="row 1: __rowMarker__ is 2 in a table without keyColumns"):
        with_markers(pa.table({"__rowMarker__": pa.array([0, 2], pa.int64())}), 0, keyed=False)


def test_incremental_replay_moves_files_and_applies_each_once(lz, mirror):
    folder = lz / "sales.schema" / "orders"
    declare(folder, ["id"])
    write(folder, 1, [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}], [0, 0])
    mirror.replay()
    assert rows_of(mirror, "sales", "orders") == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    assert (folder / "_ProcessedFiles" / f"{1:020d}.parquet").exists()
    write(folder, 2, [{"id": 1, "v": "a1"}, {"id": 2, "v": None}, {"id": 3, "v": "c"}], [1, 2, 0])
    [status] = mirror.replay()
    assert rows_of(mirror, "sales", "orders") == [{"id": 1, "v": "a1"}, {"id": 3, "v": "c"}]
    assert (status.status, status.lastAppliedFile, status.metrics["processedRows"]) == ("Replicating", 2, 5)
    mirror.replay()  # nothing new: nothing changes
    assert rows_of(mirror, "sales", "orders") == [{"id": 1, "v": "a1"}, {"id": 3, "v": "c"}]
    assert protocol(mirror.target / "sales" / "orders") == {"minReaderVersion": 1, "minWriterVersion": 2}


def test_duplicate_inserts_and_repeated_keys_replay_in_order(lz, mirror):
    folder = lz / "t"
    declare(folder, ["id"])
    write(folder, 1, [{"id": 1, "v": "a"}], [0])
    write(folder, 2, [{"id": 1, "v": "again"}, {"id": 2, "v": "x"}, {"id": 2, "v": None}], [0, 0, 2])
    mirror.replay()
    assert rows_of(mirror, "dbo", "t") == [{"id": 1, "v": "a"}, {"id": 1, "v": "again"}]


def test_files_without_marker_and_upsert_default(lz, mirror):
    declare(lz / "plain", ["id"])
    write(lz / "plain", 1, [{"id": 1, "v": "a"}])
    write(lz / "plain", 2, [{"id": 1, "v": "b"}])
    declare(lz / "upserts", ["id"], isUpsertDefaultRowMarker=True)
    write(lz / "upserts", 1, [{"id": 1, "v": "a"}])
    write(lz / "upserts", 2, [{"id": 1, "v": "b"}])
    mirror.replay()
    assert rows_of(mirror, "dbo", "plain") == [{"id": 1, "v": "a"}, {"id": 1, "v": "b"}]
    assert rows_of(mirror, "dbo", "upserts") == [{"id": 1, "v": "b"}]


def test_a_gap_stops_the_table_until_filled(lz, mirror):
    declare(lz / "t", ["id"])
    write(lz / "t", 1, [{"id": 1}], [0])
    write(lz / "t", 3, [{"id": 3}], [0])
    [status] = mirror.replay()
    assert status.status == "WaitingForFile" and status.lastAppliedFile == 1
    assert f"{2:020d}.parquet" in status.errorMessage
    write(lz / "t", 2, [{"id": 2}], [0])
    [status] = mirror.replay()
    assert status.lastAppliedFile == 3 and rows_of(mirror, "dbo", "t") == [{"id": 1}, {"id": 2}, {"id": 3}]


@pytest.mark.parametrize(
    "rows, markers",
    [([], []), ([{"id": 9, "v": None}], [2])],
    ids=["a zero-row file", "a delete of a key the table does not hold"],
)
def test_a_file_that_changes_nothing_is_recorded_as_applied(lz, mirror, rows, markers):
    """A file that changes no row still counts as applied: the next replay goes on after it (it
    waited for it for ever, the file already moved to _ProcessedFiles/)."""
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    declare(lz / "t", ["id"])
    write(lz / "t", 1, [{"id": 1, "v": "a"}], [0], schema=schema)
    write(lz / "t", 2, rows, markers, schema=schema)
    [status] = mirror.replay()
    assert status.lastAppliedFile == 2
    write(lz / "t", 3, [{"id": 3, "v": "c"}], [0], schema=schema)
    [status] = mirror.replay()
    assert (status.status, status.lastAppliedFile) == ("Replicating", 3)
    assert rows_of(mirror, "dbo", "t") == [{"id": 1, "v": "a"}, {"id": 3, "v": "c"}]


def test_added_and_omitted_columns(lz, mirror):
    declare(lz / "t", ["id"])
    write(lz / "t", 1, [{"id": 1, "a": "x"}], [0])
    write(lz / "t", 2, [{"id": 2, "a": "y", "b": 5}], [0])
    write(lz / "t", 3, [{"id": 3, "b": 6}], [0])
    mirror.replay()
    assert rows_of(mirror, "dbo", "t") == [
        {"id": 1, "a": "x", "b": None},
        {"id": 2, "a": "y", "b": 5},
        {"id": 3, "a": None, "b": 6},
    ]


def test_type_change_stops_one_table_and_the_others_go_on(lz, mirror):
    declare(lz / "bad", ["id"])
    write(lz / "bad", 1, [{"id": 1, "v": 1}], [0])
    write(lz / "bad", 2, [{"id": 1, "v": "one"}], [1])
    declare(lz / "good", ["id"])
    write(lz / "good", 1, [{"id": 1}], [0])
    statuses = {s.sourceTableName: s for s in mirror.replay()}
    assert statuses["bad"].status == "Error" and statuses["bad"].errorCode == "ColumnTypeChanged"
    assert "v: long -> string" in statuses["bad"].errorMessage
    assert statuses["good"].status == "Replicating"
    assert rows_of(mirror, "dbo", "bad") == [{"id": 1, "v": 1}]
    write(lz / "good", 2, [{"id": 2}], [0])
    statuses = {s.sourceTableName: s for s in mirror.replay()}
    assert statuses["bad"].status == "Error" and statuses["good"].lastAppliedFile == 2


def test_changed_key_columns_stop_the_table(lz, mirror):
    declare(lz / "t", ["id"])
    write(lz / "t", 1, [{"id": 1, "v": "a"}], [0])
    mirror.replay()
    declare(lz / "t", ["v"])
    write(lz / "t", 2, [{"id": 1, "v": "a"}], [1])
    [status] = mirror.replay()
    assert status.errorCode == "KeyColumnsChanged"


def test_recreated_folder_rebuilds_the_table(lz, mirror):
    import shutil

    declare(lz / "t", ["id"])
    write(lz / "t", 1, [{"id": 1}], [0])
    write(lz / "t", 2, [{"id": 2}], [0])
    mirror.replay()
    shutil.rmtree(lz / "t")
    declare(lz / "t", ["id"])
    write(lz / "t", 1, [{"id": 7}], [0])
    [status] = mirror.replay()
    assert rows_of(mirror, "dbo", "t") == [{"id": 7}]
    assert status.lastAppliedFile == 1


def test_killed_after_commit_before_move_applies_nothing_twice(lz, tmp_path):
    declare(lz / "t", ["id"])
    write(lz / "t", 1, [{"id": 1}], [0])
    write(lz / "t", 2, [{"id": 1, "v": None}], [0], schema=pa.schema([("id", pa.int64()), ("v", pa.string())]))
    # The first change to the landing zone (file 1's move, after its commit) fails and every
    # later one too, as if the process had been killed there.
    crashing = FaultInjectingStorage(LocalStorage(lz), FaultInjector(fail_at=1))
    [stopped] = LocalMirror(crashing, tmp_path / "mirror").replay()
    assert "injected fault" in stopped.errorMessage  # the table's trouble, not the whole replay's
    assert stopped.errorMessage.startswith(f"{1:020d}.parquet: ")  # named by the file it stopped at
    assert (lz / "t" / f"{1:020d}.parquet").exists()
    # File 1 is committed but still in the folder; the next replay must not apply it again.
    mirror = LocalMirror(LocalStorage(lz), tmp_path / "mirror")
    mirror.replay()
    assert rows_of(mirror, "dbo", "t") == [{"id": 1, "v": None}, {"id": 1, "v": None}]
    assert sorted(p.name for p in (lz / "t" / "_ProcessedFiles").iterdir()) == [
        f"{1:020d}.parquet",
        f"{2:020d}.parquet",
    ]


def test_killed_inside_the_move_leaves_no_second_copy(lz, mirror):
    declare(lz / "t", ["id"])
    write(lz / "t", 1, [{"id": 1}], [0])
    mirror.replay()
    # The create-only move is link() then unlink(): the state of a replay killed between the two.
    name = f"{1:020d}.parquet"
    os.link(lz / "t" / "_ProcessedFiles" / name, lz / "t" / name)
    write(lz / "t", 2, [{"id": 2}], [0])
    [status] = mirror.replay()
    assert rows_of(mirror, "dbo", "t") == [{"id": 1}, {"id": 2}]
    assert status.lastAppliedFile == 2
    assert sorted(p.name for p in (lz / "t").glob("*.parquet")) == []
    assert sorted(p.name for p in (lz / "t" / "_ProcessedFiles").iterdir()) == [
        f"{1:020d}.parquet",
        f"{2:020d}.parquet",
    ]


def test_cli_replay_and_status(lz, tmp_path, capsys):
    declare(lz / "s.schema" / "t", ["id"])
    write(lz / "s.schema" / "t", 1, [{"id": 1}], [0])
    assert main(["replay", str(lz), "--target", str(tmp_path / "m")]) == 0
    assert "s.t: Replicating, applied through file 1, 1 row processed" in capsys.readouterr().out
    write(lz / "s.schema" / "t", 2, [{"id": 2}], [0])
    assert main(["status", str(lz), "--target", str(tmp_path / "m")]) == 0
    line = [s for s in capsys.readouterr().out.splitlines() if s.startswith("s.t")][0]
    assert line.split()[1:4] == ["2", "1", "Replicating,"]


def test_what_the_commands_print_from_the_landing_zone_cannot_drive_the_terminal(tmp_path, capsys):
    # Folder names and the service's status files are anyone's text: escape sequences and line
    # breaks in them are shown escaped, so they neither rewrite the terminal nor forge a line.
    item = tmp_path / "item" / "Files"
    name = "t\x1b[2J\x1b[32m0 errors, 0 warnings\nforged line\u202e"
    write(item / "LandingZone" / "s.schema" / name, 1, [{"id": 1}])
    (item / "Monitoring").mkdir()
    (item / "Monitoring" / "tables.json").write_text(
        json.dumps(
            {
                "tables": [
                    {
                        "sourceSchemaName": "s",
                        "sourceTableName": name,
                        "status": "Error",
                        "errorCode": "X",
                        "errorMessage": "\x1b]0;title\x07 injected\nsecond line",
                    }
                ]
            }
        )
    )
    (item / "Monitoring" / "replicator.json").write_text(json.dumps({"status": "Running\x1b[5m"}))
    landing_zone = str(item / "LandingZone")
    for command in (
        ["status", landing_zone],
        ["validate", landing_zone],
        ["replay", landing_zone, "--target", str(tmp_path / "m")],
    ):
        main(command)
        captured = capsys.readouterr()
        for text in (captured.out, captured.err):
            assert not any(c in text for c in "\x1b\x07\u202e"), (command, text)
            assert not any(line.startswith(("forged line", "second line")) for line in text.splitlines()), text
        assert "\\x1b[2J" in captured.out, (command, captured.out)


@pytest.mark.parametrize("target", ["lz/mirror", "lz", "."], ids=["inside", "same", "around"])
def test_a_target_that_overlaps_the_landing_zone_is_refused(tmp_path, capsys, target):
    # Its Delta tables and Monitoring/ would become table folders of the landing zone, or the
    # landing zone a table of the mirror.
    lz = tmp_path / "lz"
    declare(lz / "lz.schema" / "t", ["id"])
    write(lz / "lz.schema" / "t", 1, [{"id": 1}], [0])
    before = tree_digest(tmp_path)
    assert main(["replay", str(lz), "--target", str(tmp_path / target)]) == 2
    error = capsys.readouterr().err
    assert "the local mirror's target" in error and str(lz) in error, error
    assert tree_digest(tmp_path) == before


def test_an_empty_landing_zone_argument_is_refused(lz, capsys, monkeypatch):
    monkeypatch.chdir(lz)
    for command in (["validate", ""], ["replay", " ", "--target", "m"], ["status", ""]):
        assert main(command) == 2
        assert "the landing zone is empty" in capsys.readouterr().err
    assert not (lz / "m").exists()


def test_a_table_of_an_earlier_mirror_goes_on_from_its_recorded_number(lz, mirror):
    """Earlier versions recorded only the file's number (the commit's application transaction)."""
    from deltalake import write_deltalake
    from deltalake.transaction import CommitProperties, Transaction

    declare(lz / "t", ["id"])
    write(lz / "t" / "_ProcessedFiles", 1, [{"id": 1}], [0])
    write_deltalake(
        str(mirror.target / "dbo" / "t"),
        pa.table({"id": [1]}),
        commit_properties=CommitProperties(app_transactions=[Transaction(app_id="dbt-openmirror-replay", version=1)]),
    )
    write(lz / "t", 2, [{"id": 2}], [0])
    [status] = mirror.replay()
    assert (status.status, status.lastAppliedFile) == ("Replicating", 2)
    assert rows_of(mirror, "dbo", "t") == [{"id": 1}, {"id": 2}]


def test_replay_says_which_tables_it_rebuilt(lz, tmp_path, capsys):
    # With the same rows after the rebuild, the table's line did not change: `--watch` said nothing.
    target = str(tmp_path / "m")
    for _ in range(2):
        declare(lz / "s.schema" / "t", ["id"])
        write(lz / "s.schema" / "t", 1, [{"id": 1}], [0])
        assert main(["replay", str(lz), "--target", target]) == 0
        out = capsys.readouterr().out
        shutil.rmtree(lz / "s.schema" / "t")
    assert "s.t: rebuilt (its folder was deleted and created again)" in out

"""The local mirror, table by table: what it can hold, one table's trouble never stopping another,
names Delta cannot hold plainly, and results that do not depend on how a file was applied. Every
Delta table is read back with the independent reader (tests/support/delta_reader.py)."""

import datetime
import decimal
import json
import random

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder
from hypothesis import given, settings
from hypothesis import strategies as st

from dbt.adapters.openmirror.storage import LocalStorage
from dbt.adapters.openmirror.tools.cli import main
from dbt.adapters.openmirror.tools.local_mirror.replay import LocalMirror
from tests.support.delta_reader import protocol, read_delta, schema
from tests.support.landing_zones import declare, parquet, rows
from tests.support.mirror_oracle import replay as oracle_replay


def by_table(statuses):
    return {s.sourceTableName: s for s in statuses}


@pytest.mark.parametrize(
    "column, problem",
    [
        (pa.array([1], pa.uint8()), "unsigned integer"),
        (pa.array([2**63], pa.uint64()), "unsigned integer"),
        (pa.array([datetime.time(10, 30)], pa.time64("us")), "time of day"),
        (pa.array([decimal.Decimal("1.25")], pa.decimal256(50, 2)), "decimal(50,2)"),
        (pa.array([1], pa.timestamp("ns")), "nanoseconds"),
        (pa.array([["a"]]), "JSON strings"),
        (pa.array([None], pa.null()), "type null"),
    ],
)
def test_a_column_the_mirror_cannot_hold_stops_only_its_table(lz, tmp_path, capsys, column, problem):
    declare(lz / "bad", ["id"])
    parquet(lz / "bad", 1, {"id": [1], "odd": column}, [0])
    declare(lz / "good", ["id"])
    parquet(lz / "good", 1, {"id": [1]}, [0])
    assert main(["replay", str(lz), "--target", str(tmp_path / "mirror")]) == 1
    output = capsys.readouterr()
    assert "Traceback" not in output.out + output.err
    line = next(s for s in output.out.splitlines() if s.startswith("dbo.bad"))
    assert "Error" in line and f"{1:020d}.parquet" in line and "column odd" in line and problem in line, line
    assert rows(tmp_path / "mirror", "dbo", "good") == [{"id": 1}]
    assert not (tmp_path / "mirror" / "dbo" / "bad").exists()


def test_columns_differing_only_in_case_stop_the_table(lz, mirror):
    declare(lz / "t", ["id"])
    parquet(lz / "t", 1, {"id": [1], "Name": ["a"], "name": ["b"]}, [0])
    [status] = mirror.replay()
    assert (status.status, status.errorCode) == ("Error", "DuplicateColumnNames")
    assert "columns Name and name differ only in case" in status.errorMessage


def test_a_column_respelled_in_case_is_a_rename_the_table_cannot_hold(lz, mirror):
    declare(lz / "t", ["id"])
    parquet(lz / "t", 1, {"id": [1], "Name": ["a"]}, [0])
    parquet(lz / "t", 2, {"id": [2], "name": ["b"]}, [0])
    [status] = mirror.replay()
    assert (status.errorCode, status.lastAppliedFile) == ("ColumnCaseChanged", 1)
    assert f"{2:020d}.parquet: column Name is spelled name here" in status.errorMessage
    assert rows(mirror.target, "dbo", "t") == [{"id": 1, "Name": "a"}]


def test_timestamps_in_any_time_zone_are_one_type(lz, mirror):
    """Parquet keeps an instant (adjusted to UTC) whatever zone the writer's Arrow type named; Delta
    has one `timestamp` type. Another zone in a later file is no type change."""
    declare(lz / "t", ["id"])
    utc, paris = pa.timestamp("us", tz="UTC"), pa.timestamp("us", tz="Europe/Paris")
    parquet(lz / "t", 1, {"id": [1], "at": pa.array([0], utc)}, [0])
    parquet(lz / "t", 2, {"id": [2], "at": pa.array([3_600_000_000], paris)}, [0])
    [status] = mirror.replay()
    assert (status.status, status.lastAppliedFile) == ("Replicating", 2)
    assert [r["at"] for r in rows(mirror.target, "dbo", "t")] == [
        datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc),
        datetime.datetime(1970, 1, 1, 1, tzinfo=datetime.timezone.utc),
    ]


def test_omitting_a_non_nullable_column_fails_the_schema_merge(lz, mirror):
    declare(lz / "t", ["id"])
    required = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string(), nullable=False)])
    parquet(lz / "t", 1, {"id": [1], "v": ["a"]}, [0], schema=required)
    parquet(lz / "t", 2, {"id": [2]}, [0])
    [status] = mirror.replay()
    assert (status.errorCode, status.lastAppliedFile) == ("SchemaMergeFailed", 1)
    assert "column v is not nullable and is omitted" in status.errorMessage


def test_a_null_in_a_non_nullable_column_stops_the_table_but_deletes_may_leave_it_null(lz, mirror):
    declare(lz / "t", ["id"])
    required = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string(), nullable=False)])
    parquet(lz / "t", 1, {"id": [1, 2], "v": ["a", "b"]}, [0, 0], schema=required)
    parquet(lz / "t", 2, {"id": [1], "v": pa.array([None], pa.string())}, [2])  # DELETE: only the key
    parquet(lz / "t", 3, {"id": [3, 4], "v": ["c", None]}, [0, 0])
    [status] = mirror.replay()
    assert (status.errorCode, status.lastAppliedFile) == ("NullInNonNullableColumn", 2)
    assert f"{3:020d}.parquet row 1: column v is not nullable" in status.errorMessage
    assert rows(mirror.target, "dbo", "t") == [{"id": 2, "v": "b"}]


def test_null_keys_stop_the_table(lz, mirror):
    declare(lz / "t", ["id"])
    parquet(lz / "t", 1, {"id": [1, None]}, [0, 0])
    [status] = mirror.replay()
    assert status.errorCode == "NullKey" and "row 1: key column id is NULL" in status.errorMessage


def test_key_columns_are_matched_as_spelled(lz, mirror):
    declare(lz / "t", ["id"])
    parquet(lz / "t", 1, {"ID": [1]}, [0])
    [status] = mirror.replay()
    assert (status.errorCode, status.lastAppliedFile) == ("KeyColumnMissing", 0)
    assert "key columns ['id'] are absent (the file spells id as ID" in status.errorMessage


def test_a_marker_spelled_in_another_case_is_not_taken_as_data(lz, mirror):
    """The service may read `__RowMarker__` as the marker (Delta ignores case) or as data: the
    local mirror stops there rather than pick one."""
    declare(lz / "t", ["id"])
    parquet(lz / "t", 1, {"id": [1, 2]})
    parquet(lz / "t", 2, {"id": [1], "__ROWMARKER__": pa.array([2], pa.int32())})
    [status] = mirror.replay()
    assert (status.errorCode, status.lastAppliedFile) == ("InvalidRowMarker", 1)
    assert "__ROWMARKER__ differs from __rowMarker__ only in case" in status.errorMessage


def test_updates_and_deletes_need_a_key_which_may_be_declared_later(lz, mirror):
    declare(lz / "t")
    parquet(lz / "t", 1, {"id": [1, 2], "v": ["a", "b"]})  # a marker-free full load: inserts
    parquet(lz / "t", 2, {"id": [1], "v": ["a2"]}, [1])
    [status] = mirror.replay()
    assert (status.errorCode, status.lastAppliedFile) == ("InvalidRowMarker", 1)
    assert "in a table without keyColumns" in status.errorMessage
    declare(lz / "t", ["id"])  # the documented repair: an insert-only table gains a key, once
    [status] = mirror.replay()
    assert (status.status, status.lastAppliedFile, status.keyColumns) == ("Replicating", 2, ["id"])
    assert rows(mirror.target, "dbo", "t") == [{"id": 1, "v": "a2"}, {"id": 2, "v": "b"}]
    declare(lz / "t", ["v"])
    parquet(lz / "t", 3, {"id": [3], "v": ["c"]}, [0])
    [status] = mirror.replay()
    assert status.errorCode == "KeyColumnsChanged" and "from ['id'] to ['v']" in status.errorMessage


def test_types_the_mirror_holds_round_trip(lz, mirror):
    declare(lz / "t", ["id"])
    values = {
        "id": pa.array([1], pa.int16()),
        "small": pa.array([-3], pa.int8()),
        "amount": pa.array([decimal.Decimal("12.50")], pa.decimal256(38, 2)),  # 256-bit, but 38 digits
        "day": pa.array([datetime.date(2026, 1, 2)], pa.date32()),
        "at_ms": pa.array([datetime.datetime(2026, 1, 2, 3, 4, 5)], pa.timestamp("ms", tz="UTC")),
        "label": pa.array(["x"]).dictionary_encode(),
        "blob": pa.array([b"\x00\x01"], pa.binary(2)),
        "flag": pa.array([True]),
        "ratio": pa.array([0.5], pa.float32()),
    }
    parquet(lz / "t", 1, values, [0])
    [status] = mirror.replay()
    assert status.status == "Replicating", status.errorMessage
    types = {f["name"]: f["type"] for f in schema(mirror.target / "dbo" / "t")}
    assert types == {
        "id": "short",
        "small": "byte",
        "amount": "decimal(38,2)",
        "day": "date",
        "at_ms": "timestamp",
        "label": "string",
        "blob": "binary",
        "flag": "boolean",
        "ratio": "float",
    }
    [row] = read_delta(mirror.target / "dbo" / "t")
    assert row["amount"] == decimal.Decimal("12.50") and row["label"] == "x" and row["blob"] == b"\x00\x01"


NAMES = ["order id", "a,b", "x;y", "{c}", "(d)", "e=f", "tab\there", 'quote"d', "back`quoted"]


def test_names_delta_cannot_hold_plainly_get_column_mapping(lz, mirror):
    declare(lz / "t", ["order id"])
    parquet(lz / "t", 1, {name: [i] for i, name in enumerate(NAMES)}, [0])
    parquet(lz / "t", 2, {name: [i + 10 if name != "order id" else 0] for i, name in enumerate(NAMES)}, [1])
    [status] = mirror.replay()
    assert status.status == "Replicating", status.errorMessage
    path = mirror.target / "dbo" / "t"
    assert protocol(path) == {"minReaderVersion": 2, "minWriterVersion": 5}
    fields = schema(path)
    assert [f["name"] for f in fields] == NAMES
    assert all(f["metadata"]["delta.columnMapping.physicalName"] for f in fields)
    expected = [{name: (i + 10 if name != "order id" else 0) for i, name in enumerate(NAMES)}]
    assert read_delta(path) == expected
    # Other readers see the same (delta-rs's own query engine).
    read_back = pa.table(QueryBuilder().register("t", DeltaTable(str(path))).execute("select * from t").read_all())
    assert read_back.to_pylist() == expected


def test_a_column_added_later_that_needs_mapping_upgrades_the_table(lz, mirror):
    declare(lz / "t", ["id"])
    parquet(lz / "t", 1, {"id": [1], "v": ["a"]}, [0])
    mirror.replay()
    assert protocol(mirror.target / "dbo" / "t") == {"minReaderVersion": 1, "minWriterVersion": 2}
    parquet(lz / "t", 2, {"id": [2], "v": ["b"], "new col": [5]}, [0])
    parquet(lz / "t", 3, {"id": [1], "v": ["a2"], "new col": [6], "plain": ["p"]}, [1])
    [status] = mirror.replay()
    assert status.status == "Replicating", status.errorMessage
    path = mirror.target / "dbo" / "t"
    assert protocol(path) == {"minReaderVersion": 2, "minWriterVersion": 5}
    assert rows(mirror.target, "dbo", "t") == [
        {"id": 1, "v": "a2", "new col": 6, "plain": "p"},
        {"id": 2, "v": "b", "new col": 5, "plain": None},
    ]


@pytest.mark.parametrize("first_columns", [{}, {"a b": ["w"]}], ids=["added later", "in the first file"])
def test_column_mapping_on_a_table_with_table_features(lz, mirror, first_columns):
    declare(lz / "t", ["id"])
    # timestamp_ntz puts the table at protocol 3/7 (table features)
    parquet(lz / "t", 1, {"id": [1], "at": pa.array([1], pa.timestamp("us")), **first_columns}, [0])
    parquet(lz / "t", 2, {"id": [2], "at": pa.array([2], pa.timestamp("us")), "a b": ["x"]}, [0])
    [status] = mirror.replay()
    assert status.status == "Replicating", status.errorMessage
    path = mirror.target / "dbo" / "t"
    assert protocol(path) == {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["columnMapping", "timestampNtz"],
        "writerFeatures": ["columnMapping", "timestampNtz"],
    }
    assert {r["id"]: r["a b"] for r in read_delta(path)} == {1: first_columns.get("a b", [None])[0], 2: "x"}
    read_back = pa.table(QueryBuilder().register("t", DeltaTable(str(path))).execute("select * from t").read_all())
    expected = sorted([first_columns.get("a b", [None])[0], "x"], key=str)
    assert sorted(read_back.column("a b").to_pylist(), key=str) == expected


def test_a_table_written_without_the_mapping_its_names_need_gets_it(lz, mirror):
    """As an earlier mirror left them (or a create interrupted before its mapping commit)."""
    from deltalake import write_deltalake
    from deltalake.transaction import CommitProperties, Transaction

    declare(lz / "t", ["id"])
    parquet(lz / "t" / "_ProcessedFiles", 1, {"id": [1], "my col": ["a"]}, [0])
    write_deltalake(
        str(mirror.target / "dbo" / "t"),
        pa.table({"id": [1], "my col": ["a"]}),
        commit_properties=CommitProperties(app_transactions=[Transaction(app_id="dbt-openmirror-replay", version=1)]),
    )
    parquet(lz / "t", 2, {"id": [2], "my col": ["b"]}, [0])
    [status] = mirror.replay()
    assert status.status == "Replicating", status.errorMessage
    assert protocol(mirror.target / "dbo" / "t") == {"minReaderVersion": 2, "minWriterVersion": 5}
    assert rows(mirror.target, "dbo", "t") == [{"id": 1, "my col": "a"}, {"id": 2, "my col": "b"}]


def test_a_key_the_table_holds_twice_is_updated_once_whatever_the_apply_path(lz, mirror):
    declare(lz / "t", ["id"])
    parquet(lz / "t", 1, {"id": [1], "v": ["a"]}, [0])
    parquet(lz / "t", 2, {"id": [1], "v": ["again"]}, [0])  # INSERT does not deduplicate
    parquet(lz / "t", 3, {"id": [1], "v": ["new"]}, [1])  # one UPDATE replaces every copy
    mirror.replay()
    assert rows(mirror.target, "dbo", "t") == [{"id": 1, "v": "new"}]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.lists(st.tuples(st.integers(0, 5), st.sampled_from([0, 1, 2, 4])), max_size=6), min_size=1, max_size=5),
    st.randoms(use_true_random=False),
)
def test_random_change_files_replay_like_the_independent_oracle(tmp_path_factory, files, rng: random.Random):
    root = tmp_path_factory.mktemp("random")
    folder = declare(root / "lz" / "t", ["id"])
    for number, changes in enumerate(files, start=1):
        ids = [key for key, _ in changes]
        parquet(
            folder,
            number,
            {
                "id": pa.array(ids, pa.int64()),
                "v": pa.array([f"{number}-{rng.random():.3f}" for _ in ids], pa.string()),
            },
            [marker for _, marker in changes],
        )
    expected = sorted(json.dumps(r, sort_keys=True) for r in oracle_replay(folder))
    [status] = LocalMirror(LocalStorage(root / "lz"), root / "mirror").replay()
    assert status.status == "Replicating", status.errorMessage
    assert sorted(json.dumps(r, sort_keys=True) for r in read_delta(root / "mirror" / "dbo" / "t")) == expected


def test_nothing_is_written_outside_the_target(tmp_path):
    lz, target = tmp_path / "lz", tmp_path / "area" / "mirror"
    (tmp_path / "area").mkdir()
    for folder in (lz / "...schema" / "t", lz / "ok.schema" / "t"):
        declare(folder, ["id"])
        parquet(folder, 1, {"id": [1]}, [0])
    before = sorted(p.name for p in tmp_path.iterdir())
    statuses = {(s.sourceSchemaName, s.sourceTableName): s for s in LocalMirror(LocalStorage(lz), target).replay()}
    assert statuses[("..", "t")].errorCode == "InvalidFolderName"
    assert "'..': it would leave its parent folder" in statuses[("..", "t")].errorMessage
    assert statuses[("ok", "t")].status == "Replicating"
    assert not (tmp_path / "area" / "t").exists() and not (tmp_path / "t").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert sorted(p.name for p in (tmp_path / "area").glob("*")) == ["mirror"]

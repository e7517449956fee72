"""The validator on deliberately broken landing zones: each defect is caught and located."""

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dbt.adapters.openmirror.publishing.publisher import PublishRecord
from dbt.adapters.openmirror.storage import LocalStorage
from dbt.adapters.openmirror.tools.cli import main
from dbt.adapters.openmirror.tools.local_mirror.replay import LocalMirror
from dbt.adapters.openmirror.tools.validate import ERROR, WARNING, validate
from tests.support.landing_zones import csv_table, text_file


def write(folder, number, columns, **options):
    folder.mkdir(parents=True, exist_ok=True)
    name = number if isinstance(number, str) else f"{number:020d}.parquet"
    pq.write_table(pa.table(columns), folder / name, **options)


def markers(*values, type_=pa.int32()):
    return pa.array(values, type_)


@pytest.fixture
def table(tmp_path):
    folder = tmp_path / "s.schema" / "t"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text(json.dumps({"keyColumns": ["id"]}))
    write(folder, 1, {"id": [1, 2], "v": ["a", "b"], "__rowMarker__": markers(0, 0)})
    return folder


def findings(tmp_path):
    return [(f.severity, f.where.replace(str(tmp_path), ""), f.message) for f in validate(LocalStorage(tmp_path))]


def test_a_good_landing_zone_has_no_findings(tmp_path, table):
    write(table, 2, {"id": [1, 2], "v": ["a2", None], "__rowMarker__": markers(1, 2)})
    assert findings(tmp_path) == []


@pytest.mark.parametrize(
    "break_it, severity, where, message",
    [
        (
            lambda t: write(t, 3, {"id": [3], "v": ["c"], "__rowMarker__": markers(0)}),
            ERROR,
            "s.schema/t",
            "00000000000000000002.parquet is missing",
        ),
        (lambda t: (t / f"{2:020d}.parquet").write_bytes(b""), ERROR, f"{2:020d}.parquet", "zero-byte"),
        (
            lambda t: (t / f"{2:020d}.parquet").write_bytes(b"not parquet"),
            ERROR,
            f"{2:020d}.parquet",
            "not readable Parquet",
        ),
        (lambda t: write(t, "2.parquet", {"id": [3]}), ERROR, "2.parquet", "not 20 digits"),
        (
            lambda t: (t / "_metadata.json").write_text("{keyColumns: ['id']}"),
            ERROR,
            "_metadata.json",
            "not valid JSON",
        ),
        (
            lambda t: (t / "_metadata.json").write_text('{"keyColumns": "id"}'),
            ERROR,
            "_metadata.json",
            "must be a list",
        ),
        (
            lambda t: (t / "_metadata.json").write_text('{"keyColumns": ["id"], "fileDetectionStrategy": "x"}'),
            ERROR,
            "_metadata.json",
            "fileDetectionStrategy is 'x'; expected one of SequentialFileName",
        ),
        (
            lambda t: write(t, 2, {"id": [3], "__rowMarker__": markers(3)}),
            ERROR,
            f"{2:020d}.parquet row 0",
            "is 3, not 0, 1, 2 or 4",
        ),
        (
            lambda t: write(t, 2, {"id": [3, None], "__rowMarker__": markers(0, 0)}),
            ERROR,
            f"{2:020d}.parquet row 1",
            "key column id is NULL",
        ),
        (
            lambda t: write(t, 2, {"v": ["x"], "__rowMarker__": markers(0)}),
            ERROR,
            f"{2:020d}.parquet",
            "key columns ['id'] are absent",
        ),
        (
            lambda t: write(t, 2, {"ID": [3], "__rowMarker__": markers(0)}),
            ERROR,
            f"{2:020d}.parquet",
            "key columns ['id'] are absent (the file spells id as ID: write keyColumns as the columns",
        ),
        (
            lambda t: write(t, 2, {"id": [3], "__rowMarker__": pa.array(["0"])}),
            ERROR,
            f"{2:020d}.parquet",
            "not an integer",
        ),
        (
            lambda t: write(t, 2, {"id": [3], "__RowMarker__": markers(2)}),
            ERROR,
            f"{2:020d}.parquet",
            "column __RowMarker__ differs from __rowMarker__ only in case",
        ),
        (
            lambda t: write(t, 2, {"id": [3], "v": [5], "__rowMarker__": markers(0)}),
            ERROR,
            f"{2:020d}.parquet",
            "column v changed type (v: string -> long)",
        ),
        (
            lambda t: write(t, 2, {"id": [3], "at": pa.array([1], pa.timestamp("ns")), "__rowMarker__": markers(0)}),
            ERROR,
            f"{2:020d}.parquet",
            "nanoseconds",
        ),
        (
            lambda t: write(
                t,
                2,
                {"id": [3], "at": pa.array([1], pa.timestamp("us")), "__rowMarker__": markers(0)},
                use_deprecated_int96_timestamps=True,
            ),
            ERROR,
            f"{2:020d}.parquet",
            "INT96",
        ),
        (
            lambda t: write(t, 2, {"id": [3], "tags": [["a"]], "__rowMarker__": markers(0)}),
            ERROR,
            f"{2:020d}.parquet",
            "JSON strings",
        ),
        (
            lambda t: write(t, 2, {"id": [3], "__rowMarker__": markers(0)}, compression="lz4"),
            ERROR,
            f"{2:020d}.parquet",
            "LZ4",
        ),
        (
            lambda t: write(t, 2, {"id": [3], "v": pa.array([None], pa.string()), "__rowMarker__": markers(1)}),
            WARNING,
            f"{2:020d}.parquet row 0",
            "full row",
        ),
        (  # the columns besides the key left out altogether: the mirror sets them NULL too
            lambda t: write(t, 2, {"id": [1], "__rowMarker__": markers(1)}),
            WARNING,
            f"{2:020d}.parquet row 0",
            "full row",
        ),
        (
            lambda t: pq.write_table(
                pa.Table.from_arrays([pa.array([3]), pa.array([4]), markers(0)], names=["id", "id", "__rowMarker__"]),
                t / f"{2:020d}.parquet",
            ),
            ERROR,
            f"{2:020d}.parquet",
            "column id appears twice",
        ),
        (lambda t: write(t, 2, {"id": [3], "v": ["c"]}), WARNING, f"{2:020d}.parquet", "every row is an INSERT"),
        (
            lambda t: write(t, 2, {"__rowMarker__": markers(0), "id": [3], "v": ["c"]}),
            WARNING,
            f"{2:020d}.parquet",
            "not the last column",
        ),
        (
            lambda t: write(t, 2, {"id": [3], "v": ["c"], "__rowMarker__": markers(0, type_=pa.int64())}),
            WARNING,
            f"{2:020d}.parquet",
            "int32",
        ),
        (lambda t: (t / "_metadata.json").unlink(), WARNING, "s.schema/t", "insert-only"),
        (
            lambda t: (t / "_dbt_openmirror.json").write_text(PublishRecord(1, ["v"], "m").to_json()),
            ERROR,
            "_metadata.json",
            "can never change",
        ),
        (  # the next run refuses it, and `status` says so
            lambda t: (t / "_dbt_openmirror.json").write_text('{"keyColumns": ["id"], "lastSequenceNumber": '),
            ERROR,
            "s.schema/t",
            "_dbt_openmirror.json is damaged",
        ),
        (  # `dbt-openmirror publish` skips it and fails
            lambda t: (
                (t.parent.parent / "_scratchPad" / "dbt-openmirror" / "manifest").mkdir(parents=True)
                or (t.parent.parent / "_scratchPad" / "dbt-openmirror" / "manifest" / "part-0.parquet").write_bytes(
                    b"x"
                )
            ),
            ERROR,
            "_scratchPad/dbt-openmirror/manifest",
            "not readable as a manifest file",
        ),
        (
            lambda t: write(t.parent.parent / "_scratchPad" / "run", "part-0.parquet", {"id": [1]}),
            WARNING,
            "_scratchPad/run/part-0.parquet",
            "left behind",
        ),
        (
            lambda t: (
                write(t.parent / "_hidden", 1, {"id": [1]})
                or write(t.parent.parent / "bad.schema.schema" / "x", 1, {"id": [1]})
            ),
            ERROR,
            "bad.schema.schema",
            "schema folder name",
        ),
    ],
)
def test_each_defect_is_found_and_located(tmp_path, table, break_it, severity, where, message):
    break_it(table)
    found = findings(tmp_path)
    assert any(s == severity and w.endswith(where) and message in m for s, w, m in found), found


@pytest.mark.parametrize(
    "first, second",
    [
        ("Sales.schema/Orders", "sales.schema/orders"),
        ("s.schema/Caf\u00e9", "s.schema/Cafe\u0301"),  # NFC and NFD
        ("orders", "dbo.schema/ORDERS"),  # no schema folder is dbo
        ("t", "dbo.schema/t"),
    ],
)
def test_table_folders_the_mirror_would_take_for_one_are_errors(tmp_path, first, second):
    # The local mirror stops such a table (test_local_mirror_folders.py).
    for folder in (first, second):
        write(tmp_path / folder, 1, {"id": [1], "__rowMarker__": markers(0)})
    found = [(s, m) for s, w, m in findings(tmp_path) if "both would feed one table" in m]
    assert len(found) == 1 and found[0][0] == ERROR, found
    assert {first, second} == set(found[0][1].split(" differ only")[0].split(" name the same")[0].split(" and ")), found


def test_updates_of_a_table_of_key_columns_alone_are_not_warned_about(tmp_path):
    folder = tmp_path / "links"
    folder.mkdir()
    (folder / "_metadata.json").write_text(json.dumps({"keyColumns": ["a", "b"]}))
    write(folder, 1, {"a": [1], "b": [2], "__rowMarker__": markers(4)})
    assert findings(tmp_path) == []


@pytest.mark.parametrize(
    "metadata, message",
    [
        (lambda path: path.mkdir(), "_metadata.json is a folder where a file is expected"),
        (lambda path: path.write_bytes(b'{"keyColumns": ["\xff"]}'), "_metadata.json is not UTF-8 text"),
    ],
)
def test_a_table_whose_files_cannot_be_read_as_text_is_a_finding_and_the_others_are_checked(
    tmp_path, table, metadata, message
):
    other = tmp_path / "s.schema" / "u"
    other.mkdir()
    metadata(other / "_metadata.json")
    write(table, 3, {"id": [3], "__rowMarker__": markers(0)})  # a gap in the table beside it
    found = findings(tmp_path)
    assert any(severity == ERROR and where == "s.schema/u" and message in text for severity, where, text in found)
    assert any(where == "s.schema/t" and "00000000000000000002.parquet is missing" in text for _, where, text in found)


def test_cli_exit_status(tmp_path, table, capsys):
    assert main(["validate", str(tmp_path)]) == 0
    write(table, 3, {"id": [3], "v": ["c"], "__rowMarker__": markers(0)})
    assert main(["validate", str(tmp_path)]) == 1
    assert "1 errors, 0 warnings" in capsys.readouterr().out


def test_marker_free_full_loads_are_not_warned_about(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "_metadata.json").write_text(json.dumps({"keyColumns": ["id"]}))
    write(folder, 1, {"id": [1, 2], "v": ["a", "b"]})  # the fast direct-staging path
    write(folder, 2, {"id": [2], "v": ["b2"], "__rowMarker__": markers(1)})
    assert findings(tmp_path) == []
    # isUpsertDefaultRowMarker: a marker-free file after marked ones is all upserts.
    (folder / "_metadata.json").write_text(json.dumps({"keyColumns": ["id"], "isUpsertDefaultRowMarker": True}))
    write(folder, 3, {"id": [2], "v": ["b3"]})
    assert findings(tmp_path) == []


def test_a_valid_last_update_time_table_has_no_findings(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "_metadata.json").write_text(
        json.dumps({"keyColumns": ["id"], "fileDetectionStrategy": "LastUpdateTimeFileDetection"})
    )
    for age, name in enumerate(["9f1c.parquet", "1a2b.parquet", "batch-7.parquet"], start=1):
        write(folder, name, {"id": [age], "__rowMarker__": markers(0)})
        os.utime(folder / name, (1000 + age, 1000 + age))
    assert findings(tmp_path) == []


def test_a_valid_delimited_text_table_has_no_findings(tmp_path):
    csv_table(
        tmp_path / "t",
        ["id"],
        [{"Name": "id", "DataType": "Int64", "IsNullable": False}, {"Name": "name", "DataType": "String"}],
        NullValue="NULL",
    )
    text_file(tmp_path / "t", f"{1:020d}.csv", 'id,name,__rowMarker__\n1,"a, b",0\n2,NULL,0\n')
    text_file(tmp_path / "t", f"{2:020d}.csv", "name,id,__rowMarker__\nx,1,4\n,2,2\n")
    (tmp_path / "_partnerEvents.json").write_text(
        json.dumps(
            {
                "partnerName": "someone",
                "sourceInfo": {"sourceType": "x", "sourceVersion": "1", "additionalInformation": {}},
            }
        )
    )
    assert findings(tmp_path) == []


@pytest.mark.parametrize(
    "marker_type, severity, message",
    [
        ("Int32", WARNING, "declares __rowMarker__, the row marker, which is not a column of the table"),
        ("String", ERROR, "declares __rowMarker__ as String: the row marker is an integer"),
    ],
)
def test_a_delimited_text_table_that_declares_the_marker(tmp_path, marker_type, severity, message):
    columns = [{"Name": "id", "DataType": "Int64"}, {"Name": "__rowMarker__", "DataType": marker_type}]
    csv_table(tmp_path / "t", ["id"], columns)
    text_file(tmp_path / "t", f"{1:020d}.csv", "id,__rowMarker__\n1,0\n2,0\n")
    found = findings(tmp_path)
    assert any(s == severity and message in m for s, w, m in found), found
    if severity == WARNING:  # then read as a table of one column, id
        assert [f for f in found if f[0] == ERROR] == []
        statuses = LocalMirror(LocalStorage(tmp_path), tmp_path.with_name(f"{tmp_path.name}-mirror")).replay()
        assert [(s.status, s.metrics["processedRows"]) for s in statuses] == [("Replicating", 2)]


def table_with(tmp_path, metadata, *files):
    folder = tmp_path / "s.schema" / "t"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text(metadata if isinstance(metadata, str) else json.dumps(metadata))
    for name, columns in files:
        write(folder, name, columns)
    return folder


REQUIRED = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string(), nullable=False)])


@pytest.mark.parametrize(
    "metadata, files, severity, where, message",
    [
        (
            {"keyColumns": ["id"]},
            [(2, {"id": [1]})],
            ERROR,
            "s.schema/t",
            f"{1:020d}.parquet is missing: numbering starts at 1",
        ),
        (
            {"keyColumns": ["id"]},
            [(1, {"id": [1], "Name": ["a"], "name": ["b"]})],
            ERROR,
            f"{1:020d}.parquet",
            "columns Name and name differ only in case",
        ),
        (
            {"keyColumns": ["id"]},
            [(1, {"id": [1], "Name": ["a"]}), (2, {"id": [2], "name": ["b"]})],
            ERROR,
            f"{2:020d}.parquet",
            "column Name is spelled name here",
        ),
        (
            {"keyColumns": ["id"]},
            [(1, pa.table({"id": [1], "v": ["a"]}, schema=REQUIRED)), (2, {"id": [2]})],
            ERROR,
            f"{2:020d}.parquet",
            "column v is not nullable and is omitted",
        ),
        (
            {"keyColumns": ["id"]},
            [(1, {"id": [1], "n": pa.array([1], pa.uint32())})],
            ERROR,
            f"{1:020d}.parquet",
            "column n: unsigned integer",
        ),
        (
            {"keyColumns": ["id"]},
            [(1, {"id": [1], "n": pa.array([1], pa.decimal256(50, 2))})],
            ERROR,
            f"{1:020d}.parquet",
            "column n: decimal(50,2) is outside Delta's decimals",
        ),
        (
            {"keyColumns": ["id"]},
            [(1, {"id": [1], "n": pa.array([1], pa.time32("s"))})],
            ERROR,
            f"{1:020d}.parquet",
            "column n: time of day",
        ),
        (
            {"keyColumns": ["id"], "isUpsertDefaultRowMarker": "yes"},
            [],
            ERROR,
            "_metadata.json",
            "isUpsertDefaultRowMarker must be true or false",
        ),
        ({"KeyColumns": ["id"]}, [], WARNING, "_metadata.json", "'KeyColumns' is spelled 'keyColumns'"),
        (
            {"keyColumns": ["id"], "keyColumn": ["id"]},
            [],
            WARNING,
            "_metadata.json",
            "unknown field 'keyColumn' is ignored",
        ),
        ({"keyColumns": ["id"], "KeyColumns": ["id"]}, [], ERROR, "_metadata.json", "'keyColumns' is given 2 times"),
        ('{"keyColumns": ["id"], "keyColumns": ["v"]}', [], ERROR, "_metadata.json", "appears more than once"),
        (
            {},
            [(1, {"id": [1], "__rowMarker__": markers(2)})],
            ERROR,
            f"{1:020d}.parquet row 0",
            "in a table without keyColumns",
        ),
        (
            {"keyColumns": ["id"], "FileFormat": "DelimitedText"},
            [],
            ERROR,
            "_metadata.json",
            "FileExtension is required",
        ),
    ],
)
def test_each_rule_of_the_mirror_is_a_finding(tmp_path, metadata, files, severity, where, message):
    table_with(tmp_path, metadata, *files)
    found = findings(tmp_path)
    assert any(s == severity and w.endswith(where) and message in m for s, w, m in found), found


def test_a_schema_change_is_found_against_files_already_processed(tmp_path):
    folder = table_with(tmp_path, {"keyColumns": ["id"]}, (1, {"id": [1], "Name": ["a"]}))
    (folder / "_ProcessedFiles").mkdir()
    (folder / f"{1:020d}.parquet").rename(folder / "_ProcessedFiles" / f"{1:020d}.parquet")
    write(folder, 2, {"id": [2], "name": ["b"]})
    assert [(s, w.rsplit("/", 1)[-1]) for s, w, _ in findings(tmp_path)] == [(ERROR, f"{2:020d}.parquet")]


def test_a_file_numbered_0_is_never_applied(tmp_path, tmp_path_factory):
    folder = table_with(tmp_path, {"keyColumns": ["id"]}, (0, {"id": [0]}), (1, {"id": [1]}))
    assert [(s, w.rsplit("/", 1)[-1], m) for s, w, m in findings(tmp_path) if s == ERROR] == [
        (ERROR, f"{0:020d}.parquet", "number 0: numbering starts at 1: the mirror will not apply it")
    ]
    [status] = LocalMirror(LocalStorage(tmp_path), tmp_path_factory.mktemp("mirror")).replay()
    assert (status.status, status.lastAppliedFile) == ("Replicating", 1)
    assert (folder / f"{0:020d}.parquet").exists()


def test_upserts_by_default_need_keys(tmp_path, tmp_path_factory):
    table_with(tmp_path, {"isUpsertDefaultRowMarker": True}, (1, {"id": [1]}))
    assert any(
        s == ERROR and "with isUpsertDefaultRowMarker its rows are upserts, which need keyColumns" in m
        for s, _, m in findings(tmp_path)
    )
    [status] = LocalMirror(LocalStorage(tmp_path), tmp_path_factory.mktemp("mirror")).replay()
    assert status.errorCode == "InvalidRowMarker"
    assert "has no __rowMarker__, so with isUpsertDefaultRowMarker its rows are upserts" in status.errorMessage


def test_a_number_written_again_after_it_was_processed_is_an_error(tmp_path):
    folder = table_with(tmp_path, {"keyColumns": ["id"]}, (1, {"id": [1]}))
    (folder / "_ProcessedFiles").mkdir()
    (folder / f"{1:020d}.parquet").rename(folder / "_ProcessedFiles" / f"{1:020d}.parquet")
    write(folder, 1, {"id": [7]})
    assert [(w.rsplit("/", 1)[-1], m) for s, w, m in findings(tmp_path) if s == ERROR] == [
        (
            f"{1:020d}.parquet",
            f"written again after the mirror processed s.schema/t/_ProcessedFiles/{1:020d}.parquet: a number is "
            "never reused, and the mirror stops the table",
        )
    ]


def test_files_the_mirror_processed_and_purged_are_not_missing(tmp_path):
    """The service purges processed files after about a week (the last may stay in place): a
    number below the first waiting file may be gone once anything was processed. A number
    missing after a waiting file is still a gap."""
    folder = table_with(tmp_path, {"keyColumns": ["id"]}, (3, {"id": [3]}), (4, {"id": [4]}), (6, {"id": [6]}))
    assert [m for s, _, m in findings(tmp_path) if s == ERROR] == [
        f"{1:020d}.parquet is missing: numbering starts at 1, and every later file waits for it",
        f"{5:020d}.parquet is missing: every later file waits behind the gap",
    ]
    (folder / "_ProcessedFiles").mkdir()  # processed, then purged
    assert [m for s, _, m in findings(tmp_path) if s == ERROR] == [
        f"{5:020d}.parquet is missing: every later file waits behind the gap"
    ]
    # Purges go by age: with file 2 still kept, 1 may be purged, but 3 was never processed.
    (folder / f"{3:020d}.parquet").rename(folder / "_ProcessedFiles" / f"{2:020d}.parquet")
    assert [m for s, _, m in findings(tmp_path) if s == ERROR] == [
        f"{3:020d}.parquet is missing: every later file waits behind the gap",
        f"{5:020d}.parquet is missing: every later file waits behind the gap",
    ]


def test_a_move_to_processed_files_stopped_halfway_is_one_file(tmp_path):
    """The local mirror moves a file by linking it into _ProcessedFiles/, then unlinking it."""
    folder = table_with(tmp_path, {"keyColumns": ["id"]}, (1, {"id": [1]}))
    (folder / "_ProcessedFiles").mkdir()
    os.link(folder / f"{1:020d}.parquet", folder / "_ProcessedFiles" / f"{1:020d}.parquet")
    assert [f for f in findings(tmp_path) if f[0] == ERROR] == []


@pytest.mark.parametrize(
    "text, message",
    [
        ("{", "not valid JSON"),
        ('{"sourceInfo": {}}', "partnerName must name the publisher"),
        (
            '{"partnerName": "p", "sourceInfo": {"additionalInformation": "x"}}',
            "additionalInformation must be an object",
        ),
    ],
)
def test_an_invalid_partner_events_file_is_an_error(tmp_path, table, text, message):
    (tmp_path / "_partnerEvents.json").write_text(text)
    assert any(s == ERROR and w == "_partnerEvents.json" and message in m for s, w, m in findings(tmp_path))


def test_last_update_time_warnings(tmp_path):
    folder = table_with(
        tmp_path,
        {"keyColumns": ["id"], "fileDetectionStrategy": "LastUpdateTimeFileDetection"},
        ("a.parquet", {"id": [1]}),
        ("b.parquet", {"id": [2]}),
    )
    for name in ("a.parquet", "b.parquet"):
        os.utime(folder / name, (1000, 1000))
    (folder / "_ProcessedFiles").mkdir()
    write(folder / "_ProcessedFiles", "old.parquet", {"id": [0]})
    write(folder, "old.parquet", {"id": [0]})
    text_file(folder, "readme.txt", "x")
    found = {(s, w.rsplit("/", 1)[-1], m.split(":")[0]) for s, w, m in findings(tmp_path)}
    assert found == {
        (WARNING, "b.parquet", "same last-modified time as a.parquet"),
        (WARNING, "old.parquet", "a file of this name was already processed"),
        (WARNING, "readme.txt", "not a .parquet file"),
    }


@pytest.mark.parametrize(
    "text, where, message",
    [
        ("id,extra,__rowMarker__\n1,x,0\n", f"{1:020d}.csv", "not declared ['extra']"),
        ("id,__rowMarker__\n1,0\nzz,0\n", f"{1:020d}.csv", "column id row 1: 'zz' is not Int64"),
        ("id,__rowMarker__\n1,3\n", f"{1:020d}.csv row 0", "__rowMarker__ is 3"),
    ],
)
def test_delimited_text_files_are_checked_against_their_declaration(tmp_path, text, where, message):
    csv_table(tmp_path / "t", ["id"], [{"Name": "id", "DataType": "Int64"}])
    text_file(tmp_path / "t", f"{1:020d}.csv", text)
    found = findings(tmp_path)
    assert any(s == ERROR and w.endswith(where) and message in m for s, w, m in found), found


@pytest.mark.parametrize("folder", ["s.schema/%2E%2E", "%62ase", "%2E.schema/t"])
def test_a_percent_in_a_folder_name_is_an_error(tmp_path, folder):
    """Whatever percent-decodes the name once would read another folder ('%2E%2E' is '..')."""
    write(tmp_path / folder, 1, {"id": [1]})
    found = findings(tmp_path)
    assert any(s == ERROR and "folder name" in m and "'%'" in m for s, w, m in found), found

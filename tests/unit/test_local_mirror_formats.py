"""The local mirror on tables that are not sequential Parquet: LastUpdateTimeFileDetection (any
unique names, storage last-modified order, each path once) and delimited text (CSV)."""

import datetime
import os
import shutil

import pytest

from dbt.adapters.openmirror.storage import LocalStorage
from dbt.adapters.openmirror.tools.cli import main
from dbt.adapters.openmirror.tools.local_mirror.replay import LocalMirror
from tests.support.delta_reader import schema
from tests.support.landing_zones import csv_table, declare, parquet, rows, text_file

LAST_UPDATE_TIME = {"fileDetectionStrategy": "LastUpdateTimeFileDetection"}


def aged(path, seconds):
    os.utime(path, (seconds, seconds))
    return path


def test_last_update_time_applies_any_names_in_storage_time_order(lz, mirror):
    folder = declare(lz / "t", ["id"], **LAST_UPDATE_TIME)
    # Name order is the reverse of time order: time decides.
    aged(parquet(folder, "c-3f2a.parquet", {"id": [1], "v": ["first"]}, [0]), 1000)
    aged(parquet(folder, "b-91e0.parquet", {"id": [1], "v": ["second"]}, [1]), 2000)
    aged(parquet(folder, "a-07cd.parquet", {"id": [2], "v": ["third"]}, [0]), 3000)
    text_file(folder, "notes.txt", "not a data file")
    [status] = mirror.replay()
    assert (status.status, status.lastAppliedFile, status.lastAppliedFileName) == ("Replicating", 3, "a-07cd.parquet")
    assert rows(mirror.target, "dbo", "t") == [{"id": 1, "v": "second"}, {"id": 2, "v": "third"}]
    assert sorted(p.name for p in (folder / "_ProcessedFiles").iterdir()) == [
        "a-07cd.parquet",
        "b-91e0.parquet",
        "c-3f2a.parquet",
    ]
    assert (folder / "notes.txt").exists()


def test_a_processed_path_written_again_is_not_applied_again(lz, mirror):
    folder = declare(lz / "t", ["id"], **LAST_UPDATE_TIME)
    parquet(folder, "changes.parquet", {"id": [1], "v": ["a"]}, [0])
    mirror.replay()
    # Written again under the same path, even after the processed copy was purged.
    shutil.rmtree(folder / "_ProcessedFiles")
    (folder / "_FilesReadyToDelete").mkdir()
    parquet(folder, "changes.parquet", {"id": [1], "v": ["again"]}, [0])
    parquet(folder, "next.parquet", {"id": [2], "v": ["b"]}, [0])
    [status] = mirror.replay()
    assert status.ignoredFiles == ["changes.parquet"] and status.lastAppliedFileName == "next.parquet"
    assert rows(mirror.target, "dbo", "t") == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    # Another mirror process remembers the same (the record is the Delta table's log).
    [status] = LocalMirror(LocalStorage(lz), mirror.target).replay()
    assert status.ignoredFiles == ["changes.parquet"] and len(rows(mirror.target, "dbo", "t")) == 2


def test_a_recreated_last_update_time_folder_is_rebuilt(lz, mirror):
    folder = declare(lz / "t", ["id"], **LAST_UPDATE_TIME)
    parquet(folder, "one.parquet", {"id": [1]}, [0])
    mirror.replay()
    shutil.rmtree(folder)
    declare(folder, ["id"], **LAST_UPDATE_TIME)
    parquet(folder, "one.parquet", {"id": [5]}, [0])
    [status] = mirror.replay()
    assert rows(mirror.target, "dbo", "t") == [{"id": 5}] and status.lastAppliedFile == 1


def test_the_detection_strategy_of_a_table_cannot_change(lz, mirror):
    folder = declare(lz / "t", ["id"])
    parquet(folder, 1, {"id": [1]}, [0])
    mirror.replay()
    declare(folder, ["id"], **LAST_UPDATE_TIME)
    [status] = mirror.replay()
    assert status.errorCode == "TableDefinitionChanged"
    assert "fileDetectionStrategy changed from SequentialFileName to LastUpdateTimeFileDetection" in status.errorMessage


COLUMNS = [
    {"Name": "id", "DataType": "Int32", "IsNullable": False},
    {"Name": "name", "DataType": "String"},
    {"Name": "at", "DataType": "DateTime"},
    {"Name": "day", "DataType": "IDate"},
    {"Name": "time", "DataType": "ITime"},
    {"Name": "price", "DataType": "Double"},
    {"Name": "ok", "DataType": "Boolean"},
]


def test_a_delimited_text_table(lz, mirror):
    folder = csv_table(lz / "t", ["id"], COLUMNS, NullValue="N/A", ColumnSeparator=";")
    text_file(
        folder,
        f"{1:020d}.csv",
        (
            "id;name;at;day;time;price;ok;__rowMarker__\r\n"
            '1;"Smith; ""Jr""";2026-01-02 03:04:05;2026-01-02;10:11:12;1.5;true;0\r\n'
            "2;N/A;2026-01-02T03:04:05+02:00;;;;;0\r\n"
            '3;"N/A";;;;;false;0\r\n'
        ),
    )
    text_file(folder, f"{2:020d}.csv", "name;id;at;day;time;price;ok;__rowMarker__\n;3;;;;;;2\nx;1;;;;2.5;;1\n")
    [status] = mirror.replay()
    assert status.status == "Replicating", status.errorMessage
    utc = datetime.timezone.utc
    assert sorted(rows(mirror.target, "dbo", "t"), key=lambda r: r["id"]) == [
        {"id": 1, "name": "x", "at": None, "day": None, "time": None, "price": 2.5, "ok": None},
        {
            "id": 2,
            "name": None,
            "at": datetime.datetime(2026, 1, 2, 1, 4, 5, tzinfo=utc),
            "day": None,
            "time": None,
            "price": None,
            "ok": None,
        },
    ]
    types = {f["name"]: (f["type"], f["nullable"]) for f in schema(mirror.target / "dbo" / "t")}
    assert types == {
        "id": ("integer", False),
        "name": ("string", True),
        "at": ("timestamp", True),
        "day": ("date", True),
        "time": ("string", True),
        "price": ("double", True),
        "ok": ("boolean", True),
    }


def test_an_escape_character_equal_to_the_quote_doubles_quotes(lz, mirror):
    """RFC 4180, and Azure Data Factory with EscapeCharacter set to the quote: `""` inside quotes."""
    folder = csv_table(lz / "t", ["id"], COLUMNS[:2], QuoteCharacter='"', EscapeCharacter='"')
    text_file(folder, f"{1:020d}.csv", 'id,name,__rowMarker__\n1,"say ""hi""",0\n')
    [status] = mirror.replay()
    assert status.status == "Replicating", status.errorMessage
    assert rows(mirror.target, "dbo", "t") == [{"id": 1, "name": 'say "hi"'}]


@pytest.mark.parametrize(
    "text, message",
    [
        ("id;name;extra;__rowMarker__\n1;a;b;0\n", "not declared ['extra']"),
        ("id;name\n1;a\n", "missing ['__rowMarker__']"),
        ("id;name;__rowMarker__\nx;a;0\n", "column id row 0: 'x' is not Int32"),
    ],
)
def test_a_delimited_text_file_that_does_not_match_its_declaration_stops_the_table(lz, mirror, text, message):
    folder = csv_table(lz / "t", ["id"], COLUMNS[:2], ColumnSeparator=";")
    text_file(folder, f"{1:020d}.csv", text)
    [status] = mirror.replay()
    assert status.errorCode == "InvalidFile" and message in status.errorMessage, status.errorMessage


def test_status_counts_the_files_waiting_by_the_tables_own_naming(lz, tmp_path, capsys):
    declare(lz / "lut", ["id"], **LAST_UPDATE_TIME)
    parquet(lz / "lut", "x.parquet", {"id": [1]}, [0])
    parquet(lz / "lut", "y.parquet", {"id": [2]}, [0])
    csv_table(lz / "text", ["id"], COLUMNS[:1])
    text_file(lz / "text", f"{1:020d}.csv", "id,__rowMarker__\n1,0\n")
    (lz / "broken").mkdir()
    (lz / "broken" / "_metadata.json").write_text("{")
    assert main(["status", str(lz)]) == 0
    lines = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()}
    assert lines["dbo.lut"][2] == "2" and lines["dbo.text"][2] == "1"
    assert lines["dbo.broken"][1:3] == ["-", "-"]

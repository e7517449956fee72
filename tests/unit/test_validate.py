"""The validator on deliberately broken landing zones: each defect is caught and located."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dbt.adapters.openmirror.cli import main
from dbt.adapters.openmirror.storage import LocalStorage
from dbt.adapters.openmirror.validate import ERROR, WARNING, validate


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
        (lambda t: write(t, 3, {"id": [3], "v": ["c"], "__rowMarker__": markers(0)}),
         ERROR, "s.schema/t", "00000000000000000002.parquet is missing"),
        (lambda t: (t / f"{2:020d}.parquet").write_bytes(b""), ERROR, f"{2:020d}.parquet", "zero-byte"),
        (lambda t: (t / f"{2:020d}.parquet").write_bytes(b"not parquet"), ERROR, f"{2:020d}.parquet", "not readable Parquet"),
        (lambda t: write(t, "2.parquet", {"id": [3]}), ERROR, "2.parquet", "not 20 digits"),
        (lambda t: (t / "_metadata.json").write_text("{keyColumns: ['id']}"), ERROR, "_metadata.json", "not valid JSON"),
        (lambda t: (t / "_metadata.json").write_text('{"keyColumns": "id"}'), ERROR, "_metadata.json", "must be a list"),
        (lambda t: (t / "_metadata.json").write_text('{"keyColumns": ["id"], "fileDetectionStrategy": "x"}'),
         ERROR, "_metadata.json", "unknown fileDetectionStrategy"),
        (lambda t: write(t, 2, {"id": [3], "__rowMarker__": markers(3)}), ERROR, f"{2:020d}.parquet row 0", "is 3, not 0, 1, 2 or 4"),
        (lambda t: write(t, 2, {"id": [3, None], "__rowMarker__": markers(0, 0)}), ERROR, f"{2:020d}.parquet row 1", "key column id is NULL"),
        (lambda t: write(t, 2, {"v": ["x"], "__rowMarker__": markers(0)}), ERROR, f"{2:020d}.parquet", "key columns ['id'] are absent"),
        (lambda t: write(t, 2, {"id": [3], "__rowMarker__": pa.array(["0"])}), ERROR, f"{2:020d}.parquet", "not an integer"),
        (lambda t: write(t, 2, {"id": [3], "v": [5], "__rowMarker__": markers(0)}), ERROR, f"{2:020d}.parquet", "column v is int64 here but string"),
        (lambda t: write(t, 2, {"id": [3], "at": pa.array([1], pa.timestamp("ns")), "__rowMarker__": markers(0)}),
         ERROR, f"{2:020d}.parquet", "nanoseconds"),
        (lambda t: write(t, 2, {"id": [3], "at": pa.array([1], pa.timestamp("us")), "__rowMarker__": markers(0)},
                         use_deprecated_int96_timestamps=True), ERROR, f"{2:020d}.parquet", "INT96"),
        (lambda t: write(t, 2, {"id": [3], "tags": [["a"]], "__rowMarker__": markers(0)}), ERROR, f"{2:020d}.parquet", "JSON strings"),
        (lambda t: write(t, 2, {"id": [3], "__rowMarker__": markers(0)}, compression="lz4"), ERROR, f"{2:020d}.parquet", "LZ4"),
        (lambda t: write(t, 2, {"id": [3], "v": [None], "__rowMarker__": markers(1)}, ), WARNING, f"{2:020d}.parquet row 0", "full row"),
        (lambda t: write(t, 2, {"id": [3], "v": ["c"]}), WARNING, f"{2:020d}.parquet", "every row is an INSERT"),
        (lambda t: write(t, 2, {"__rowMarker__": markers(0), "id": [3], "v": ["c"]}), WARNING, f"{2:020d}.parquet", "not the last column"),
        (lambda t: write(t, 2, {"id": [3], "v": ["c"], "__rowMarker__": markers(0, type_=pa.int64())}), WARNING, f"{2:020d}.parquet", "int32"),
        (lambda t: (t / "_metadata.json").unlink(), WARNING, "s.schema/t", "insert-only"),
        (lambda t: (t / "_dbt_openmirror.json").write_text('{"keyColumns": ["v"]}'), ERROR, "_metadata.json", "can never change"),
        (lambda t: write(t.parent.parent / "_scratchPad" / "run", "part-0.parquet", {"id": [1]}), WARNING, "_scratchPad/run/part-0.parquet", "left behind"),
        (lambda t: write(t.parent / "_hidden", 1, {"id": [1]}) or write(t.parent.parent / "bad.schema.schema" / "x", 1, {"id": [1]}),
         ERROR, "bad.schema.schema", "schema folder name"),
    ],
)
def test_each_defect_is_found_and_located(tmp_path, table, break_it, severity, where, message):
    break_it(table)
    found = findings(tmp_path)
    assert any(s == severity and w.endswith(where) and message in m for s, w, m in found), found


def test_cli_exit_status(tmp_path, table, capsys):
    assert main(["validate", str(tmp_path)]) == 0
    write(table, 3, {"id": [3], "v": ["c"], "__rowMarker__": markers(0)})
    assert main(["validate", str(tmp_path)]) == 1
    assert "1 errors, 0 warnings" in capsys.readouterr().out

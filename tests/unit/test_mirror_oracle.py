"""The test oracle applies the spec's marker table; check it on hand-written files."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.mirror_oracle import replay


def write(folder, number, rows, markers):
    table = pa.table(
        {"id": [r[0] for r in rows], "v": [r[1] for r in rows], "__rowMarker__": pa.array(markers, pa.int32())}
    )
    pq.write_table(table, folder / f"{number:020d}.parquet")


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "_metadata.json").write_text(json.dumps({"keyColumns": ["id"]}))
    return tmp_path


def test_marker_semantics(folder):
    write(folder, 1, [(1, "a"), (2, "b")], [0, 0])
    # INSERT of a present key duplicates; UPDATE of a missing key inserts; DELETE of a
    # missing key does nothing; UPSERT replaces.
    write(folder, 2, [(1, "a2"), (3, "c"), (9, None), (2, "b2")], [0, 1, 2, 4])
    rows = sorted(replay(folder), key=lambda r: (r["id"], r["v"]))
    assert rows == [{"id": 1, "v": "a"}, {"id": 1, "v": "a2"}, {"id": 2, "v": "b2"}, {"id": 3, "v": "c"}]
    write(folder, 3, [(1, None)], [2])
    assert sorted(r["id"] for r in replay(folder)) == [2, 3]


def test_a_gap_is_an_error(folder):
    write(folder, 1, [(1, "a")], [0])
    write(folder, 3, [(2, "b")], [0])
    with pytest.raises(AssertionError, match="gap"):
        replay(folder)

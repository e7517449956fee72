"""Where Spark stages change files: the automatic choice, and the upload of a local stage."""

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dbt.adapters.openmirror.publishing.staging import (
    DIRECT,
    UPLOAD,
    choose_mode,
    land_staged_files,
    start_staging,
)
from dbt.adapters.openmirror.storage import LocalStorage


def _never():
    raise AssertionError("asked although the answer did not depend on it")


@pytest.mark.parametrize(
    "setting, shared, master, can_write, expected",
    [
        ("direct", False, _never, _never, DIRECT),
        ("upload", True, _never, _never, UPLOAD),
        ("auto", True, _never, _never, DIRECT),  # a local landing zone: Spark writes it
        ("auto", False, lambda: "local[2]", _never, UPLOAD),  # a laptop publishing to OneLake
        ("auto", False, lambda: "yarn", lambda: True, DIRECT),  # Fabric / Databricks Spark
        ("auto", False, lambda: "spark://10.0.0.1:7077", lambda: False, UPLOAD),
    ],
)
def test_the_automatic_choice(setting, shared, master, can_write, expected):
    assert choose_mode(setting, shared, master, can_write) == expected


def test_direct_staging_writes_into_the_landing_zone(tmp_path):
    storage = LocalStorage(tmp_path)
    staging = start_staging(storage, "_scratchPad/dbt-openmirror/r1", DIRECT)
    assert (staging.uri, staging.local_folder) == (f"file://{tmp_path}/_scratchPad/dbt-openmirror/r1", None)
    land_staged_files(storage, staging)  # nothing to do
    assert not (tmp_path / "_scratchPad").exists()


def test_upload_staging_copies_the_data_files_and_removes_the_local_folder(tmp_path):
    storage = LocalStorage(tmp_path / "lz")
    staging = start_staging(storage, "_scratchPad/dbt-openmirror/r1", UPLOAD)
    written = Path(staging.uri.removeprefix("file://"))
    assert Path(staging.local_folder) in written.parents and tmp_path / "lz" not in written.parents
    # What Spark leaves: part files, a _SUCCESS marker and checksum files.
    written.mkdir()
    pq.write_table(pa.table({"id": [1, 2]}), written / "part-00000.parquet")
    (written / "_SUCCESS").write_bytes(b"")
    (written / ".part-00000.parquet.crc").write_bytes(b"crc")
    land_staged_files(storage, staging)
    staged = tmp_path / "lz/_scratchPad/dbt-openmirror/r1"
    assert [p.name for p in staged.iterdir()] == ["part-00000.parquet"]
    assert pq.read_table(staged / "part-00000.parquet").num_rows == 2
    assert not Path(staging.local_folder).exists()

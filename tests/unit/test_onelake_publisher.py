"""The publisher on a OneLake landing zone (the DFS stand-in): a publish journaled, interrupted by
a service that keeps failing, and finished by the next run, with numbers continuous and each file
renamed into place exactly once."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dbt.adapters.openmirror.errors import LandingZoneServiceError
from dbt.adapters.openmirror.publisher import Publisher, TableFolderState
from dbt.adapters.openmirror.storage.location import parse_location
from dbt.adapters.openmirror.storage.onelake import OneLakeStorage
from dbt.adapters.openmirror.storage.retry import RetrySettings
from tests.dfs_emulator import DfsEmulator, FixedTokenCredential

TABLE = "s.schema/t"
STAGED = "_scratchPad/dbt-openmirror/run-1"


@pytest.fixture
def onelake(tmp_path, monkeypatch):
    with DfsEmulator(tmp_path / "onelake", filesystems=["ws"]) as dfs:
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", dfs.ca_path)
        storage = OneLakeStorage(
            parse_location(f"{dfs.url}/ws/item/Files/LandingZone"), FixedTokenCredential(),
            retry=RetrySettings(attempts=3, backoff_seconds=0.05),
        )
        yield dfs, storage


def test_an_interrupted_publish_is_finished_by_the_next_run(onelake, tmp_path):
    dfs, storage = onelake
    for index, rows in enumerate((2, 3)):
        local = tmp_path / f"part-{index}.parquet"
        pq.write_table(pa.table({"id": list(range(rows)), "__rowMarker__": pa.array([0] * rows, pa.int32())}), local)
        storage.upload_file(local, f"{STAGED}/part-{index:05d}.parquet")
    publisher = Publisher(storage)
    pending = publisher.prepare(TABLE, ["id"], STAGED, TableFolderState(False, None, 0), 5, "m", "run-1", True, False)
    publisher.begin(pending)
    # The service fails the second file's rename on every attempt: the run stops there.
    dfs.inject(status=500, times=100, operation="rename", path="/ws/item/Files/LandingZone/s.schema/t/00000000000000000002.parquet")
    with pytest.raises(LandingZoneServiceError, match="HTTP 500"):
        publisher.complete(pending)
    dfs.faults.clear()
    state = Publisher(storage).table_state(TABLE)
    assert state.pending == pending and state.numbering_conflict is None

    Publisher(storage).complete(state.pending)
    Publisher(storage).commit(state.pending)
    folder = dfs.root / "ws/item/Files/LandingZone/s.schema/t"
    assert sorted(p.name for p in folder.glob("*.parquet")) == [f"{n:020d}.parquet" for n in (1, 2)]
    assert [pq.read_metadata(folder / f"{n:020d}.parquet").num_rows for n in (1, 2)] == [2, 3]
    assert json.loads((folder / "_dbt_openmirror.json").read_text())["lastSequenceNumber"] == 2
    assert json.loads((folder / "_metadata.json").read_text()) == {"keyColumns": ["id"]}
    assert (dfs.root / "ws/item/Files/LandingZone/_partnerEvents.json").exists()
    assert not (dfs.root / "ws/item/Files/LandingZone" / STAGED).exists()
    # File 1 was renamed once; file 2 failed 3 times (attempts), then went through once.
    renames = [r for r in dfs.recorded("rename") if r.path.endswith(".parquet")]
    assert [r.path.rsplit("/", 1)[1][:20].lstrip("0") for r in renames] == ["1", "2", "2", "2", "2"]
    assert all(r.header("If-None-Match") == "*" for r in renames)

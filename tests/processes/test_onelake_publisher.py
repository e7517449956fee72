"""The publisher on a OneLake landing zone (the DFS stand-in): a publish journaled, interrupted by
a service that keeps failing, and finished by the next run, with numbers continuous and each file
renamed into place exactly once; a final name beside a staged file is never taken for ours; a
writer that lost its lease writes nothing."""

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dbt.adapters.openmirror.errors import LandingZoneAccessError, LandingZoneServiceError, LeaseHeldError, PublishError
from dbt.adapters.openmirror.publishing.lease import LeaseManager, lease_folder
from dbt.adapters.openmirror.publishing.publisher import Publisher, TableFolderState
from dbt.adapters.openmirror.rules.markers import INSERT
from dbt.adapters.openmirror.storage.location import parse_location
from dbt.adapters.openmirror.storage.onelake import OneLakeStorage
from dbt.adapters.openmirror.storage.retry import RetrySettings
from tests.support.dfs_emulator import DfsEmulator, FixedTokenCredential

TABLE = "s.schema/t"
STAGED = "_scratchPad/dbt-openmirror/run-1"


@pytest.fixture
def onelake(tmp_path, monkeypatch):
    with DfsEmulator(tmp_path / "onelake", filesystems=["ws"]) as dfs:
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", dfs.ca_path)
        storage = OneLakeStorage(
            parse_location(f"{dfs.url}/ws/item/Files/LandingZone"),
            FixedTokenCredential(),
            retry=RetrySettings(attempts=3, backoff_seconds=0.05),
        )
        yield dfs, storage


def journaled_first_load(storage, tmp_path, *row_counts):
    """Parts of `row_counts` rows uploaded to the staged folder, and their publish journaled
    under run-1's lease."""
    for index, rows in enumerate(row_counts):
        local = tmp_path / f"part-{index}.parquet"
        pq.write_table(pa.table({"id": list(range(rows)), "__rowMarker__": pa.array([0] * rows, pa.int32())}), local)
        storage.upload_file(local, f"{STAGED}/part-{index:05d}.parquet")
    publisher = Publisher(storage)
    state = TableFolderState(False, None, 0)
    pending = publisher.prepare(TABLE, ["id"], STAGED, state, {INSERT: sum(row_counts)}, "m", "run-1", True, False)
    leases = LeaseManager(storage)
    fence = leases.fence(leases.acquire(TABLE, "run-1", "m", ttl_seconds=60, wait_seconds=0))
    publisher.begin(pending, fence)
    return publisher, pending, fence


@pytest.mark.parametrize("status, cause", [(401, "rejected the token"), (403, "not allowed to do this")])
def test_a_staged_file_the_service_will_not_read_is_named_by_the_cause(onelake, tmp_path, status, cause):
    """Not 'not readable Parquet': the file may be fine, the token is not."""
    dfs, storage = onelake
    local = tmp_path / "part.parquet"
    pq.write_table(pa.table({"id": [1], "__rowMarker__": pa.array([0], pa.int32())}), local)
    storage.upload_file(local, f"{STAGED}/part-00000.parquet")
    dfs.inject(status=status, times=5, operation="read")
    with pytest.raises(LandingZoneAccessError) as failure:
        Publisher(storage).prepare(
            TABLE, ["id"], STAGED, TableFolderState(False, None, 0), {INSERT: 1}, "m", "r", True, False
        )
    assert cause in failure.value.msg and "not readable Parquet" not in failure.value.msg


def test_an_interrupted_publish_is_finished_by_the_next_run(onelake, tmp_path):
    dfs, storage = onelake
    publisher, pending, fence = journaled_first_load(storage, tmp_path, 2, 3)
    # The service fails the second file's rename on every attempt: the run stops there.
    dfs.inject(
        status=500,
        times=100,
        operation="rename",
        path="/ws/item/Files/LandingZone/s.schema/t/00000000000000000002.parquet",
    )
    with pytest.raises(LandingZoneServiceError, match="HTTP 500"):
        publisher.complete(pending, fence)
    dfs.faults.clear()
    state = Publisher(storage).table_state(TABLE)
    assert state.pending == pending and state.folder_conflict is None

    Publisher(storage).complete(state.pending, fence)
    Publisher(storage).commit(state.pending, fence)
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


def test_a_final_name_beside_a_staged_file_is_never_taken_for_ours(onelake, tmp_path):
    """Renames on OneLake are atomic moves: a final name present while the staged file is still
    there is another writer's, even with the same bytes."""
    dfs, storage = onelake
    publisher, pending, fence = journaled_first_load(storage, tmp_path, 2)
    storage.upload_file(tmp_path / "part-0.parquet", f"{TABLE}/00000000000000000001.parquet")  # same bytes
    with pytest.raises(PublishError, match="is not the staged .* another writer used this number"):
        publisher.complete(pending, fence)
    landing_zone = dfs.root / "ws/item/Files/LandingZone"
    assert (landing_zone / STAGED / "part-00000.parquet").exists()


def test_a_writer_that_lost_its_lease_cannot_roll_the_journal_back(onelake, tmp_path):
    dfs, storage = onelake
    publisher, pending, stale = journaled_first_load(storage, tmp_path, 2, 3)
    publisher.complete(pending, stale)  # both files in place; then the run stalled
    landing_zone = dfs.root / "ws/item/Files/LandingZone"
    for lease_file in (landing_zone / lease_folder(TABLE)).iterdir():  # the storage's time moves on
        written = lease_file.stat().st_mtime - 61
        os.utime(lease_file, (written, written))
    leases = LeaseManager(storage)
    taker = leases.fence(leases.acquire(TABLE, "run-2", "m", ttl_seconds=60, wait_seconds=0))
    recovered = Publisher(storage).table_state(TABLE).pending
    Publisher(storage).commit(recovered, taker)  # the run that took over finishes the publish
    journal = (landing_zone / TABLE / "_dbt_openmirror.json").read_text()
    dfs.clear_records()
    with pytest.raises(LeaseHeldError, match="run run-1 lost its lease on s.schema/t"):
        publisher.commit(pending, stale)
    assert (landing_zone / TABLE / "_dbt_openmirror.json").read_text() == journal
    assert json.loads(journal)["leaseGeneration"] == taker.generation == 2
    assert [r for r in dfs.recorded() if r.method in ("PUT", "PATCH", "DELETE")] == []

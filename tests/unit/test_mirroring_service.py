"""The restart protocol's waits: the publisher reads the service's Files/Monitoring/tables.json
beside the landing zone and waits until a rebuilt table is gone from it before recreating the
folder, and until it is listed again before publishing incremental files."""

import json
from functools import partial

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dbt.adapters.openmirror.errors import ServiceWaitError
from dbt.adapters.openmirror.publishing.lease import LeaseManager
from dbt.adapters.openmirror.publishing.mirroring_service import MirroringService
from dbt.adapters.openmirror.publishing.publisher import Publisher
from dbt.adapters.openmirror.rules.landing_zone import scratch_path
from dbt.adapters.openmirror.rules.markers import UPDATE
from dbt.adapters.openmirror.storage import LocalStorage
from tests.support.mirror import tree_digest

TABLE = "sales.schema/orders"


class FakeTime:
    """A clock that the waits' sleeps advance; `on_sleep` plays the service meanwhile."""

    def __init__(self, on_sleep=lambda now: None):
        self.now = 0.0
        self.slept = []
        self.on_sleep = on_sleep

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds
        self.on_sleep(self.now)


@pytest.fixture
def item(tmp_path):
    """A mirrored database item's Files folder: LandingZone and the service's Monitoring."""
    (tmp_path / "Files" / "LandingZone").mkdir(parents=True)
    (tmp_path / "Files" / "Monitoring").mkdir()
    return tmp_path / "Files"


def service_lists(item, *tables):
    entries = [
        {"sourceSchemaName": schema, "sourceTableName": table, "status": "Replicating"} for schema, table in tables
    ]
    (item / "Monitoring" / "tables.json").write_text(json.dumps({"tables": entries}))


def service(item, time, log=None):
    return MirroringService(LocalStorage(item / "LandingZone"), (log or []).append, time.clock, time.sleep)


def test_lists_reads_the_table_by_schema_folder_and_default_schema(item):
    view = service(item, FakeTime())
    assert view.lists(TABLE) is None  # no tables.json: nothing to tell
    service_lists(item, ("sales", "orders"), ("", "customers"))
    assert view.lists(TABLE) is True
    assert view.lists("customers") is True  # no schema folder: the default schema
    assert view.lists("Sales.schema/ORDERS") is True  # the service's names are not case-sensitive
    assert view.lists("sales.schema/customers") is False


def test_waiting_until_the_service_drops_a_deleted_table(item):
    service_lists(item, ("sales", "orders"))
    time = FakeTime(on_sleep=lambda now: now >= 5 and service_lists(item))
    service(item, time).wait_until_dropped(TABLE, timeout_seconds=600, model="orders")
    assert 5 <= time.now < 10 and time.slept[0] == 1


def test_a_wait_past_its_bound_names_the_table_what_it_waited_for_and_what_to_check(item):
    service_lists(item, ("sales", "orders"))
    time = FakeTime()
    with pytest.raises(ServiceWaitError) as failed:
        service(item, time).wait_until_dropped(TABLE, timeout_seconds=120, model="orders")
    message = str(failed.value)
    assert "Model 'orders'" in message and "sales.orders" in message and "120" in message
    assert "still lists" in message and "rebuild_wait_seconds" in message and "tables.json" in message
    # A first load meets this too (a folder deleted before the run): the message must not say this run deleted it.
    assert "a full load starts only once the service has dropped the table" in message
    assert 120 <= time.now <= 135  # the pauses grow, but never far past the bound
    service_lists(item)
    time = FakeTime()
    with pytest.raises(ServiceWaitError, match="has not listed table sales.orders again"):
        service(item, time).wait_until_listed(TABLE, timeout_seconds=30, model="orders")


def test_without_a_readable_status_it_says_so_once_and_goes_on(tmp_path):
    log, time = [], FakeTime()
    view = MirroringService(LocalStorage(tmp_path), log.append, time.clock, time.sleep)
    view.wait_until_dropped(TABLE, timeout_seconds=600, model="orders")
    view.wait_until_listed(TABLE, timeout_seconds=600, model="orders")
    assert time.now == 0 and len(log) == 1 and "no mirroring status" in log[0]


def test_a_status_file_caught_half_written_is_read_again(item):
    (item / "Monitoring" / "tables.json").write_text('{"tables": [')
    time = FakeTime(on_sleep=lambda now: service_lists(item, ("sales", "orders")))
    service(item, time).wait_until_listed(TABLE, timeout_seconds=60, model="orders")
    assert time.now == 1


def test_a_status_file_that_stays_unreadable_is_named_when_the_wait_ends(item):
    (item / "Monitoring" / "tables.json").write_text('{"tables": [')
    with pytest.raises(ServiceWaitError, match="tables.json could not be read") as failed:
        service(item, FakeTime()).wait_until_dropped(TABLE, timeout_seconds=5, model="orders")
    assert "still lists table sales.orders, whose" not in str(failed.value)


def _missing_once(item):
    """The service's tables.json is not found at the second look (a read that lost the race with
    its replacement, or a listing not caught up), and is back at the third."""
    looks = []

    def on_sleep(now):
        looks.append(now)
        path = item / "Monitoring" / "tables.json"
        if len(looks) == 1:
            path.rename(path.with_suffix(".away"))
        elif len(looks) == 2:
            path.with_suffix(".away").rename(path)

    return on_sleep


@pytest.mark.parametrize("listed", [False, True])
def test_a_status_file_missing_once_during_a_wait_is_looked_for_again(item, listed):
    """Read once in this wait, tables.json is the service's: its absence says nothing, and the
    wait goes on to its bound."""
    service_lists(item, *([] if listed else [("sales", "orders")]))
    log, time = [], FakeTime(on_sleep=_missing_once(item))
    view = service(item, time, log)
    with pytest.raises(ServiceWaitError, match="waited 10 s"):
        (view.wait_until_listed if listed else view.wait_until_dropped)(TABLE, timeout_seconds=10, model="orders")
    assert time.now >= 10 and not any("no mirroring status" in line for line in log)


@pytest.mark.parametrize("listed", [False, True])
def test_a_status_file_missing_beside_the_replicators_is_not_taken_for_no_service(item, listed):
    """The service writes replicator.json beside tables.json: one without the other is a file
    being replaced, so the wait goes on."""
    (item / "Monitoring" / "replicator.json").write_text(json.dumps({"status": "Running"}))
    log = []
    with pytest.raises(ServiceWaitError, match=r"tables.json could not be read \(tables.json is missing"):
        wait = (
            service(item, FakeTime(), log).wait_until_listed
            if listed
            else service(item, FakeTime(), log).wait_until_dropped
        )
        wait(TABLE, timeout_seconds=5, model="orders")
    assert not any("no mirroring status" in line for line in log)
    service_lists(item, *([("sales", "orders")] if listed else []))
    time = FakeTime()
    (service(item, time).wait_until_listed if listed else service(item, time).wait_until_dropped)(
        TABLE, timeout_seconds=5, model="orders"
    )
    assert time.now == 0


@pytest.mark.parametrize(
    "document",
    [{"tables": [{"sourceTableName": ["x"]}]}, {"tables": [{"sourceSchemaName": 5, "sourceTableName": "t"}]}],
)
def test_entries_that_name_no_table_are_skipped(item, document):
    (item / "Monitoring" / "tables.json").write_text(json.dumps(document))
    assert service(item, FakeTime()).lists(TABLE) is False


@pytest.mark.parametrize("content", [b'{"tables": 7}', b'{"tables": [{"sourceTableName": "caf\xc3'])
def test_a_status_file_that_is_not_the_services_document_yet_is_read_again(item, content):
    """Not a list of tables, or cut inside a character while rewritten: nothing can be told, so a
    rebuild looks again rather than take the table for dropped."""
    (item / "Monitoring" / "tables.json").write_bytes(content)
    time = FakeTime(on_sleep=lambda now: service_lists(item))
    service(item, time).wait_until_dropped(TABLE, timeout_seconds=60, model="orders")
    assert time.now == 1


def stage(storage, run_id, rows, marked):
    folder = storage.root / scratch_path(run_id)
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.table({"id": list(range(rows))})
    if marked:
        table = table.append_column("__rowMarker__", pa.array([1] * rows, pa.int32()))
    pq.write_table(table, folder / "part-00000-x.snappy.parquet")


def publish_rows(publisher, rows, rebuild, full_load):
    """A run of `rows` rows published into TABLE under its lease, as the publish sequence does."""
    storage, run_id = publisher.storage, f"run-{rows}"
    stage(storage, run_id, rows, marked=not full_load)
    state = publisher.table_state(TABLE)
    pending = publisher.prepare(
        TABLE, ["id"], scratch_path(run_id), state, {UPDATE: rows}, "orders", run_id, full_load, rebuild
    )
    leases = LeaseManager(storage)
    lease = leases.acquire(TABLE, run_id, "orders", ttl_seconds=600, wait_seconds=0)
    fence = leases.fence(lease)
    try:
        publisher.begin(pending, fence, service_wait_seconds=60)
        publisher.complete(pending, fence)
        publisher.commit(pending, fence)
    finally:
        leases.release(lease)


def test_a_rebuild_recreates_the_folder_only_after_the_service_dropped_the_table(item):
    """Delete the folder -> wait until the service no longer lists the table -> recreate it with
    _metadata.json and the full load -> incremental files only once the table is listed again."""
    storage = LocalStorage(item / "LandingZone")
    seen = []

    def the_service(now):
        seen.append((now, (storage.root / TABLE).exists()))
        if now >= 3:
            service_lists(item)  # the service noticed the deletion and dropped the table

    time = FakeTime(the_service)
    publisher = Publisher(storage, MirroringService(storage, [].append, time.clock, time.sleep))

    publish = partial(publish_rows, publisher)

    publish(2, rebuild=False, full_load=True)
    service_lists(item, ("sales", "orders"))
    publish(3, rebuild=True, full_load=True)
    assert seen and all(not exists for _, exists in seen)  # never recreated while still listed
    assert sorted(p.name for p in (storage.root / TABLE).glob("*.parquet")) == ["00000000000000000001.parquet"]

    # The service has not listed the rebuilt table yet: the incremental file waits, and a run
    # that gives up publishes nothing.
    time.on_sleep = lambda now: None
    with pytest.raises(ServiceWaitError, match="has not listed table sales.orders again"):
        publish(1, rebuild=False, full_load=False)
    assert sorted(p.name for p in (storage.root / TABLE).glob("*.parquet")) == ["00000000000000000001.parquet"]
    # Once listed, the next run publishes it (and later ones do not wait again).
    time.on_sleep = lambda now: service_lists(item, ("sales", "orders"))
    publish(1, rebuild=False, full_load=False)
    waited = len(time.slept)
    service_lists(item)  # even if the table were gone now, the table was seen listed since the rebuild
    publish(4, rebuild=False, full_load=False)
    assert len(time.slept) == waited
    assert sorted(p.name for p in (storage.root / TABLE).glob("*.parquet"))[-1] == "00000000000000000003.parquet"


def test_a_stopped_replication_fails_at_once_saying_what_to_start(item):
    """A mirror that stopped (replicator.json: Stopped) never drops the table: no wait."""
    service_lists(item, ("sales", "orders"))
    (item / "Monitoring" / "replicator.json").write_text('{"status": "Stopped"}')
    time = FakeTime()
    with pytest.raises(ServiceWaitError, match="replication is Stopped") as failed:
        service(item, time).wait_until_dropped(TABLE, timeout_seconds=600, model="orders")
    assert time.now == 0 and "replay --watch" in str(failed.value)
    (item / "Monitoring" / "replicator.json").write_text('{"status": "Running"}')
    time = FakeTime(on_sleep=lambda now: service_lists(item))
    service(item, time).wait_until_dropped(TABLE, timeout_seconds=600, model="orders")
    # Stopped, but nothing to wait for: the table is listed already, or was never listed.
    (item / "Monitoring" / "replicator.json").write_text('{"status": "Stopped"}')
    service(item, FakeTime()).wait_until_dropped(TABLE, timeout_seconds=600, model="orders")
    service_lists(item, ("sales", "orders"))
    service(item, FakeTime()).wait_until_listed(TABLE, timeout_seconds=600, model="orders")


def test_a_rebuild_while_replication_is_stopped_leaves_the_table_folder_as_it_was(item):
    # The folder was deleted first and the run failed after: the table was gone until the next run.
    storage = LocalStorage(item / "LandingZone")
    time = FakeTime()
    publisher = Publisher(storage, MirroringService(storage, [].append, time.clock, time.sleep))

    publish_rows(publisher, 2, rebuild=False, full_load=True)
    service_lists(item, ("sales", "orders"))
    (item / "Monitoring" / "replicator.json").write_text('{"status": "Stopped"}')
    before = tree_digest(storage.root / TABLE)
    with pytest.raises(ServiceWaitError, match="replication is Stopped"):
        publish_rows(publisher, 3, rebuild=True, full_load=True)
    assert tree_digest(storage.root / TABLE) == before and time.now == 0

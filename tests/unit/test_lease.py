"""The per-table lease on a real local landing zone, with a controllable clock."""

import os
import subprocess
import sys

import pytest

from dbt.adapters.openmirror.errors import LeaseHeldError
from dbt.adapters.openmirror.lease import LEASE_FOLDER, LeaseManager
from dbt.adapters.openmirror.storage import LocalStorage

TABLE = "s.schema/t"


class Clock:
    def __init__(self):
        self.now = 1_000_000.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


@pytest.fixture(autouse=True)
def no_runs_in_this_process(monkeypatch):
    from dbt.adapters.openmirror import lease as lease_module

    monkeypatch.setattr(lease_module, "_ACTIVE_RUNS", {})


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def manager(tmp_path, clock):
    return LeaseManager(LocalStorage(tmp_path), clock=clock, sleep=clock.sleep)


def generations(tmp_path):
    return sorted(p.name for p in (tmp_path / LEASE_FOLDER / TABLE).iterdir())


def test_a_live_lease_refuses_a_second_run_and_names_the_holder(manager, tmp_path):
    manager.acquire(TABLE, "run-1", "orders", ttl_seconds=60, wait_seconds=0)
    with pytest.raises(LeaseHeldError) as error:
        manager.acquire(TABLE, "run-2", "orders", ttl_seconds=60, wait_seconds=0)
    message = str(error.value)
    assert "table s.schema/t is being published by run run-1" in message
    assert f"pid {os.getpid()}" in message and "Nothing was published" in message
    assert generations(tmp_path) == ["000000000001.json"]


def test_release_leaves_no_file_and_lets_the_next_run_in(manager, tmp_path):
    first = manager.acquire(TABLE, "run-1", "orders", 60, 0)
    manager.release(first)
    assert generations(tmp_path) == []
    second = manager.acquire(TABLE, "run-2", "orders", 60, 0)
    assert second.taken_from is None


def test_taking_over_removes_the_stale_generation(manager, tmp_path, clock):
    manager.acquire(TABLE, "run-1", "orders", 60, 0)
    clock.now += 61
    assert manager.acquire(TABLE, "run-2", "orders", 60, 0).generation == 2
    assert generations(tmp_path) == ["000000000002.json"]


def test_releasing_a_lease_someone_else_took_over_leaves_theirs(manager, tmp_path, clock):
    first = manager.acquire(TABLE, "run-1", "orders", 60, 0)
    clock.now += 61
    manager.acquire(TABLE, "run-2", "orders", 60, 0)
    manager.release(first)
    assert generations(tmp_path) == ["000000000002.json"]


def test_waiting_ends_when_the_holder_expires(manager, clock):
    manager.acquire(TABLE, "run-1", "orders", ttl_seconds=30, wait_seconds=0)
    started = clock.now
    lease = manager.acquire(TABLE, "run-2", "orders", ttl_seconds=30, wait_seconds=120)
    assert 30 <= clock.now - started < 32
    assert lease.taken_from.run_id == "run-1"


def test_waiting_gives_up_at_its_limit(manager, clock):
    manager.acquire(TABLE, "run-1", "orders", ttl_seconds=300, wait_seconds=0)
    with pytest.raises(LeaseHeldError):
        manager.acquire(TABLE, "run-2", "orders", ttl_seconds=300, wait_seconds=5)


def test_renewal_keeps_the_lease_and_a_taken_over_holder_finds_out(manager, clock):
    first = manager.acquire(TABLE, "run-1", "orders", ttl_seconds=30, wait_seconds=0)
    clock.now += 20
    manager.renew(first, 30)
    clock.now += 20
    manager.check_held(first)  # renewed: still valid 40 s after taking it
    clock.now += 31
    with pytest.raises(LeaseHeldError, match="expired before publishing"):
        manager.check_held(first)
    manager.acquire(TABLE, "run-2", "orders", 30, 0)
    with pytest.raises(LeaseHeldError, match="lost the lease on s.schema/t to run run-2"):
        manager.check_held(first)


def test_a_dead_process_on_this_host_is_taken_over_at_once(manager, tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    held = manager.acquire(TABLE, "run-1", "orders", ttl_seconds=3600, wait_seconds=0)
    path = tmp_path / held.path
    path.write_text(path.read_text().replace(f'"pid": {os.getpid()}', f'"pid": {dead.stdout.strip()}'))
    lease = manager.acquire(TABLE, "run-2", "orders", 3600, 0)
    assert lease.taken_from.run_id == "run-1"


def test_a_lease_left_by_an_earlier_run_of_this_process_is_stale(manager):
    from dbt.adapters.openmirror import lease as lease_module

    first = manager.acquire(TABLE, "run-1", "orders", 3600, 0)
    lease_module._ACTIVE_RUNS.pop(first.holder.run_id)  # that run ended without releasing
    assert manager.acquire(TABLE, "run-2", "orders", 3600, 0).taken_from.run_id == "run-1"


def test_another_hosts_live_lease_is_respected_until_it_expires(manager, tmp_path, clock):
    held = manager.acquire(TABLE, "run-1", "orders", ttl_seconds=60, wait_seconds=0)
    path = tmp_path / held.path
    path.write_text(path.read_text().replace(manager.host, "other-host"))
    with pytest.raises(LeaseHeldError, match="host other-host"):
        manager.acquire(TABLE, "run-2", "orders", 60, 0)
    clock.now += 61
    assert manager.acquire(TABLE, "run-2", "orders", 60, 0).generation == 2

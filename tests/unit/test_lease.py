"""The per-table lease on a real local landing zone (tests/support/leases.py says how time passes)."""

import dataclasses
import json
import os
import sys
import time

import pytest

from dbt.adapters.openmirror.errors import LeaseHeldError, PublishError
from dbt.adapters.openmirror.publishing.lease import (
    LEASE_FOLDER,
    LeaseHolder,
    LeaseManager,
    ProcessIdentity,
    lease_folder,
)
from dbt.adapters.openmirror.storage import LocalStorage
from tests.support.leases import TABLE, age, generations, lease_file

pytestmark = pytest.mark.usefixtures("no_runs_in_this_process")


def test_a_live_lease_refuses_a_second_run_and_names_the_holder(manager, tmp_path):
    manager.acquire(TABLE, "run-1", "orders", ttl_seconds=60, wait_seconds=0)
    with pytest.raises(LeaseHeldError) as error:
        manager.acquire(TABLE, "run-2", "orders", ttl_seconds=60, wait_seconds=0)
    message = str(error.value)
    assert "table s.schema/t is being published by run run-1" in message
    assert f"pid {os.getpid()}" in message and "lease until" in message and "Nothing was published" in message
    assert generations(tmp_path) == ["000000000001.json"]


@pytest.mark.parametrize(
    "first, second",
    [
        ("s.schema/Items", "s.schema/items"),
        ("S.schema/t", "s.schema/t"),
        ("dbo.schema/t", "t"),
        ("t\u00e9", "te\u0301"),
    ],
)
def test_folders_the_mirror_takes_for_one_table_share_one_lease(manager, first, second):
    """Two models publishing `Items` and `items` at once would each find the other's folder still
    empty and both publish into one table of the mirror: they take one lease. So do a root folder
    and `dbo.schema`'s, and two Unicode forms of a name."""
    manager.acquire(first, "run-1", "orders", ttl_seconds=60, wait_seconds=0)
    with pytest.raises(LeaseHeldError) as held:
        manager.acquire(second, "run-2", "customers", ttl_seconds=60, wait_seconds=0)
    assert f"table {second} is being published by run run-1" in str(held.value)
    assert f"publishing {first}, which the mirror takes for the same table" in str(held.value)


def test_a_stale_holder_of_another_spelling_keeps_its_staged_files(manager, tmp_path, clock):
    """Its own folder's next run finishes its publish from them; a run of this folder taking the
    lease over discards only what a holder of this folder (or of an earlier version) left."""
    manager.acquire("s.schema/Items", "run-1", "orders", ttl_seconds=60, wait_seconds=0)
    age(tmp_path, 120, "s.schema/Items")
    other = manager.acquire("s.schema/items", "run-2", "customers", ttl_seconds=60, wait_seconds=0)
    assert other.taken_from.run_id == "run-1" and other.stale_staging() is None
    assert "publishing s.schema/Items, which the mirror takes for the same table" in other.takeover_notice()
    age(tmp_path, 120, "s.schema/items")
    same = manager.acquire("s.schema/items", "run-3", "customers", ttl_seconds=60, wait_seconds=0)
    assert same.stale_staging() == "run-2"


@pytest.mark.parametrize("folder", ["Sales.schema/Orders", "orders"])
def test_a_live_lease_of_an_earlier_version_is_honoured(manager, tmp_path, folder):
    """Earlier versions kept a lease at the table folder's own path; one still live is waited for."""
    holder = LeaseHolder("run-1", "orders", ProcessIdentity("elsewhere", 1, "t"), time.time(), 300)
    written = tmp_path / LEASE_FOLDER / folder / "000000000001.json"
    written.parent.mkdir(parents=True)
    earlier = {key: value for key, value in json.loads(holder.to_json()).items() if key != "tableFolder"}
    written.write_text(json.dumps(earlier))
    with pytest.raises(LeaseHeldError, match="is being published by run run-1"):
        manager.acquire(folder, "run-2", "orders", ttl_seconds=60, wait_seconds=0)
    written.write_text(dataclasses.replace(holder, released=True).to_json())
    assert manager.acquire(folder, "run-2", "orders", ttl_seconds=60, wait_seconds=0).taken_from is None


def test_a_name_case_folding_lengthens_still_makes_a_lease_folder(manager, tmp_path):
    folder = "s.schema/" + "\u0390" * 120  # 240 bytes; 720 once case-folded
    assert all(len(part.encode()) <= 255 for part in lease_folder(folder).split("/"))
    assert manager.acquire(folder, "run-1", "orders", ttl_seconds=60, wait_seconds=0).generation == 1


def test_release_marks_the_lease_released_and_lets_the_next_run_in(manager, tmp_path):
    (tmp_path / TABLE).mkdir(parents=True)
    first = manager.acquire(TABLE, "run-1", "orders", 60, 0)
    journal(tmp_path, first.generation)  # the run wrote the table's journal under its lease
    manager.release(first)
    assert json.loads(lease_file(tmp_path, first).read_text())["released"] is True
    second = manager.acquire(TABLE, "run-2", "orders", 60, 0)
    assert second.taken_from is None
    # Generations only grow past what the journal saw, so they fence every writer before them.
    assert second.generation == 2
    journal(tmp_path, second.generation)
    manager.release(second)
    assert generations(tmp_path) == ["000000000002.json"]


def test_a_run_that_wrote_nothing_leaves_the_leases_as_it_found_them(manager, tmp_path):
    """A run that fails on bad input leaves the landing zone byte for byte as it was."""
    (tmp_path / TABLE).mkdir(parents=True)
    first = manager.acquire(TABLE, "run-1", "orders", 60, 0)
    journal(tmp_path, first.generation)
    manager.release(first)
    before = lease_file(tmp_path, first).read_bytes()
    failed = manager.acquire(TABLE, "run-2", "orders", 60, 0)
    manager.release(failed)  # it never wrote the journal
    assert generations(tmp_path) == ["000000000001.json"]
    assert lease_file(tmp_path, first).read_bytes() == before
    # Its generation was never shown to the journal, so the next run may take it again.
    assert manager.acquire(TABLE, "run-3", "orders", 60, 0).generation == 2


def journal(landing_zone, generation):
    (landing_zone / TABLE / "_dbt_openmirror.json").write_text(
        json.dumps({"lastSequenceNumber": 1, "keyColumns": ["id"], "model": "orders", "leaseGeneration": generation})
    )


def test_a_new_lease_is_numbered_above_the_generation_the_journal_was_written_under(manager, tmp_path):
    (tmp_path / TABLE).mkdir(parents=True)
    (tmp_path / TABLE / "_dbt_openmirror.json").write_text(
        json.dumps({"lastSequenceNumber": 3, "keyColumns": ["id"], "model": "orders", "leaseGeneration": 7})
    )
    # The lease folder was cleaned up by hand: the journal still knows the generation.
    assert manager.acquire(TABLE, "run-1", "orders", 60, 0).generation == 8


def test_taking_over_an_expired_lease_removes_the_stale_generation(manager, tmp_path):
    manager.acquire(TABLE, "run-1", "orders", 60, 0)
    age(tmp_path, 61)
    lease = manager.acquire(TABLE, "run-2", "orders", 60, 0)
    assert (lease.generation, lease.taken_from.run_id) == (2, "run-1")
    assert generations(tmp_path) == ["000000000002.json"]


@pytest.mark.parametrize("run_id", ["leases", "manifest", "../x", 7])
def test_an_expired_lease_whose_run_id_is_no_run_id_is_damaged(manager, tmp_path, run_id):
    """Taking a lease over discards the holder's staged folder, which its run id names."""
    lease = manager.acquire(TABLE, "run-1", "orders", 60, 0)
    path = lease_file(tmp_path, lease)
    path.write_text(json.dumps({**json.loads(path.read_text()), "runId": run_id}))
    age(tmp_path, 61)
    with pytest.raises(PublishError, match="is damaged .*not a run id"):
        manager.acquire(TABLE, "run-2", "orders", 60, 0)
    assert generations(tmp_path) == ["000000000001.json"]


def test_expiry_is_judged_by_the_storages_clock_not_the_hosts(tmp_path):
    storage = LocalStorage(tmp_path)
    LeaseManager(storage).acquire(TABLE, "run-1", "orders", ttl_seconds=60, wait_seconds=0)
    # A host whose clock runs 200 s ahead, or 200 s behind, sees the same live lease.
    for offset in (200, -200):
        contender = LeaseManager(storage, clock=lambda offset=offset: time.time() + offset)
        with pytest.raises(LeaseHeldError, match="is being published by run run-1"):
            contender.acquire(TABLE, "run-2", "orders", ttl_seconds=60, wait_seconds=0)
    age(tmp_path, 61)
    behind = LeaseManager(storage, clock=lambda: time.time() - 200)
    assert behind.acquire(TABLE, "run-2", "orders", 60, 0).taken_from.run_id == "run-1"


def test_releasing_a_lease_someone_else_took_over_leaves_theirs(manager, tmp_path):
    first = manager.acquire(TABLE, "run-1", "orders", 60, 0)
    age(tmp_path, 61)
    second = manager.acquire(TABLE, "run-2", "orders", 60, 0)
    manager.release(first)
    assert generations(tmp_path) == ["000000000002.json"]
    assert json.loads(lease_file(tmp_path, second).read_text())["runId"] == "run-2"


def test_waiting_ends_when_the_holder_expires(manager, clock):
    manager.acquire(TABLE, "run-1", "orders", ttl_seconds=30, wait_seconds=0)
    started = clock.now
    lease = manager.acquire(TABLE, "run-2", "orders", ttl_seconds=30, wait_seconds=120)
    assert 30 <= clock.now - started < 32
    assert lease.taken_from.run_id == "run-1"


def test_waiting_gives_up_at_its_limit(manager):
    manager.acquire(TABLE, "run-1", "orders", ttl_seconds=300, wait_seconds=0)
    with pytest.raises(LeaseHeldError):
        manager.acquire(TABLE, "run-2", "orders", ttl_seconds=300, wait_seconds=5)


def test_renewal_keeps_the_lease_and_a_holder_that_lost_it_finds_out(manager, clock, tmp_path):
    first = manager.acquire(TABLE, "run-1", "orders", ttl_seconds=30, wait_seconds=0)
    clock.now += 20
    manager.renew(first)
    clock.now += 20
    manager.check_held(first)  # renewed: still valid 40 s after taking it
    clock.now += 10
    with pytest.raises(LeaseHeldError, match="run run-1 lost its lease on s.schema/t .*not renewed"):
        manager.check_held(first)  # stalled: by its own clock no contender is kept out any more
    age(tmp_path, 31)
    manager.acquire(TABLE, "run-2", "orders", 30, 0)
    with pytest.raises(LeaseHeldError, match="run run-1 lost its lease on s.schema/t .*run run-2"):
        manager.check_held(first)
    with pytest.raises(LeaseHeldError, match="run run-1 lost its lease"):
        manager.renew(first)  # its file is gone: a renewal does not bring it back
    assert generations(tmp_path) == ["000000000002.json"]


def test_without_proc_no_process_is_signalled_and_only_expiry_counts(tmp_path, monkeypatch):
    """Windows: os.kill(pid, 0) would terminate the process, so there is no same-host shortcut."""
    monkeypatch.setattr(sys, "platform", "win32")
    identity = ProcessIdentity.of_this_process()
    assert (identity.boot_id, identity.pid_namespace) == (None, None)

    def kill(pid, signal):
        raise AssertionError(f"os.kill({pid}, {signal}) called")

    monkeypatch.setattr(os, "kill", kill)
    storage = LocalStorage(tmp_path)
    holder = LeaseManager(storage, identity=ProcessIdentity("h", 4_000_000, "holder's token"))
    holder.acquire(TABLE, "run-1", "orders", ttl_seconds=60, wait_seconds=0)
    contender = LeaseManager(storage, identity=ProcessIdentity("h", 4_000_001, "contender's token"))
    with pytest.raises(LeaseHeldError):
        contender.acquire(TABLE, "run-2", "orders", 60, 0)
    age(tmp_path, 61)
    assert contender.acquire(TABLE, "run-2", "orders", 60, 0).taken_from.run_id == "run-1"


def test_on_windows_a_holder_on_this_machine_is_never_signalled(tmp_path, monkeypatch):
    """Even a lease naming this machine's boot and PID namespace, and a pid that does not exist,
    is only ever judged by expiry on Windows: os.kill(pid, 0) would terminate a live holder."""
    here = ProcessIdentity.of_this_process()
    if here.boot_id is None:
        pytest.skip("no /proc here: no holder can name this machine's boot")
    holder = ProcessIdentity(here.host, 4_000_000, "holder's token", here.boot_id, here.pid_namespace)
    storage = LocalStorage(tmp_path)
    LeaseManager(storage, identity=holder).acquire(TABLE, "run-1", "orders", ttl_seconds=60, wait_seconds=0)

    def kill(pid, signal):
        raise AssertionError(f"os.kill({pid}, {signal}) called")

    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(os, "kill", kill)
    contender = LeaseManager(storage)
    with pytest.raises(LeaseHeldError):
        contender.acquire(TABLE, "run-2", "orders", 60, 0)
    age(tmp_path, 61)
    assert contender.acquire(TABLE, "run-2", "orders", 60, 0).taken_from.run_id == "run-1"


def test_a_lease_left_by_an_earlier_run_of_this_process_is_stale(manager):
    from dbt.adapters.openmirror.publishing import lease as lease_module

    first = manager.acquire(TABLE, "run-1", "orders", 3600, 0)
    lease_module._ACTIVE_RUNS.pop(first.holder.run_id)  # that run ended without releasing
    lease = manager.acquire(TABLE, "run-2", "orders", 3600, 0)
    assert lease.taken_from.run_id == "run-1"
    assert lease.takeover_notice().endswith("an earlier run of this process that ended without releasing it")


def test_a_lease_whose_taking_failed_half_way_is_stale_for_the_next_run_of_this_process(tmp_path):
    from tests.support.faults import (
        FaultInjectingStorage,
        FaultInjector,
        InjectedFault,
    )

    storage = LocalStorage(tmp_path)
    held = LeaseManager(storage).acquire(TABLE, "run-1", "orders", 3600, 0)
    # A run of this process that ended without releasing: stale at once, no clock needed.
    path = lease_file(tmp_path, held)
    path.write_text(path.read_text().replace('"run-1"', '"run-0"'))
    # The next lease is written (operation 1), then removing the stale one fails (operation 2).
    failing = LeaseManager(FaultInjectingStorage(storage, FaultInjector(2)))
    with pytest.raises(InjectedFault):
        failing.acquire(TABLE, "run-2", "orders", 3600, 0)
    assert LeaseManager(storage).acquire(TABLE, "run-3", "orders", 3600, 0).taken_from.run_id == "run-2"
    assert generations(tmp_path) == ["000000000003.json"]


def test_another_hosts_live_lease_is_respected_until_it_expires(manager, tmp_path):
    held = manager.acquire(TABLE, "run-1", "orders", ttl_seconds=60, wait_seconds=0)
    path = lease_file(tmp_path, held)
    holder = json.loads(path.read_text())
    path.write_text(json.dumps({**holder, "host": "other-host", "token": "t", "bootId": "b"}))
    with pytest.raises(LeaseHeldError, match="host other-host"):
        manager.acquire(TABLE, "run-2", "orders", 60, 0)
    age(tmp_path, 61)
    assert manager.acquire(TABLE, "run-2", "orders", 60, 0).generation == 2


def _holder_here(pid):
    """A holder on this host, boot and PID namespace, whose pid the contender can probe."""
    here = ProcessIdentity.of_this_process()
    if here.boot_id is None:
        pytest.skip("no /proc here: a holder's pid is never probed")
    return ProcessIdentity(here.host, pid, "holder's token", here.boot_id, here.pid_namespace)


def test_taking_over_a_stalled_holder_says_its_lease_expired_not_that_it_is_gone(tmp_path):
    """A holder stopped (SIGSTOP) or stalled: its pid is alive, its heartbeat is not."""
    storage = LocalStorage(tmp_path)
    LeaseManager(storage, identity=_holder_here(os.getpid())).acquire(TABLE, "run-1", "orders", 60, 0)
    age(tmp_path, 61)
    notice = LeaseManager(storage).acquire(TABLE, "run-2", "orders", 60, 0).takeover_notice()
    assert notice.startswith("took over the lease on s.schema/t from run run-1 (model 'orders'")
    assert "expired" in notice and "not renewed" in notice and f"process (pid {os.getpid()}) still exists" in notice
    assert "no longer running" not in notice


def test_taking_over_a_holder_whose_process_is_gone_says_so(tmp_path):
    storage = LocalStorage(tmp_path)
    LeaseManager(storage, identity=_holder_here(4_000_000)).acquire(TABLE, "run-1", "orders", 60, 0)
    notice = LeaseManager(storage).acquire(TABLE, "run-2", "orders", 60, 0).takeover_notice()
    assert "process (pid 4000000) is no longer running" in notice and "expired" not in notice


def test_taking_over_from_another_host_says_only_what_expiry_shows(manager, tmp_path):
    held = manager.acquire(TABLE, "run-1", "orders", ttl_seconds=60, wait_seconds=0)
    path = lease_file(tmp_path, held)
    path.write_text(json.dumps({**json.loads(path.read_text()), "host": "other-host", "token": "t", "bootId": "b"}))
    age(tmp_path, 61)
    notice = manager.acquire(TABLE, "run-2", "orders", 60, 0).takeover_notice()
    assert "expired" in notice and "no longer running" not in notice and "still exists" not in notice

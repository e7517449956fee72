"""Leases held by other real processes: a dead process of this boot is taken over at once, a pid
is looked up only where it belongs, and a live holder in another PID namespace keeps its lease."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from dbt.adapters.openmirror.errors import LeaseHeldError
from dbt.adapters.openmirror.publishing.lease import LeaseManager, lease_folder
from dbt.adapters.openmirror.storage import LocalStorage
from tests.conftest import ROOT
from tests.support.leases import TABLE, lease_file

pytestmark = pytest.mark.usefixtures("no_runs_in_this_process")


def test_a_dead_process_of_this_boot_and_pid_namespace_is_taken_over_at_once(manager, tmp_path):
    if manager.identity.boot_id is None:
        pytest.skip("no boot id and PID namespace here (not Linux): only expiry counts")
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    held = manager.acquire(TABLE, "run-1", "orders", ttl_seconds=3600, wait_seconds=0)
    path = lease_file(tmp_path, held)
    holder = json.loads(path.read_text())
    path.write_text(json.dumps({**holder, "pid": int(dead.stdout), "token": "another process"}))
    lease = manager.acquire(TABLE, "run-2", "orders", 3600, 0)
    assert lease.taken_from.run_id == "run-1"


@pytest.mark.parametrize(
    "identity",
    [
        {"bootId": None, "pidNamespace": None},  # written where there is no /proc (macOS, Windows)
        {"pidNamespace": "pid:[1]"},  # another container on this host
        {"bootId": "another boot"},
    ],
)
def test_a_pid_is_only_looked_up_in_the_boot_and_pid_namespace_it_belongs_to(manager, tmp_path, identity):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    held = manager.acquire(TABLE, "run-1", "orders", ttl_seconds=3600, wait_seconds=0)
    path = lease_file(tmp_path, held)
    holder = json.loads(path.read_text())
    path.write_text(json.dumps({**holder, "pid": int(dead.stdout), "token": "another process", **identity}))
    with pytest.raises(LeaseHeldError, match="is being published by run run-1"):
        manager.acquire(TABLE, "run-2", "orders", 3600, 0)


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "--pid", "--fork", "true"], capture_output=True).returncode == 0


def _pid_free_here(start: int) -> int:
    pid = start
    while os.path.exists(f"/proc/{pid}"):
        pid += 1
    return pid


@pytest.mark.skipif(not _unshare_works(), reason="needs `unshare --pid --fork` (Linux, privileges)")
def test_a_live_holder_in_another_pid_namespace_of_this_host_keeps_its_lease(tmp_path):
    """Two real processes: the holder runs in a PID namespace of its own (as in a container on
    this host, same hostname) under a pid that does not exist here."""
    pid = _pid_free_here(200)
    holder = subprocess.Popen(
        [
            "unshare",
            "--pid",
            "--fork",
            sys.executable,
            "-m",
            "tests.support.lease_holder",
            str(tmp_path),
            TABLE,
            str(pid),
        ],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().split() == ["held", str(pid)]
        written = json.loads(next((tmp_path / lease_folder(TABLE)).iterdir()).read_text())
        assert written["pid"] == pid and not os.path.exists(f"/proc/{pid}")
        with pytest.raises(LeaseHeldError, match=f"is being published by run holder-run .*pid {pid}"):
            LeaseManager(LocalStorage(tmp_path)).acquire(TABLE, "run-2", "orders", 60, 0)
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert holder.returncode == 0
    # Released by the holder: the next run takes it without waiting.
    assert LeaseManager(LocalStorage(tmp_path)).acquire(TABLE, "run-2", "orders", 60, 0).taken_from is None

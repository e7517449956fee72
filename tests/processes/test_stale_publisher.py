"""Stale writers, with two real processes: a `dbt-openmirror publish` stalls (SIGSTOP) at each
landing-zone operation of its publish in turn, its lease expires, another publish takes over and
publishes everything (also a run staged meanwhile), and then the stalled one wakes up (SIGCONT)
and goes on. The table must stay consistent: continuous numbers, every staged file published
exactly once, the journal at the last number (never rolled back), every run marked published
once; and the stalled publish fails saying that it lost its lease, unless all it had left to do
was harmless (marking runs published, removing what was already removed)."""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

from dbt.adapters.openmirror.package.publish import read_manifest
from dbt.adapters.openmirror.publishing.lease import lease_folder
from dbt.adapters.openmirror.storage import LocalStorage
from tests.conftest import ROOT
from tests.support.faulty import faulty_command, faulty_env
from tests.support.mirror_oracle import replay
from tests.support.package_mode import copy_landing_zone
from tests.support.package_staging import FOLDER, stage_run

pytestmark = pytest.mark.extended

RUN_A = [{"id": i, "amount": 10 * i, "__rowMarker__": 0} for i in (1, 2, 3, 4)]
RUN_B = [
    {"id": 1, "amount": 11, "__rowMarker__": 1},
    {"id": 2, "amount": None, "__rowMarker__": 2},
    {"id": 5, "amount": 50, "__rowMarker__": 0},
    {"id": 6, "amount": 60, "__rowMarker__": 0},
]
RUN_C = [{"id": 3, "amount": 33, "__rowMarker__": 1}, {"id": 7, "amount": 70, "__rowMarker__": 0}]
EXPECTED = [
    {"id": 1, "amount": 11},
    {"id": 3, "amount": 33},
    {"id": 4, "amount": 40},
    {"id": 5, "amount": 50},
    {"id": 6, "amount": 60},
    {"id": 7, "amount": 70},
]
# A publish's lease lasts this long without renewal (the command's default).
TTL_SECONDS = 300
BLAME = ("someone else", "another writer", "changed during the run", "--full-refresh")


def _publish_command(landing_zone, fail_at=None, mode="raise", log=None):
    """`dbt-openmirror publish`, failing at operation `fail_at` when given (tests/support/faulty.py)."""
    command = (
        [sys.executable, "-m", "dbt.adapters.openmirror.tools.cli", "publish", str(landing_zone)]
        if fail_at is None
        else faulty_command(["dbt-openmirror", "publish", str(landing_zone)], fail_at, mode, log)
    )
    return subprocess.Popen(
        command, cwd=ROOT, env=faulty_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _staged_digests(landing_zone):
    return sorted(
        hashlib.sha256(p.read_bytes()).hexdigest()
        for p in (landing_zone / "_scratchPad" / "dbt-openmirror").glob("run-*/part-*.parquet")
    )


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """Two runs staged, two change files each (pristine copy), the files of a third run staged
    while the first publisher stalls, and the operations of an uninterrupted publish."""
    pristine = tmp_path_factory.mktemp("pristine")
    stage_run(pristine, "run-a", 1, RUN_A, load="full", parts=2)
    stage_run(pristine, "run-b", 2, RUN_B, base_run_id="run-a", parts=2)
    later = tmp_path_factory.mktemp("later")
    stage_run(later, "run-c", 3, RUN_C, base_run_id="run-b", parts=2)
    counted = tmp_path_factory.mktemp("counted")
    copy_landing_zone(pristine, counted)
    log = counted.parent / "operations.log"
    done = _publish_command(counted, fail_at=0, log=log)
    assert done.wait(timeout=120) == 0, done.stderr.read()
    operations = [line.split("\t", 1)[1] for line in log.read_text().splitlines()]
    return pristine, later, operations


def _points(operations, every_point):
    """Every operation, or: taking the lease, the first journal entry (before begin), between
    the two renames of a run, the commit, marking a run published, the second run's begin, and
    the release."""
    if every_point:
        return list(range(1, len(operations) + 1))
    journal = [n for n, op in enumerate(operations, 1) if op.endswith("/_dbt_openmirror.json")]
    renames = [n for n, op in enumerate(operations, 1) if op.startswith("rename _scratchPad/dbt-openmirror/run-")]
    marks = [n for n, op in enumerate(operations, 1) if "/manifest/_published-" in op]
    return sorted({1, journal[0], renames[1], journal[1], marks[0], journal[2], len(operations)})


def _expire_leases(landing_zone):
    for path in (landing_zone / lease_folder(FOLDER)).iterdir():
        written = path.stat().st_mtime - TTL_SECONDS - 1
        os.utime(path, (written, written))


def _stall_and_take_over(landing_zone, pristine, later, point):
    """The first publisher stopped before operation `point`; the second publishes; then the
    first goes on. Their outcomes."""
    copy_landing_zone(pristine, landing_zone)
    stale = _publish_command(landing_zone, fail_at=point, mode="stop")
    _, status = os.waitpid(stale.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), f"the publish ended before operation {point}"
    try:
        if (landing_zone / lease_folder(FOLDER)).exists():
            _expire_leases(landing_zone)
        shutil.copytree(later, landing_zone, dirs_exist_ok=True)  # run-c, staged meanwhile
        taker = _publish_command(landing_zone)
        taken = taker.communicate(timeout=120)
    finally:
        os.kill(stale.pid, signal.SIGCONT)
    woke = stale.communicate(timeout=120)
    return (taker.returncode, *taken), (stale.returncode, *woke)


def test_a_publisher_that_stalls_anywhere_loses_its_lease_and_damages_nothing(history, tmp_path, request):
    pristine, later, operations = history
    every_point = request.config.getoption("--crash-points") == "all"
    last_journal_write = max(n for n, op in enumerate(operations, 1) if op.endswith("/_dbt_openmirror.json"))
    landing_zone = tmp_path / "landing_zone"
    staged = sorted(_staged_digests(pristine) + _staged_digests(later))
    points = _points(operations, every_point)
    refused = 0
    for point in points:
        (taker_code, taker_out, taker_err), (code, out, err) = _stall_and_take_over(
            landing_zone, pristine, later, point
        )
        where = f"stalled before operation {point} ({operations[point - 1]})"
        assert taker_code == 0, f"{where}: the publish that took over failed: {taker_err}"
        folder = landing_zone / FOLDER
        files = sorted(folder.glob("0*.parquet"))
        assert [f.name for f in files] == [f"{n:020d}.parquet" for n in range(1, 7)], where
        published = sorted(hashlib.sha256(f.read_bytes()).hexdigest() for f in files)
        assert published == staged, f"{where}: not every staged file published exactly once"
        assert sorted(replay(folder), key=lambda row: row["id"]) == EXPECTED, where
        journal = json.loads((folder / "_dbt_openmirror.json").read_text())
        assert (journal["lastSequenceNumber"], journal["lastRunId"]) == (6, "run-c"), where
        assert "pending" not in journal, where
        assert {r.run_id: r.state for r in read_manifest(LocalStorage(landing_zone))} == {
            "run-a": "published",
            "run-b": "published",
            "run-c": "published",
        }, where
        assert not list((landing_zone / "_scratchPad" / "dbt-openmirror").glob("run-*")), where
        if code != 0:
            refused += 1
            assert "lost its lease on sales.schema/orders" in err, f"{where}: {err}"
            assert not any(blame in err for blame in BLAME), f"{where}: {err}"
        else:
            # Nothing left to write but what is harmless: before it held the lease, or after
            # its last journal write.
            assert point == 1 or point > last_journal_write, f"{where}: it went on without its lease: {out}"
    print(
        f"stalled at {len(points)} of {len(operations)} operations: {refused} refused with a lost "
        f"lease, {len(points) - refused} had nothing left to write, 0 divergences"
    )

"""Two processes contend for one table folder, many times, with random timing: conditional
writes lose no update, the lease lets one publish at a time, numbering stays continuous and
nothing is published twice."""

import json
import random
import subprocess
import sys

import pyarrow.parquet as pq

from dbt.adapters.openmirror.storage import LocalStorage
from tests.conftest import ROOT
from tests.support.concurrent_publisher import TABLE


def test_two_processes_writing_conditionally_lose_no_update(tmp_path):
    command = [sys.executable, "-m", "tests.support.cas_counter", str(tmp_path), "t/counter.txt", "150"]
    workers = [subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    conflicts = [int(worker.communicate(timeout=120)[0]) for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0]
    assert LocalStorage(tmp_path).read_text("t/counter.txt") == "300\n"
    print(f"{sum(conflicts)} conflicts retried")


def test_contending_processes_publish_in_turn(tmp_path):
    seed = random.randrange(1_000_000)
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.support.concurrent_publisher", str(tmp_path), name, "40", str(seed + i)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i, name in enumerate(["first", "second"])
    ]
    outcomes = []
    for worker in workers:
        out, _ = worker.communicate(timeout=300)
        assert worker.returncode == 0
        outcomes += [json.loads(line) for line in out.splitlines()]
    published = [o for o in outcomes if o["published"]]
    refused = [o for o in outcomes if not o["published"]]
    assert all("is being published by run" in o["refused"] for o in refused), refused[:3]
    assert len(published) + len(refused) == 80 and published, f"seed {seed}"

    folder = tmp_path / TABLE
    files = sorted(folder.glob("*.parquet"))
    assert [f.name for f in files] == [f"{n:020d}.parquet" for n in range(1, len(published) + 1)]
    runs_in_files = [pq.read_table(f).column("run")[0].as_py() for f in files]
    assert sorted(runs_in_files) == sorted(o["run"] for o in published)  # each exactly once
    record = json.loads((folder / "_dbt_openmirror.json").read_text())
    assert record["lastSequenceNumber"] == len(files) and "pending" not in record
    # The last lease stays, released, so that the next one is numbered after it.
    (lease,) = (tmp_path / "_scratchPad/dbt-openmirror/leases" / TABLE).iterdir()
    assert json.loads(lease.read_text())["released"] is True
    print(f"seed {seed}: {len(published)} published, {len(refused)} refused")

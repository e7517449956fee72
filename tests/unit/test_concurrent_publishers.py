"""Two publisher processes contend for one table folder, many times, with random timing:
the lease lets one publish at a time, numbering stays continuous and nothing is published twice."""

import json
import random
import subprocess
import sys

import pyarrow.parquet as pq

from tests.concurrent_publisher import TABLE
from tests.conftest import ROOT


def test_contending_processes_publish_in_turn(tmp_path):
    seed = random.randrange(1_000_000)
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.concurrent_publisher", str(tmp_path), name, "40", str(seed + i)],
            cwd=ROOT, stdout=subprocess.PIPE, text=True,
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

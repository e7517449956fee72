"""Overlapping scheduled jobs: two `dbt run` processes publish the same model at the same time
over Thrift (one shared metastore), several times with random timing. Exactly one publishes each
change; the other is refused with a clear message or, having waited, finds nothing left to do."""

import random
import subprocess
import time

import pyarrow.parquet as pq
import pytest

from tests.support.mirror import normalized
from tests.support.mirror_oracle import data_files, replay
from tests.support.subprocess_project import dbt_run_command, expected, write_project

pytestmark = [pytest.mark.cluster, pytest.mark.extended]


def test_two_jobs_at_once(cluster, tmp_path):
    folder = write_project(
        tmp_path,
        {
            "type": "openmirror",
            "method": "thrift",
            "host": cluster["host"],
            "port": cluster["port"],
            "schema": "concurrent_jobs",
        },
    )
    seed = random.randrange(1_000_000)
    rng = random.Random(seed)
    previous = {}
    for round_number in range(4):
        rows = [(i, f"n{round_number}", i * round_number) for i in range(1, 4 + round_number)]
        wait = rng.choice([0, 120])
        jobs = []
        for _ in range(2):
            time.sleep(rng.random() * 1.5)
            command = dbt_run_command(tmp_path, rows, lease_wait=wait)
            jobs.append(
                subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            )
        before = data_files(folder) if folder.exists() else []
        outputs = [(job.wait(timeout=600), job.stdout.read()) for job in jobs]
        context = f"seed {seed}, round {round_number}, wait {wait}"
        succeeded = [out for code, out in outputs if code == 0]
        refused = [out for code, out in outputs if code != 0]
        assert succeeded, context
        errors = [[line for line in out.splitlines() if "rror" in line][:8] for out in refused]
        assert all("is being published by run" in out for out in refused), (context, errors)
        numbers = [int(p.name[:20]) for p in data_files(folder)]
        assert numbers == list(range(1, len(numbers) + 1)), context
        # Each changed row was published once: the new files hold exactly the changes.
        new_rows = sum(pq.read_metadata(p).num_rows for p in data_files(folder) if p not in before)
        current = {i: (n, a) for i, n, a in rows}
        changes = len(set(previous) ^ set(current)) + sum(
            previous[k] != current[k] for k in set(previous) & set(current)
        )
        assert new_rows == changes, context
        assert normalized(replay(folder)) == expected(rows), context
        previous = current

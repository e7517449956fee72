"""Real process kills: `dbt run` kills itself with SIGKILL at a landing-zone operation (no Python
cleanup runs, Spark dies with it), then a new `dbt run` process recovers. Each run is its own
process with its own Spark, sharing one warehouse and metastore folder, like scheduled jobs."""

import json
import signal

import pytest

from tests.support.faults import SNAPSHOT_ASIDE
from tests.support.mirror import normalized
from tests.support.mirror_oracle import data_files, replay
from tests.support.subprocess_project import dbt_run, expected, write_project

pytestmark = pytest.mark.extended

STATES = [
    [(1, "a", 10), (2, "b", 20), (3, "c", 30), (4, "d", 40)],
    [(1, "a", 11), (2, "B", 20), (4, "d", 40), (5, "e", 50), (6, "f", 60)],
]


@pytest.fixture(scope="module")
def project(tmp_path_factory, spark_settings):
    root = tmp_path_factory.mktemp("kill_project")
    spark = root / "spark"
    settings = {
        **spark_settings,
        "spark.sql.warehouse.dir": str(spark / "warehouse"),
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={spark / 'metastore_db'};create=true",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={spark}",
    }
    folder = write_project(
        root, {"type": "openmirror", "method": "session", "host": "localhost", "server_side_parameters": settings}
    )
    return root, folder


def test_killed_runs_recover(project, request):
    root, folder = project
    assert dbt_run(root, STATES[0]).returncode == 0
    log = root / "operations.log"
    counted = dbt_run(root, STATES[1], fail_at=0, log=log)
    assert counted.returncode == 0, counted.stdout[-2000:]
    operations = log.read_text().splitlines()
    assert any(SNAPSHOT_ASIDE in line for line in operations), "the snapshot's replacement is no crash point"
    renames = [int(line.split("\t")[0]) for line in operations if "\trename " in line]
    lease_taken = next(int(line.split("\t")[0]) for line in operations if "/leases/" in line)
    # Between two renames of the multi-file publish; with --crash-points all, at every operation.
    points = [renames[1]]
    if request.config.getoption("--crash-points") == "all":
        points = list(range(1, len(operations) + 1))
    for turn, point in enumerate(points):
        rows = STATES[turn % 2]
        killed = dbt_run(root, rows, fail_at=point, mode="kill")
        assert killed.returncode == -signal.SIGKILL, killed.stdout[-2000:]
        recovered = dbt_run(root, rows)
        assert recovered.returncode == 0, recovered.stdout[-3000:]
        assert normalized(replay(folder)) == expected(rows), f"after a kill at operation {point}"
        numbers = [int(p.name[:20]) for p in data_files(folder)]
        assert numbers == list(range(1, len(numbers) + 1))
        assert "pending" not in json.loads((folder / "_dbt_openmirror.json").read_text())
        # The recovery says what it did (a run killed while taking the lease held none).
        if point > lease_taken:
            assert "took over the lease" in recovered.stdout, recovered.stdout[-3000:]
        if point == renames[1]:
            assert "Rolling forward" in recovered.stdout
    print(f"killed at {len(points)} of {len(operations)} operations, {len(points)} recoveries, 0 divergences")

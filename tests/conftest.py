import importlib.util
import os
from pathlib import Path

import pytest

pytest_plugins = ["dbt.tests.fixtures.project", "tests.support.fixtures", "tests.support.leases"]

# Spark and Derby leave files in the working directory unless told otherwise, and take the
# machine's time zone; the suite pins both.
os.environ.setdefault("TZ", "UTC")

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("spark_cluster", ROOT / "scripts" / "spark_cluster.py")
spark_cluster = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(spark_cluster)


def pytest_addoption(parser):
    parser.addoption(
        "--profile",
        choices=["session", "thrift"],
        default="session",
        help="dbt profile of the functional suites: a local Spark session (default), or "
        "method: thrift against a Spark cluster and Thrift server started on loopback",
    )
    parser.addoption(
        "--crash-points",
        choices=["sample", "all"],
        default="sample",
        help="crash-recovery sweeps: 'all' fails every landing-zone operation of every scenario "
        "in turn; 'sample' (default) every third one and the last two, but for the multi-file publish "
        "with --extended, which fails every one",
    )
    parser.addoption(
        "--all-adapter-suites",
        action="store_true",
        help="also run dbt's adapter suites marked adapter_suites (several minutes); the default run has the core ones",
    )
    parser.addoption(
        "--extended",
        action="store_true",
        help="also run the tests marked extended (18 to 25 minutes more on 2 cores): dbt runs in processes of "
        "their own, killed or stopped, the cluster suite, the crash-point sweeps beyond the default's sample, the "
        "demo scenario and package mode's twins of plugin tests; CI runs them",
    )


#: Opt-in tiers, by marker: each costs minutes of Spark time and runs only with its option.
OPT_IN_TIERS = {"adapter_suites": "--all-adapter-suites", "extended": "--extended"}


def pytest_collection_modifyitems(config, items):
    """The tiers whose option is not given are deselected."""
    skipped = [marker for marker, option in OPT_IN_TIERS.items() if not config.getoption(option)]
    kept, deselected = [], []
    for item in items:
        (deselected if any(item.get_closest_marker(marker) for marker in skipped) else kept).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


@pytest.fixture(scope="session")
def spark_dirs(tmp_path_factory):
    return tmp_path_factory.mktemp("spark")


@pytest.fixture(scope="session")
def spark_settings(spark_dirs):
    """Static settings of the one Spark session per test process (only the first creation counts)."""
    return {
        "spark.master": "local[2]",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.driver.memory": "2g",
        "spark.sql.warehouse.dir": str(spark_dirs / "warehouse"),
        "javax.jdo.option.ConnectionURL": (f"jdbc:derby:;databaseName={spark_dirs / 'metastore_db'};create=true"),
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={spark_dirs}",
    }


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    """A Spark master, a worker and the Thrift server on loopback; stopped after the tests."""
    workdir = tmp_path_factory.mktemp("spark_cluster")
    endpoint = spark_cluster.start(workdir, spark_cluster._free_port())
    try:
        yield {**endpoint, "dir": workdir}
    finally:
        spark_cluster.stop(workdir)


@pytest.fixture(scope="class")
def landing_zone(tmp_path_factory):
    """Each test class publishes into a landing zone of its own."""
    return tmp_path_factory.mktemp("landing_zone")


def thrift_target(cluster, landing_zone) -> dict:
    """A `method: thrift` profile target for the cluster's Thrift server."""
    return {
        "type": "openmirror",
        "method": "thrift",
        "host": cluster["host"],
        "port": cluster["port"],
        "landing_zone": str(landing_zone),
    }


@pytest.fixture(scope="class")
def dbt_profile_target(request, spark_settings, landing_zone):
    if request.config.getoption("--profile") == "thrift":
        return thrift_target(request.getfixturevalue("cluster"), landing_zone)
    return {
        "type": "openmirror",
        "method": "session",
        "host": "localhost",
        "landing_zone": str(landing_zone),
        "server_side_parameters": spark_settings,
    }


@pytest.fixture
def dfs_emulator(tmp_path):
    """A OneLake-like DFS endpoint on loopback HTTPS with the filesystem (workspace) `workspace`;
    see tests/support/dfs_emulator for the URL, CA path, test credential and fault injection."""
    from tests.support.dfs_emulator import DfsEmulator

    with DfsEmulator(tmp_path / "onelake", filesystems=["workspace"]) as emulator:
        yield emulator

"""Fixtures for the suite that runs against a real Spark cluster over Thrift (marker `cluster`)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("spark_cluster", ROOT / "scripts" / "spark_cluster.py")
spark_cluster = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(spark_cluster)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    """A master, a worker and the Thrift server on loopback; stopped after the suite."""
    workdir = tmp_path_factory.mktemp("spark_cluster")
    endpoint = spark_cluster.start(workdir, spark_cluster._free_port())
    try:
        yield {**endpoint, "dir": workdir}
    finally:
        spark_cluster.stop(workdir)


@pytest.fixture(scope="class")
def dbt_profile_target(cluster, landing_zone):
    return {
        "type": "openmirror",
        "method": "thrift",
        "host": cluster["host"],
        "port": cluster["port"],
        "landing_zone": str(landing_zone),
    }

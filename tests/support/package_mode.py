"""A dbt project using the repository as a dbt package on a stock `type: spark` connection
(package mode), and how its tests publish what it staged."""

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from dbt.tests.util import run_dbt

from dbt.adapters.openmirror.package.publish import (
    MANIFEST_FOLDER,
    PackagePublisher,
    StagedRun,
    read_manifest,
)
from dbt.adapters.openmirror.storage import LocalStorage
from tests.conftest import thrift_target

ROOT = Path(__file__).resolve().parents[2]

MODEL = """
{{ config(materialized='open_mirror', unique_key='id',
          post_hook="alter table {{ this }} set tblproperties ('test.post_hook' = 'ran')") }}
select * from {{ var('source_schema', target.schema) }}.src
"""


class InPackageMode:
    """Test classes using this mixin run dbt with `type: spark` and the package from this tree."""

    @pytest.fixture(scope="class")
    def dbt_profile_target(self, request, spark_settings, landing_zone):
        if request.config.getoption("--profile") == "thrift":
            target = thrift_target(request.getfixturevalue("cluster"), landing_zone)
            del target["landing_zone"]
            return {**target, "type": "spark"}
        return {"type": "spark", "method": "session", "host": "localhost", "server_side_parameters": spark_settings}

    @pytest.fixture(scope="class")
    def packages(self):
        return {"packages": [{"local": str(ROOT)}]}

    @pytest.fixture(scope="class")
    def project_config_update(self, landing_zone):
        return {"vars": {"openmirror_landing_zone": str(landing_zone)}}

    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": MODEL}

    @pytest.fixture(scope="class", autouse=True)
    def package_installed(self, project):
        run_dbt(["deps"])
        run_dbt(["parse"])  # deps leaves no adapter behind; the test project's SQL needs one


def publish(landing_zone: Path, storage=None) -> list[StagedRun]:
    """`dbt-openmirror publish`, in this process; the runs it published."""
    published = PackagePublisher(storage or LocalStorage(landing_zone), log=lambda line: None).publish()
    return [p.run for p in published]


def manifest_states(landing_zone: Path) -> list[str]:
    return [run.state for run in read_manifest(LocalStorage(landing_zone))]


def copy_landing_zone(source: Path, target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)


def manifest_rows(landing_zone: Path) -> list[dict]:
    """Every row of the manifest table, with the file it is in."""
    rows = []
    for path in sorted((landing_zone / MANIFEST_FOLDER).glob("*.parquet")):
        rows += [{**row, "file": path} for row in pq.read_table(path).to_pylist()]
    return rows

"""Opt-in: the OneLake scenario against a real OneLake landing zone.

Skipped unless `OPENMIRROR_TEST_ONELAKE_URL` names a landing zone
(`https://onelake.dfs.fabric.microsoft.com/<workspace>/<item>/Files/LandingZone`) and sign-in is
possible: `OPENMIRROR_TEST_ONELAKE_AUTH` = default (the default), service_principal (with
AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_CLIENT_SECRET), managed_identity or cli. The test
publishes one table under the schema folder `dbt_openmirror_test.schema/` with a unique name,
checks each run by downloading the table folder and replaying it with the independent oracle
(the real service moves files to _ProcessedFiles itself, so the local mirror is not run against
it), runs `dbt-openmirror validate`, and deletes its table folder at the end.
"""

import os
import uuid

import pytest
from dbt.tests.util import run_dbt

from dbt.adapters.openmirror.rules.landing_zone import PROCESSED_FOLDERS
from dbt.adapters.openmirror.storage import open_landing_zone
from dbt.adapters.openmirror.storage.azure_auth import AzureAuth
from dbt.adapters.openmirror.tools.validate import validate
from tests.functional.test_onelake_publish import COLUMNS, STEPS
from tests.support.mirror import assert_mirror_equals, file_markers, set_source

URL = os.environ.get("OPENMIRROR_TEST_ONELAKE_URL")
AUTH = os.environ.get("OPENMIRROR_TEST_ONELAKE_AUTH", "default")
TABLE = f"customers_{uuid.uuid4().hex[:8]}"

pytestmark = pytest.mark.skipif(
    not URL, reason="set OPENMIRROR_TEST_ONELAKE_URL (and sign-in) to run against real OneLake"
)

MODEL = f"""
{{{{ config(materialized='open_mirror', unique_key='id', max_rows_per_file=2,
           mirror_schema='dbt_openmirror_test', mirror_table='{TABLE}') }}}}
select * from {{{{ target.schema }}}}.src
"""


def _auth() -> AzureAuth:
    return AzureAuth(
        AUTH,
        os.environ.get("AZURE_TENANT_ID"),
        os.environ.get("AZURE_CLIENT_ID"),
        os.environ.get("AZURE_CLIENT_SECRET"),
    )


def _download(storage, folder, destination):
    """The table folder's data files and metadata, as published, into a local folder."""
    for sub in ("", *PROCESSED_FOLDERS):
        remote = f"{folder}/{sub}".rstrip("/")
        for name in storage.list_names(remote):
            if name == "_metadata.json" or name.endswith(".parquet"):
                local = destination / sub / name
                local.parent.mkdir(parents=True, exist_ok=True)
                with storage.open_read(f"{remote}/{name}") as handle:
                    local.write_bytes(handle.read())


class TestPublishToRealOneLake:
    @pytest.fixture(scope="class")
    def dbt_profile_target(self, spark_settings):
        auth = _auth()
        return {
            "type": "openmirror",
            "method": "session",
            "host": "localhost",
            "landing_zone": URL,
            "auth": auth.method,
            "tenant_id": auth.tenant_id,
            "client_id": auth.client_id,
            "client_secret": auth.client_secret,
            "server_side_parameters": spark_settings,
        }

    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": MODEL}

    def test_runs_publish_exactly_the_changes(self, project, warehouse, tmp_path):
        storage = open_landing_zone(URL, _auth())
        folder = f"dbt_openmirror_test.schema/{TABLE}"
        source = f"select * from {project.test_schema}.src"
        try:
            for step, (rows, args, mode, new_files, markers) in enumerate(STEPS):
                set_source(warehouse, project.test_schema, f"select * from values {rows} {COLUMNS}")
                response = run_dbt(["run", *args])[0].adapter_response
                assert response["mode"] == mode and len(response["files"]) == new_files
                copy = tmp_path / f"step{step}"
                _download(storage, folder, copy)
                assert_mirror_equals(warehouse, copy, source)
                if new_files:
                    assert sorted(sum(file_markers(copy)[-new_files:], [])) == markers
                assert [str(f) for f in validate(storage) if f.where.startswith(folder)] == []
        finally:
            storage.delete_folder(folder)

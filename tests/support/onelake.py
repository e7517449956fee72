"""A OneLake landing zone on the local DFS stand-in (tests/support/dfs_emulator), for functional tests."""

from functools import partial

import pytest

from dbt.adapters.openmirror import storage
from tests.support.dfs_emulator import FixedTokenCredential

# The landing zone is the item's Files/LandingZone in the stand-in's one workspace.
ITEM_ROOT = "item/Files/LandingZone"
TOKEN = "onelake-test-token"
SECRET = "Zq8~functional-secret-never-shown"


class OnOneLake:
    """Mixin for a test class whose project publishes into the stand-in's landing zone."""

    @pytest.fixture(scope="class")
    def dbt_profile_target(self, spark_settings, onelake):
        return onelake_target(spark_settings, onelake)


def onelake_target(spark_settings, dfs) -> dict:
    """A session profile target publishing into the stand-in's landing zone."""
    return {
        "type": "openmirror",
        "method": "session",
        "host": "localhost",
        "landing_zone": f"{dfs.url}/workspace/{ITEM_ROOT}",
        "auth": "service_principal",
        "tenant_id": "72f988bf-86f1-41af-91ab-2d7cd011db47",
        "client_id": "3c1d9f4b-0a7e-4d2a-8c6e-5b1f2a3d4e5f",
        "client_secret": SECRET,
        "server_side_parameters": spark_settings,
    }


def onelake_landing_zone_on_disk(dfs):
    """Where the stand-in keeps the landing zone's bytes, for independent readers."""
    return dfs.root / "workspace" / ITEM_ROOT


def sign_in_with(patch: pytest.MonkeyPatch, token: str) -> FixedTokenCredential:
    """The adapter and the CLI sign in to OneLake with `token` (what the stand-in accepts), not
    with azure-identity: their landing zones are opened with this credential."""
    credential = FixedTokenCredential(token)
    patch.setattr(storage, "open_landing_zone", partial(storage.open_landing_zone, credential=credential))
    return credential

import pytest

from tests.support.dfs_emulator import DfsEmulator
from tests.support.mirror import Warehouse
from tests.support.onelake import TOKEN, onelake_landing_zone_on_disk, sign_in_with


@pytest.fixture(scope="class")
def warehouse(project, tmp_path_factory):
    """SQL on the test project's Spark, through dbt's connection (session or thrift)."""
    return Warehouse(project, tmp_path_factory.mktemp("query_results"))


@pytest.fixture(scope="class")
def onelake(tmp_path_factory):
    """The DFS stand-in, its certificate trusted, answering only our token, with a mirrored
    database item (which always has its Files/LandingZone)."""
    with DfsEmulator(tmp_path_factory.mktemp("onelake"), ["workspace"], required_token=TOKEN) as dfs:
        onelake_landing_zone_on_disk(dfs).mkdir(parents=True)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("REQUESTS_CA_BUNDLE", dfs.ca_path)
            sign_in_with(patch, TOKEN)
            yield dfs

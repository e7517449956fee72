"""The cluster suite always runs over Thrift, whatever --profile says."""

import pytest


@pytest.fixture(scope="class")
def dbt_profile_target(cluster, landing_zone):
    return {
        "type": "openmirror",
        "method": "thrift",
        "host": cluster["host"],
        "port": cluster["port"],
        "landing_zone": str(landing_zone),
    }

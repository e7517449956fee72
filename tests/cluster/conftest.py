"""The cluster suite always runs over Thrift, whatever --profile says."""

import pytest

from tests.conftest import thrift_target


@pytest.fixture(scope="class")
def dbt_profile_target(cluster, landing_zone):
    return thrift_target(cluster, landing_zone)

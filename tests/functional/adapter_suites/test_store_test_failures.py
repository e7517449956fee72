"""`store_failures`: dbt tests write their failing rows to tables, under `type: openmirror`."""

import pytest
from dbt.tests.adapter.store_test_failures_tests.basic import (
    StoreTestFailuresAsExceptions,
    StoreTestFailuresAsGeneric,
    StoreTestFailuresAsInteractions,
    StoreTestFailuresAsProjectLevelEphemeral,
    StoreTestFailuresAsProjectLevelOff,
    StoreTestFailuresAsProjectLevelView,
)
from dbt.tests.adapter.store_test_failures_tests.test_store_test_failures import (
    BaseStoreTestFailures,
    BaseStoreTestFailuresLimit,
)


# Reruns seeds and models before each of its checks: over a minute, so not in the default run.
@pytest.mark.adapter_suites
class TestStoreTestFailures(BaseStoreTestFailures):
    pass


@pytest.mark.adapter_suites
class TestStoreTestFailuresLimit(BaseStoreTestFailuresLimit):
    pass


class TestStoreTestFailuresAsInteractions(StoreTestFailuresAsInteractions):
    pass


@pytest.mark.adapter_suites
class TestStoreTestFailuresAsProjectLevelOff(StoreTestFailuresAsProjectLevelOff):
    pass


@pytest.mark.adapter_suites
class TestStoreTestFailuresAsProjectLevelView(StoreTestFailuresAsProjectLevelView):
    pass


@pytest.mark.adapter_suites
class TestStoreTestFailuresAsProjectLevelEphemeral(StoreTestFailuresAsProjectLevelEphemeral):
    pass


@pytest.mark.adapter_suites
class TestStoreTestFailuresAsGeneric(StoreTestFailuresAsGeneric):
    pass


@pytest.mark.adapter_suites
class TestStoreTestFailuresAsExceptions(StoreTestFailuresAsExceptions):
    pass

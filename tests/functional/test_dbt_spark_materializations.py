"""dbt-spark's own materializations and dbt tests keep working under `type: openmirror`
(dbt's adapter test suites from dbt-tests-adapter)."""

import pytest
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_empty import BaseEmpty
from dbt.tests.adapter.basic.test_generic_tests import BaseGenericTests
from dbt.tests.adapter.basic.test_incremental import BaseIncremental
from dbt.tests.adapter.basic.test_singular_tests import BaseSingularTests


class TestSimpleMaterializations(BaseSimpleMaterializations):
    pass


class TestEmpty(BaseEmpty):
    pass


class TestSingularTests(BaseSingularTests):
    pass


class TestGenericTests(BaseGenericTests):
    pass


class TestIncremental(BaseIncremental):
    # Without Delta jars, dbt-spark's incremental models are Parquet with the append strategy.
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {
            "name": "incremental",
            "models": {"+incremental_strategy": "append", "+file_format": "parquet"},
        }

"""dbt-spark's own materializations and dbt tests keep working under `type: openmirror`
(dbt's adapter test suites from dbt-tests-adapter)."""

import pytest
from dbt.tests.adapter.basic.test_adapter_methods import BaseAdapterMethod
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_empty import BaseEmpty
from dbt.tests.adapter.basic.test_ephemeral import BaseEphemeral
from dbt.tests.adapter.basic.test_generic_tests import BaseGenericTests
from dbt.tests.adapter.basic.test_incremental import BaseIncremental
from dbt.tests.adapter.basic.test_singular_tests import BaseSingularTests
from dbt.tests.adapter.basic.test_singular_tests_ephemeral import BaseSingularTestsEphemeral
from dbt.tests.adapter.basic.test_snapshot_check_cols import BaseSnapshotCheckCols
from dbt.tests.adapter.basic.test_snapshot_timestamp import BaseSnapshotTimestamp
from dbt.tests.adapter.basic.test_table_materialization import BaseTableMaterialization
from dbt.tests.adapter.basic.test_validate_connection import BaseValidateConnection

from tests.functional.adapter_suites.skip_reasons import MERGE_NEEDS_DELTA


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


class TestEphemeral(BaseEphemeral):
    pass


class TestSingularTestsEphemeral(BaseSingularTestsEphemeral):
    pass


class TestAdapterMethods(BaseAdapterMethod):
    pass


class TestTableMaterialization(BaseTableMaterialization):
    pass


class TestValidateConnection(BaseValidateConnection):
    pass


@pytest.mark.skip(reason=MERGE_NEEDS_DELTA)
class TestSnapshotCheckCols(BaseSnapshotCheckCols):
    pass


@pytest.mark.skip(reason=MERGE_NEEDS_DELTA)
class TestSnapshotTimestamp(BaseSnapshotTimestamp):
    pass

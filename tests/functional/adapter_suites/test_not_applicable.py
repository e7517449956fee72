"""dbt's adapter suites that do not apply to `type: openmirror` on a Spark session with Parquet,
each skipped with its reason, so that the list of what is not run is explicit."""

import pytest
from dbt.tests.adapter.basic.test_get_catalog_for_single_relation import (
    BaseGetCatalogForSingleRelation,
)
from dbt.tests.adapter.column_types.test_column_types import BasePostgresColumnTypes
from dbt.tests.adapter.constraints.test_constraints import (
    BaseConstraintsColumnsEqual,
    BaseConstraintsRuntimeDdlEnforcement,
)
from dbt.tests.adapter.dbt_clone.test_dbt_clone import BaseClonePossible
from dbt.tests.adapter.grants.test_incremental_grants import BaseIncrementalGrants
from dbt.tests.adapter.grants.test_invalid_grants import BaseInvalidGrants
from dbt.tests.adapter.grants.test_model_grants import BaseModelGrants
from dbt.tests.adapter.grants.test_seed_grants import BaseSeedGrants
from dbt.tests.adapter.grants.test_snapshot_grants import BaseSnapshotGrants
from dbt.tests.adapter.hooks.test_model_hooks import BasePrePostModelHooks
from dbt.tests.adapter.hooks.test_run_hooks import BasePrePostRunHooks
from dbt.tests.adapter.incremental.test_incremental_merge_exclude_columns import (
    BaseMergeExcludeColumns,
)
from dbt.tests.adapter.incremental.test_incremental_predicates import BaseIncrementalPredicates
from dbt.tests.adapter.incremental.test_incremental_unique_id import BaseIncrementalUniqueKey
from dbt.tests.adapter.persist_docs.test_persist_docs import BasePersistDocs
from dbt.tests.adapter.python_model.test_python_model import BasePythonModelTests
from dbt.tests.adapter.sample_mode.test_sample_mode import BaseSampleModeTest
from dbt.tests.adapter.simple_seed.test_seed import BaseBasicSeedTests
from dbt.tests.adapter.simple_snapshot.test_snapshot import BaseSimpleSnapshot

from tests.functional.adapter_suites.skip_reasons import MERGE_NEEDS_DELTA

NO_ACCESS_CONTROL = "a local Spark session has no users or GRANT (Databricks Unity Catalog does)"
POSTGRES_FIXTURES = "the suite's fixtures are Postgres DDL and data files (dbt-spark does not run it)"


@pytest.mark.skip(reason=MERGE_NEEDS_DELTA)
class TestIncrementalUniqueKey(BaseIncrementalUniqueKey):
    pass


@pytest.mark.skip(reason=MERGE_NEEDS_DELTA)
class TestIncrementalPredicates(BaseIncrementalPredicates):
    pass


@pytest.mark.skip(reason=MERGE_NEEDS_DELTA)
class TestMergeExcludeColumns(BaseMergeExcludeColumns):
    pass


@pytest.mark.skip(reason=MERGE_NEEDS_DELTA)
class TestSimpleSnapshot(BaseSimpleSnapshot):
    pass


@pytest.mark.skip(reason=MERGE_NEEDS_DELTA)
class TestClone(BaseClonePossible):
    pass


@pytest.mark.skip(
    reason="dbt-spark writes column comments only to Delta/Hudi/Iceberg tables; on Parquet "
    "persist_docs sets the relation comment only"
)
class TestPersistDocs(BasePersistDocs):
    pass


@pytest.mark.skip(reason="Spark does not enforce constraints on Parquet tables (Delta on Databricks does)")
class TestConstraintsColumnsEqual(BaseConstraintsColumnsEqual):
    pass


@pytest.mark.skip(reason="Spark does not enforce constraints on Parquet tables (Delta on Databricks does)")
class TestConstraintsRuntimeDdlEnforcement(BaseConstraintsRuntimeDdlEnforcement):
    pass


@pytest.mark.skip(reason=NO_ACCESS_CONTROL)
class TestModelGrants(BaseModelGrants):
    pass


@pytest.mark.skip(reason=NO_ACCESS_CONTROL)
class TestIncrementalGrants(BaseIncrementalGrants):
    pass


@pytest.mark.skip(reason=NO_ACCESS_CONTROL)
class TestSeedGrants(BaseSeedGrants):
    pass


@pytest.mark.skip(reason=NO_ACCESS_CONTROL)
class TestSnapshotGrants(BaseSnapshotGrants):
    pass


@pytest.mark.skip(reason=NO_ACCESS_CONTROL)
class TestInvalidGrants(BaseInvalidGrants):
    pass


@pytest.mark.skip(
    reason="dbt-spark submits Python models to Databricks (job or all-purpose cluster), not to a local session"
)
class TestPythonModels(BasePythonModelTests):
    pass


@pytest.mark.skip(reason="dbt-spark's own suite does not run sample mode on a Spark session")
class TestSampleMode(BaseSampleModeTest):
    pass


@pytest.mark.skip(reason=POSTGRES_FIXTURES)
class TestBasicSeeds(BaseBasicSeedTests):
    pass


@pytest.mark.skip(reason=POSTGRES_FIXTURES)
class TestModelHooks(BasePrePostModelHooks):
    pass


@pytest.mark.skip(reason=POSTGRES_FIXTURES)
class TestRunHooks(BasePrePostRunHooks):
    pass


@pytest.mark.skip(reason=POSTGRES_FIXTURES)
class TestColumnTypes(BasePostgresColumnTypes):
    pass


@pytest.mark.skip(reason="dbt-spark does not implement get_catalog_for_single_relation")
class TestGetCatalogForSingleRelation(BaseGetCatalogForSingleRelation):
    pass


# Not wired at all, as they have no Spark implementation: materialized views and dynamic
# tables (materialized_view/), catalog integrations (catalog_integrations/) and user-defined
# functions (functions/): dbt-spark has none of these.

"""dbt-spark's incremental strategies on Parquet under `type: openmirror`: schema changes with
append and insert_overwrite, and microbatch (insert_overwrite of the batch's partitions).
The merge-based suites need Delta: see test_not_applicable.py."""

import pytest
from dbt.tests.adapter.incremental.test_incremental_microbatch import BaseMicrobatch
from dbt.tests.adapter.incremental.test_incremental_on_schema_change import (
    BaseIncrementalOnSchemaChange,
)
from dbt.tests.util import relation_from_name

from tests.functional.adapter_suites.skip_reasons import DROP_COLUMN_NEEDS_DELTA


class IncrementalOnSchemaChangeParquet(BaseIncrementalOnSchemaChange):
    """ignore, fail and append_new_columns work on Parquet; sync_all_columns also drops columns."""

    def _assert_incremental_equals_target(self, project, run_models, model):
        """`run_models` is a base helper: two runs of three models, then the incremental model
        must equal its target (check_relations_equal). The same columns are asserted here too."""
        run_models(project)
        adapter = project.adapter
        columns = [c.name for c in adapter.get_columns_in_relation(relation_from_name(adapter, model))]
        target = [c.name for c in adapter.get_columns_in_relation(relation_from_name(adapter, f"{model}_target"))]
        assert columns == target

    def test_run_incremental_append_new_columns(self, project):
        # The base test also runs the remove-one case, skipped below.
        self._assert_incremental_equals_target(
            project, self.run_incremental_append_new_columns, "incremental_append_new_columns"
        )

    @pytest.mark.skip(
        reason="when the model stops selecting a column, dbt-spark's insert still names it "
        "(append_new_columns keeps it in the table), and Spark cannot resolve it"
    )
    def test_run_incremental_append_new_columns_remove_one(self, project):
        self._assert_incremental_equals_target(
            project, self.run_incremental_append_new_columns_remove_one, "incremental_append_new_columns_remove_one"
        )

    test_run_incremental_sync_all_columns = pytest.mark.skip(reason=DROP_COLUMN_NEEDS_DELTA)(
        BaseIncrementalOnSchemaChange.test_run_incremental_sync_all_columns
    )


class TestAppendOnSchemaChange(IncrementalOnSchemaChangeParquet):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"+file_format": "parquet", "+incremental_strategy": "append"}}


@pytest.mark.adapter_suites
class TestInsertOverwriteOnSchemaChange(IncrementalOnSchemaChangeParquet):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {
            "models": {
                "+file_format": "parquet",
                "+incremental_strategy": "insert_overwrite",
                "+partition_by": "id",
            }
        }


@pytest.mark.adapter_suites
class TestMicrobatch(BaseMicrobatch):
    # dbt-spark's microbatch overwrites the partitions of each batch: it needs partition_by,
    # and no unique_key.
    @pytest.fixture(scope="class")
    def microbatch_model_sql(self) -> str:
        return (
            "{{ config(materialized='incremental', incremental_strategy='microbatch', "
            "file_format='parquet', partition_by='event_day', event_time='event_time', "
            "batch_size='day', begin=modules.datetime.datetime(2020, 1, 1, 0, 0, 0)) }}\n"
            "select *, to_date(event_time) as event_day from {{ ref('input_model') }}"
        )

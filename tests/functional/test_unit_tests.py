"""dbt unit tests of models that call is_incremental(), which the plugin replaces
(macros/materializations/is_incremental.sql). dbt requires such a unit test to override it with a
boolean, but checks that when parsing only for its own macro: the plugin's answers the same way
when the unit test runs, for `open_mirror` and dbt-spark `incremental` models alike."""

import pytest
from dbt.tests.util import run_dbt

from tests.functional.test_incremental_models import _source
from tests.support.mirror import set_source

SOURCES = """
version: 2
sources:
  - name: shop
    schema: "{{ target.schema }}"
    tables:
      - name: src
"""
ORDERS = """
{{ config(materialized='open_mirror', unique_key='id', delete_flag='deleted') }}
select * from {{ source('shop', 'src') }}
{% if is_incremental() %}
where updated_at > (select max(updated_at) from {{ this }})
{% endif %}
"""
ORDER_LOG = """
{{ config(materialized='incremental', incremental_strategy='append', file_format='parquet') }}
select id, name, updated_at from {{ source('shop', 'src') }}
{% if is_incremental() %}
where updated_at > (select max(updated_at) from {{ this }})
{% endif %}
"""
GIVEN = """
    given:
      - input: source('shop', 'src')
        rows:
          - {id: 1, name: a, updated_at: 1, deleted: false}
          - {id: 2, name: b, updated_at: 5, deleted: false}
"""
UNIT_TESTS = f"""
unit_tests:
  - name: orders_candidates
    model: orders
    overrides:
      macros:
        is_incremental: true
{GIVEN}
      - input: this
        rows:
          - {{id: 1, name: a, updated_at: 3}}
    expect:
      rows:
        - {{id: 2, name: b, updated_at: 5, deleted: false}}
  - name: orders_in_full
    model: orders
    overrides:
      macros:
        is_incremental: false
{GIVEN}
    expect:
      rows:
        - {{id: 1, name: a, updated_at: 1, deleted: false}}
        - {{id: 2, name: b, updated_at: 5, deleted: false}}
  - name: orders_not_overridden
    model: orders
{GIVEN}
    expect:
      rows: []
  - name: order_log_not_overridden
    model: order_log
{GIVEN}
    expect:
      rows: []
"""


class TestUnitTestsOfIncrementalModels:
    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": ORDERS, "order_log.sql": ORDER_LOG, "schema.yml": SOURCES, "unit.yml": UNIT_TESTS}

    def test_is_incremental_must_be_overridden(self, project, warehouse):
        set_source(warehouse, project.test_schema, _source("(1, 'a', 1, false)"))
        run_dbt(["run", "--select", "orders"])  # a `this` input takes its columns from the model's relation
        results = run_dbt(["test", "--select", "test_type:unit"], expect_pass=False)
        status = {r.node.name: r.status for r in results}
        assert status == {
            "orders_candidates": "pass",
            "orders_in_full": "pass",
            "orders_not_overridden": "error",
            "order_log_not_overridden": "error",
        }
        for result in results:
            if result.status == "error":
                model = result.node.name.removesuffix("_not_overridden")
                assert (
                    f"Boolean override for 'is_incremental' must be provided for unit test '{result.node.name}' "
                    f"in model '{model}'"
                ) in result.message

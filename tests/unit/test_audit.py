"""Write-audit-publish: a held change is published only when every test of its model ran in the
invocation and passed."""

from types import SimpleNamespace

import pytest

from dbt.adapters.openmirror.run.audit import hook_configured, model_tests, verdict

MODEL = "model.shop.orders"


def data_test(name, *upstream):
    return {"resource_type": "test", "depends_on": {"nodes": list(upstream)}, "name": name}


NODES = {
    MODEL: {"resource_type": "model", "depends_on": {"nodes": []}},
    "test.shop.unique_orders_id": data_test("unique", MODEL),
    "test.shop.relationships_orders": data_test("rel", MODEL, "model.shop.customers"),
    "test.shop.not_null_customers_id": data_test("nn", "model.shop.customers"),
    "unit_test.shop.orders.logic": {"resource_type": "unit_test", "depends_on": {"nodes": [MODEL]}},
}


def result(unique_id, status):
    return SimpleNamespace(node=SimpleNamespace(unique_id=unique_id), status=status)


def test_the_tests_of_a_model_are_the_data_tests_that_depend_on_it():
    assert model_tests(MODEL, NODES) == ["test.shop.relationships_orders", "test.shop.unique_orders_id"]


@pytest.mark.parametrize(
    "statuses, publish, reason",
    [
        ({"unique_orders_id": "pass", "relationships_orders": "pass"}, True, "its 2 tests passed"),
        ({"unique_orders_id": "pass", "relationships_orders": "warn"}, True, "its 2 tests passed"),
        ({"unique_orders_id": "fail", "relationships_orders": "pass"}, False, "unique_orders_id (fail)"),
        ({"unique_orders_id": "error", "relationships_orders": "pass"}, False, "unique_orders_id (error)"),
        ({"unique_orders_id": "skipped", "relationships_orders": "pass"}, False, "(skipped)"),
        ({"unique_orders_id": "pass"}, False, "did not run in this invocation"),
        ({}, False, "run them with the model (dbt build, without excluding them)"),
    ],
)
def test_verdicts(statuses, publish, reason):
    results = [result(MODEL, "success")] + [result(f"test.shop.{name}", s) for name, s in statuses.items()]
    decided = verdict(MODEL, NODES, results)
    assert decided.publish is publish and reason in decided.reason


def test_a_model_without_tests_publishes():
    assert verdict("model.shop.customers_v2", NODES, []).publish


def test_the_hook_is_found_in_the_projects_operations():
    assert hook_configured(NODES) is None
    hook = {"resource_type": "operation", "raw_code": "{{ openmirror_publish_audited(results) }}"}
    assert hook_configured({**NODES, "operation.shop.shop-on-run-end-0": hook}) == "operation.shop.shop-on-run-end-0"

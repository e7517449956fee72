"""Package mode makes some of the plugin's decisions in Jinja (macros/package/); they must agree
with the plugin's Python (hash_diff.py, schema_plan.py), so both modes publish alike. Each test
drives both from the same cases."""

from pathlib import Path
from types import SimpleNamespace

import jinja2
import pytest

from dbt.adapters.openmirror.errors import SchemaChangeError
from dbt.adapters.openmirror.planning.hash_diff import ROWS_PER_BUCKET, bucket_count, hashed_columns, writer_count
from dbt.adapters.openmirror.planning.schema_plan import ColumnSpec, SchemaPlan, plan_schema
from dbt.adapters.openmirror.run.audit import verdict

PACKAGE_MACROS = Path(__file__).resolve().parents[2] / "macros" / "package"


class _Returned(Exception):
    """dbt's `return()` ends a macro with a value; this stands in for it."""


class _Failed(Exception):
    """`openmirror_fail` (a compilation error in dbt)."""


def _return(value):
    raise _Returned(value)


@pytest.fixture(scope="module")
def package():
    """Calls a package macro as dbt would: the others in reach as `dbt_openmirror.<name>`."""
    environment = jinja2.Environment(extensions=["jinja2.ext.do"], undefined=jinja2.StrictUndefined)
    environment.globals["return"] = _return
    namespace = SimpleNamespace()
    environment.globals["dbt_openmirror"] = namespace
    source = "\n".join(p.read_text() for p in sorted(PACKAGE_MACROS.glob("*.sql")))
    module = environment.from_string(source).module

    def call(name, *args):
        with pytest.raises(_Returned) as returned:
            getattr(module, name)(*args)
        return returned.value.args[0]

    for name in dir(module):
        if name.startswith("openmirror_"):
            setattr(namespace, name, lambda *args, _name=name: call(_name, *args))

    def fail(message):
        raise _Failed(message)

    namespace.openmirror_fail = fail
    return call


ROW_COUNTS = [0, 1, ROWS_PER_BUCKET - 1, ROWS_PER_BUCKET, ROWS_PER_BUCKET + 1, 9_000_000, 10_000_000,
              16_000_000, 16_000_001, 5_000_000_000, 10**13]


@pytest.mark.parametrize("key_types", [["bigint"], ["int", "string"], ["bigint", "string collate UTF8_LCASE"]])
def test_bucket_count_agrees(package, key_types):
    for rows in ROW_COUNTS:
        assert package("openmirror_bucket_count", rows, key_types) == bucket_count(rows, key_types), rows


@pytest.mark.parametrize("max_rows_per_file", [0, 100, 2_500_000])
def test_writer_count_agrees(package, max_rows_per_file):
    for rows in ROW_COUNTS:
        assert package("openmirror_writer_count", rows, max_rows_per_file) == writer_count(rows, max_rows_per_file), (
            rows
        )


def test_hashed_columns_agree(package):
    columns = [
        ColumnSpec("Zeta", "int"),
        ColumnSpec("id", "bigint"),
        ColumnSpec("alpha", "string"),
        ColumnSpec("Line", "int"),
        ColumnSpec("beta", "array<int>"),
    ]
    keys = ["ID", "line"]
    assert package("openmirror_hashed_columns", columns, keys) == hashed_columns(SchemaPlan(columns=columns), keys)


def _spec(column):
    return {
        "name": column.name,
        "data_type": column.data_type,
        "is_complex": column.is_complex,
        "published_type": column.published_type,
        "published_name": column.published_name,
    }


ID, NAME, SCORE = ColumnSpec("id", "int"), ColumnSpec("name", "string"), ColumnSpec("score", "int")
SCHEMA_CASES = [
    # (snapshot columns, model columns, on_schema_change, published names)
    ([ID, NAME], [ID, NAME], "append_new_columns", None),
    ([ID, NAME], [ID, SCORE], "append_new_columns", None),
    ([ID, NAME], [ID, NAME, SCORE], "sync_all_columns", None),
    ([ID, NAME, SCORE], [ID, SCORE], "sync_all_columns", None),
    ([ID, SCORE], [ID, ColumnSpec("score", "string")], "sync_all_columns", None),
    ([ID, SCORE], [ID, ColumnSpec("score", "string")], "append_new_columns", None),
    ([ID, NAME], [ID, NAME, SCORE], "fail", None),
    ([ID, ColumnSpec("Name", "string")], [ID, NAME], "append_new_columns", None),
    ([ID, ColumnSpec("Name", "string")], [ID, NAME], "fail", None),
    ([ID, ColumnSpec("Name", "string")], [ID, NAME], "sync_all_columns", None),
    ([ID, NAME, SCORE], [ID, NAME], "append_new_columns", ["ID", "Name", "SCORE"]),
    ([ID, ColumnSpec("a", "struct<x:int>")], [ID, ColumnSpec("a", "struct<x:int,y:int>")], "fail", None),
]


@pytest.mark.parametrize("previous, current, on_schema_change, published_names", SCHEMA_CASES)
def test_schema_plan_agrees(package, previous, current, on_schema_change, published_names):
    try:
        python = plan_schema("m", previous, current, on_schema_change, published_names)
    except SchemaChangeError:
        with pytest.raises(_Failed):
            package(
                "openmirror_schema_plan",
                [_spec(c) for c in previous],
                [_spec(c) for c in current],
                on_schema_change,
                published_names,
            )
        return
    jinja = package(
        "openmirror_schema_plan",
        [_spec(c) for c in previous],
        [_spec(c) for c in current],
        on_schema_change,
        published_names,
    )
    assert jinja["columns"] == [_spec(c) for c in python.columns]
    assert jinja["kept"] == [_spec(c) for c in python.kept]
    assert jinja["added"] == [_spec(c) for c in python.added]
    assert [tuple(pair) for pair in jinja["respelled"]] == python.respelled
    assert jinja["rebuild_reason"] == python.rebuild_reason


AUDIT_MODEL = "model.shop.orders"
AUDIT_NODES = {
    AUDIT_MODEL: {"resource_type": "model", "depends_on": {"nodes": []}},
    "test.shop.unique_orders_id": {"resource_type": "test", "depends_on": {"nodes": [AUDIT_MODEL]}},
    "test.shop.relationships_orders": {"resource_type": "test", "depends_on": {"nodes": [AUDIT_MODEL, "model.shop.c"]}},
    "test.shop.other": {"resource_type": "test", "depends_on": {"nodes": ["model.shop.c"]}},
}


@pytest.mark.parametrize(
    "statuses",
    [
        {"unique_orders_id": "pass", "relationships_orders": "pass"},
        {"unique_orders_id": "pass", "relationships_orders": "warn"},
        {"unique_orders_id": "fail", "relationships_orders": "error"},
        {"unique_orders_id": "skipped", "relationships_orders": "pass"},
        {"unique_orders_id": "pass"},
        {},
    ],
)
@pytest.mark.parametrize("model", [AUDIT_MODEL, "model.shop.untested"])
def test_audit_verdict_agrees(package, model, statuses):
    results = [
        SimpleNamespace(node=SimpleNamespace(unique_id=f"test.shop.{name}"), status=status)
        for name, status in statuses.items()
    ]
    python = verdict(model, AUDIT_NODES, results)
    assert package("openmirror_audit_verdict", model, AUDIT_NODES, results) == {
        "publish": python.publish,
        "reason": python.reason,
    }

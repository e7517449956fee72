"""Seed rows on a session connection: bound values become exact Spark SQL literals."""

import datetime
from decimal import Decimal

from dbt.adapters.openmirror.connections import SessionConnection


def test_an_empty_value_is_null_and_quotes_are_escaped():
    sql = "insert into t values (%s, %s, %s, %s)"
    bound = [SessionConnection._fix_binding(v) for v in [None, "it's a \\ test", Decimal("2.5"), "x"]]
    assert sql % tuple(bound) == "insert into t values (NULL, 'it\\'s a \\\\ test', 2.5, 'x')"


def test_other_values_are_bound_as_dbt_spark_binds_them():
    assert SessionConnection._fix_binding(3) == 3.0
    assert SessionConnection._fix_binding(datetime.datetime(2026, 1, 2, 3, 4, 5, 600000)) == (
        "'2026-01-02 03:04:05.600'"
    )

"""Package mode makes the hash diff's decisions in Jinja (macros/package/hash_diff.sql); they
must agree with the plugin's Python (hash_diff.py), so both modes bucket and write alike."""

from pathlib import Path

import jinja2
import pytest

from dbt.adapters.openmirror.hash_diff import ROWS_PER_BUCKET, bucket_count, hashed_columns, writer_count
from dbt.adapters.openmirror.schema_plan import ColumnSpec, SchemaPlan

PACKAGE_MACROS = Path(__file__).resolve().parents[2] / "macros" / "package" / "hash_diff.sql"


class _Returned(Exception):
    """dbt's `return()` ends a macro with a value; this stands in for it."""


def _return(value):
    raise _Returned(value)


@pytest.fixture(scope="module")
def package():
    environment = jinja2.Environment(extensions=["jinja2.ext.do"], undefined=jinja2.StrictUndefined)
    environment.globals["return"] = _return
    module = environment.from_string(PACKAGE_MACROS.read_text()).module

    def call(name, *args):
        with pytest.raises(_Returned) as returned:
            getattr(module, name)(*args)
        return returned.value.args[0]

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
        assert package("openmirror_writer_count", rows, max_rows_per_file) == writer_count(rows, max_rows_per_file), rows


def test_hashed_columns_agree(package):
    columns = [ColumnSpec("Zeta", "int"), ColumnSpec("id", "bigint"), ColumnSpec("alpha", "string"),
               ColumnSpec("Line", "int"), ColumnSpec("beta", "array<int>")]
    keys = ["ID", "line"]
    assert package("openmirror_hashed_columns", columns, keys) == hashed_columns(SchemaPlan(columns=columns), keys)

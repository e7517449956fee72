"""Parquet the mirror accepts for every data type, and column changes between runs."""

import math

import pyarrow.parquet as pq
import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.support.delta_reader import protocol
from tests.support.mirror import (
    assert_local_mirror_equals,
    assert_mirror_equals,
    file_markers,
    findings_for,
    set_source,
    table_folder,
    tree_digest,
)
from tests.support.mirror_oracle import data_files
from tests.support.sql_macros import sql_macros

TYPED_ROWS = """
select
  cast(id as bigint) as id,
  cast(amount as decimal(38, 10)) as amount,
  cast(day as date) as day,
  cast(at as timestamp) as at,
  cast(at as timestamp_ntz) as local_at,
  cast(payload as binary) as payload,
  flag,
  label,
  cast(ratio as double) as ratio,
  cast(small as smallint) as small,
  named_struct('city', label, 'zip', id) as address,
  array(id, id + 1) as tags,
  map('k', label) as attributes,
  label as `customer name`,
  -- dbt-spark takes a name starting with '#' for the end of DESCRIBE's column list, and a table
  -- whose information text says `Type: VIEW` anywhere for a view.
  id + 1 as `# items`,
  label as `Type: VIEW`,
  id * 2 as `order total ($)`
from values
  (1, '12345678901234567890.0123456789', '2024-02-29', '2024-03-01 12:34:56.123456', 'raw\\u0000bytes', true,
    'Zoë – 東京 🚀', 0.5, 7),
  (2, '-0.0000000001', '1970-01-01', '1999-12-31 23:59:59.999999', '', false, '', 1e-300, -7),
  (3, null, null, null, null, null, null, null, null)
  as t(id, amount, day, at, payload, flag, label, ratio, small)
"""

COMPLEX = {"address", "tags", "attributes"}


class TestDataTypes:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "typed.sql": "{{ config(materialized='open_mirror', unique_key='id') }}\n"
            "select * from {{ target.schema }}.src",
            # A hook (or a cluster's defaults) asking for the legacy calendar would shift old dates.
            "old_dates.sql": "{{ config(materialized='open_mirror', unique_key='id', pre_hook="
            "'set spark.sql.parquet.datetimeRebaseModeInWrite=LEGACY') }}\n"
            "select * from values (1, date'0001-01-01', timestamp'1582-10-04 12:00:00.000001'), "
            "(2, date'1582-10-15', timestamp'1900-01-01 00:00:00') as t(id, d, at)",
        }

    def test_types_reach_the_mirror_intact(self, project, warehouse, landing_zone, tmp_path):
        schema = project.test_schema
        set_source(warehouse, schema, TYPED_ROWS)
        run_dbt(["run", "--select", "typed"])
        folder = table_folder(landing_zone, schema, "typed")
        columns = warehouse.columns(f"{schema}.src")
        as_published = ", ".join(f"to_json(`{c}`) as `{c}`" if c in COMPLEX else f"`{c}`" for c in columns)
        assert_mirror_equals(warehouse, folder, f"select {as_published} from {schema}.src")
        assert findings_for(landing_zone, folder) == []
        # The local mirror's Delta table holds the same values, with the protocol that
        # timestamp without time zone and the column names with spaces and parentheses (column
        # mapping) need, and no more.
        target = tmp_path / "mirror"
        assert_local_mirror_equals(
            warehouse, landing_zone, target, schema, "typed", f"select {as_published} from {schema}.src"
        )
        assert protocol(target / schema / "typed") == {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["columnMapping", "timestampNtz"],
            "writerFeatures": ["columnMapping", "timestampNtz"],
        }

        parquet_schema = pq.read_schema(data_files(folder)[0])
        assert "__rowMarker__" not in parquet_schema.names  # a full load only inserts
        assert str(parquet_schema.field("at").type) == "timestamp[us, tz=UTC]"
        assert str(parquet_schema.field("local_at").type) == "timestamp[us]"
        assert str(parquet_schema.field("amount").type) == "decimal128(38, 10)"
        assert str(parquet_schema.field("payload").type) == "binary"
        for name in COMPLEX:
            assert str(parquet_schema.field(name).type) == "string"
        physical = pq.ParquetFile(data_files(folder)[0]).schema
        assert physical.column(parquet_schema.get_field_index("at")).physical_type == "INT64"

    def test_dates_before_the_gregorian_calendar_are_written_as_they_are(self, project, warehouse, landing_zone):
        run_dbt(["run", "--select", "old_dates"])
        folder = table_folder(landing_zone, project.test_schema, "old_dates")
        assert_mirror_equals(warehouse, folder, f"select * from {project.test_schema}.old_dates")
        [rows] = [pq.read_table(f).to_pylist() for f in data_files(folder)]
        assert str(min(r["d"] for r in rows)) == "0001-01-01"
        assert findings_for(landing_zone, folder) == []

    def test_changed_complex_values_are_updates(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "typed")
        set_source(warehouse, schema, TYPED_ROWS)  # the same rows in new files: the run compares them
        [result] = run_dbt(["run", "--select", "typed"])
        assert "inputs unchanged" not in result.adapter_response["_message"]
        assert len(file_markers(folder)) == 1, "unchanged struct, array and map values are no change"
        set_source(warehouse, schema, TYPED_ROWS.replace("array(id, id + 1)", "array(id, if(id = 2, 0, id + 1))"))
        run_dbt(["run", "--select", "typed"])
        assert file_markers(folder)[-1] == [1]
        assert pq.read_table(data_files(folder)[-1]).to_pylist()[0]["tags"] == "[2,0]"


def _values(rows: str, extra: str = "") -> str:
    """Rows (id, d, s, at) as a double, a string compared case-insensitively and a struct holding a
    timestamp, with `extra` columns."""
    return f"""
select id, cast(d as double) as d, cast(s as string collate UTF8_LCASE) as s,
  named_struct('at', cast(at as timestamp)) as ev {extra}
from values {rows} as t(id, d, s, at)"""


JSON_OPTIONS = sql_macros().openmirror_json_options().strip()


class TestValuesSparkTakesForEqual:
    """Values Spark's `<=>` or hashes take for equal but the files carry apart: 0.0 and -0.0,
    strings equal under their collation, timestamps inside a struct differing by microseconds."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"valued.sql": MODEL}

    def test_they_are_published_as_changes_by_either_diff(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "valued")
        at, at_later = "'2024-03-10 07:30:00.123456'", "'2024-03-10 07:30:00.123999'"
        set_source(warehouse, schema, _values(f"(1, 0.0D, 'abc', {at}), (2, 1.0D, 'x', {at}), (3, 5.0D, 'y', {at})"))
        run_dbt(["run"])
        assert pq.read_table(data_files(folder)[0]).to_pylist()[0]["ev"] == '{"at":"2024-03-10T07:30:00.123456Z"}'

        # The key hashes' diff.
        set_source(
            warehouse, schema, _values(f"(1, -0.0D, 'abc', {at}), (2, 0.0D, 'x', {at}), (3, 5.0D, 'y', {at_later})")
        )
        run_dbt(["run"])
        changed = {row["id"]: row for row in pq.read_table(data_files(folder)[-1]).to_pylist()}
        assert sorted(changed) == [1, 2, 3] and file_markers(folder)[-1] == [1, 1, 1]
        assert math.copysign(1, changed[1]["d"]) == -1
        assert changed[3]["ev"] == '{"at":"2024-03-10T07:30:00.123999Z"}'

        # The whole rows' diff (the first run after a column is added; NULL, so no change itself).
        rows = f"(1, -0.0D, 'ABC', {at}), (2, -0.0D, 'x', {at}), (3, 5.0D, 'y', {at_later})"
        set_source(warehouse, schema, _values(rows, ", cast(null as int) as added"))
        run_dbt(["run"])
        changed = {row["id"]: row for row in pq.read_table(data_files(folder)[-1]).to_pylist()}
        assert sorted(changed) == [1, 2] and changed[1]["s"] == "ABC" and math.copysign(1, changed[2]["d"]) == -1

        # The collation is not part of the published type: dropping it changes no column, and the
        # whole rows' diff (another column added) compares the snapshot's collated value byte for byte.
        rows = f"(1, -0.0D, 'ABC', {at}), (2, -0.0D, 'x', {at}), (3, 5.0D, 'Y', {at_later})"
        extra = ", cast(null as int) as added, cast(null as int) as more"
        set_source(warehouse, schema, _values(rows, extra).replace(" collate UTF8_LCASE", ""))
        [result] = run_dbt(["run"])
        assert result.adapter_response["mode"] == "incremental"
        assert [row["s"] for row in pq.read_table(data_files(folder)[-1]).to_pylist()] == ["Y"]
        published = f"select id, d, s, to_json(ev, {JSON_OPTIONS}) as ev, added, more from {schema}.src"
        assert_mirror_equals(warehouse, folder, published)
        assert findings_for(landing_zone, folder) == []


MODEL = """
{{ config(materialized='open_mirror', unique_key='id', on_schema_change=var('on_change', 'append_new_columns')) }}
select * from {{ target.schema }}.src
"""


class TestSchemaChanges:
    @pytest.fixture(scope="class")
    def models(self):
        return {"evolving.sql": MODEL}

    def test_added_removed_and_retyped_columns(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "evolving")
        source = f"select * from {schema}.src"

        set_source(warehouse, schema, "select * from values (1, 'a'), (2, 'b') as t(id, name)")
        run_dbt(["run"])

        # An added column flows through: rows whose new value is set are updates.
        set_source(warehouse, schema, "select * from values (1, 'a', 10), (2, 'b', null) as t(id, name, score)")
        run_dbt(["run"])
        assert file_markers(folder)[-1] == [1]
        assert_mirror_equals(warehouse, folder, source)

        # A column added with no row to change reaches the mirror in a zero-row file, once.
        with_due = "select id, name, score, cast(null as date) as due from values (1, 'a', 10), (2, 'b', null)"
        set_source(warehouse, schema, f"{with_due} as t(id, name, score)")
        for published in (1, 0):
            files = len(data_files(folder))
            dry = run_dbt(["run", "--vars", "{openmirror_dry_run: true}"])[0]
            results = run_dbt(["run"])
            assert len(data_files(folder)) == files + published
            assert dry.adapter_response["files"] == results[0].adapter_response["files"]  # foretold
            assert results[0].adapter_response["rows_affected"] == 0
            assert "due" in pq.read_schema(data_files(folder)[-1]).names
            assert_mirror_equals(warehouse, folder, source)
            assert findings_for(landing_zone, folder) == []

        # A removed column is kept, NULL in new rows, as the mirror keeps it.
        set_source(warehouse, schema, "select * from values (1, 10), (2, null), (3, 30) as t(id, score)")
        run_dbt(["run"])
        assert sorted(file_markers(folder)[-1]) == [0, 1, 1]
        kept = "cast(null as string) as name, score, cast(null as date) as due"
        assert_mirror_equals(warehouse, folder, f"select id, {kept} from {schema}.src")
        schema_of_file = pq.read_schema(data_files(folder)[-1])
        assert "name" in schema_of_file.names
        # Every published data column is nullable, so the mirror's schema merge takes the omission.
        assert [f.name for f in schema_of_file if not f.nullable] == ["__rowMarker__"]

        # A type change is never published in place.
        set_source(warehouse, schema, "select * from values (1, '10'), (2, null), (3, '30') as t(id, score)")
        before = tree_digest(landing_zone)
        results = run_dbt(["run"], expect_pass=False)
        assert "column 'score' int -> string" in results[0].message
        assert "'evolving'" in results[0].message and "--full-refresh" in results[0].message
        assert tree_digest(landing_zone) == before

        # on_schema_change='fail' refuses even an added column.
        set_source(warehouse, schema, "select * from values (1, 10, 'x') as t(id, score, extra)")
        results = run_dbt(["run", "--vars", "{on_change: fail}"], expect_pass=False)
        assert "on_schema_change='fail'" in results[0].message and "extra" in results[0].message
        assert tree_digest(landing_zone) == before

        # sync_all_columns rebuilds the mirrored table with the new types.
        set_source(warehouse, schema, "select * from values (1, '10'), (3, '30') as t(id, score)")
        results = run_dbt(["run", "--vars", "{on_change: sync_all_columns}"])
        assert results[0].adapter_response["mode"] == "rebuild"
        assert file_markers(folder) == [[0, 0]]
        assert_mirror_equals(warehouse, folder, source)

    def test_ignore_keeps_the_mirrors_columns(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "evolving")
        ignore = ["--vars", "{on_change: ignore}"]
        set_source(warehouse, schema, "select * from values (1, 'a'), (2, 'b') as t(id, name)")
        run_dbt(["run", "--full-refresh"])
        # A new column is neither published nor kept in the snapshot; changes elsewhere still are.
        # The output is written once, without it: the model's rows are a view it is written from.
        set_source(warehouse, schema, "select * from values (1, 'a', 7), (2, 'B', 8) as t(id, name, extra)")
        _, log = run_dbt_and_capture(["--debug", "run", *ignore])
        assert f"create or replace view {schema}.evolving__om_new" in log
        assert [sorted(m) for m in file_markers(folder)] == [[0, 0], [1]]
        assert "extra" not in pq.read_schema(data_files(folder)[-1]).names
        assert warehouse.columns(f"{schema}.evolving") == ["id", "name"]
        assert_mirror_equals(warehouse, folder, f"select id, name from {schema}.src")
        # A type change is still never published in place.
        set_source(warehouse, schema, "select * from values (1, 5), (2, 6) as t(id, name)")
        before = tree_digest(landing_zone)
        results = run_dbt(["run", *ignore], expect_pass=False)
        assert "not even with on_schema_change='ignore'" in results[0].message
        assert tree_digest(landing_zone) == before


STRUCT_KEYED = """
{{ config(materialized='open_mirror', unique_key='sk', on_schema_change=var('on_change', 'append_new_columns'),
          pre_hook="set spark.sql.jsonGenerator.ignoreNullFields=" ~ var('ignore_nulls', 'true')) }}
select named_struct('{{ var("field", "P") }}', cast(id as {{ var("id_type", "int") }}),
                    'q', cast(null as string)) as sk, v
from {{ target.schema }}.src
"""


class TestStructKeys:
    """The mirror matches a struct key by its JSON text: what changes that text for every key (a
    field respelled, a session setting) must not reach it as updates of keys it does not hold."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"skey.sql": STRUCT_KEYED}

    def test_the_keys_text_stays_or_the_table_is_rebuilt(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "skey")

        def published(field="P"):
            return f"select to_json(named_struct('{field}', id), {JSON_OPTIONS}) as sk, v from {schema}.src"

        set_source(warehouse, schema, "select * from values (1, 'a'), (2, 'b') as t(id, v)")
        run_dbt(["run"])
        # A session that writes NULL fields would change every key's text.
        set_source(warehouse, schema, "select * from values (1, 'a2') as t(id, v)")
        run_dbt(["run", "--vars", "{ignore_nulls: 'false'}"])
        assert file_markers(folder)[-1] == [1, 2]
        assert_mirror_equals(warehouse, folder, published())

        before = tree_digest(landing_zone)
        set_source(warehouse, schema, "select * from values (1, 'a3') as t(id, v)")
        message = run_dbt(["run", "--vars", "{field: p}"], expect_pass=False)[0].message
        assert "column 'sk' struct<P:int,q:string> -> struct<p:int,q:string>" in message
        assert "JSON text" in message and "--full-refresh" in message
        assert tree_digest(landing_zone) == before
        run_dbt(["run", "--vars", "{field: p, on_change: sync_all_columns}"])
        assert_mirror_equals(warehouse, folder, published("p"))
        # A field's type: refused before Spark's own comparison of the old and new keys fails.
        before = tree_digest(landing_zone)
        message = run_dbt(["run", "--vars", "{field: p, id_type: 'decimal(12,3)'}"], expect_pass=False)[0].message
        assert "column 'sk' struct<p:int,q:string> -> struct<p:decimal(12,3),q:string>" in message
        assert tree_digest(landing_zone) == before

"""Bad input fails before anything is published, names the model, the column and an example
value, and leaves the landing zone byte-for-byte unchanged."""

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.support.mirror import assert_mirror_equals, set_source, table_folder, tree_digest
from tests.support.unwritable import unwritable


def _model(config: str) -> str:
    return f"{{{{ config(materialized='open_mirror', {config}) }}}}\nselect * from {{{{ target.schema }}}}.src"


BAD_MODELS = {
    "keyless.sql": _model("tags=['keyless']"),
    "wrong_key.sql": _model("unique_key='customer_id'"),
    "pair_key.sql": _model("unique_key=['id', 'region']"),
    "escaping_table.sql": _model("unique_key='id', mirror_table='../outside'"),
    "escaping_schema.sql": _model("unique_key='id', mirror_schema='a/b'"),
    "hidden_table.sql": _model("unique_key='id', mirror_table='_staging'"),
    "rekeyed.sql": _model("unique_key=var('key', 'id')"),
    "map_key.sql": "{{ config(materialized='open_mirror', unique_key='m') }}\n"
    "select map('r', region) as m, id from {{ target.schema }}.src",
    "collated_key.sql": "{{ config(materialized='open_mirror', unique_key=['id', 'region']) }}\n"
    "select id, collate(region, 'UTF8_LCASE') as region from {{ target.schema }}.src",
    "guarded.sql": _model("unique_key='id'"),
    "upper_alias.sql": _model("unique_key='id', alias='Orders'"),
    "marker_column.sql": "{{ config(materialized='open_mirror', unique_key='id') }}\n"
    "select id, 1 as __RowMarker__ from {{ target.schema }}.src",
    "void_column.sql": "{{ config(materialized='open_mirror', unique_key='id') }}\n"
    "select id, null as nothing from {{ target.schema }}.src",
    "interval_column.sql": "{{ config(materialized='open_mirror', unique_key='id') }}\n"
    "select id, interval '1' day as wait from {{ target.schema }}.src",
    "misspelt_config.sql": _model("unique_key='id', deleteflag='name'"),
    "percent_table.sql": _model("unique_key='id', mirror_table='%2E%2E'"),
    "json_snapshot.sql": _model("unique_key='id', file_format='json'"),
    "located.sql": _model("unique_key='id', location_root='/tmp/openmirror-located'"),
    "float_struct_key.sql": "{{ config(materialized='open_mirror', unique_key='k') }}\n"
    "select named_struct('id', id, 'x', cast(id as double)) as k, name from {{ target.schema }}.src",
    "accented_alias.sql": _model("unique_key='id', alias='café'"),
    "long_alias.sql": _model(f"unique_key='id', alias='{'a' * 233}', mirror_table='LongAlias'"),
    # DESCRIBE cuts a struct's type after 25 fields; what hides behind the cut is checked too.
    "wide_struct_map.sql": "{{ config(materialized='open_mirror', unique_key='id') }}\n"
    "select id, named_struct(" + "".join(f"'f{i}', id, " for i in range(26)) + "'when', map(current_date(), id)) as s "
    "from {{ target.schema }}.src",
    "wide_float_struct_key.sql": "{{ config(materialized='open_mirror', unique_key='k') }}\n"
    "select named_struct(" + "".join(f"'f{i}', id, " for i in range(26)) + "'x', cast(id as double)) as k, name "
    "from {{ target.schema }}.src",
    "clashing.sql": _model("unique_key='id'"),
    "fails_once.sql": _model("unique_key='id'").replace(
        "src", "src {% if var('boom', false) %} where raise_error('boom') is null {% endif %}"
    ),
    "latin_text.sql": "{{ config(materialized='open_mirror', unique_key='id', show_key_values=var('show', true)) }}\n"
    "select id, region, case when id = 2 and {{ var('latin', false) }} then cast(X'63616689' as string) "
    "else name end as name from {{ target.schema }}.src",
    # Package mode's config: the plugin publishes to the profile's landing zone only.
    "elsewhere.sql": _model("unique_key='id', landing_zone='/tmp/openmirror-elsewhere'"),
    "profiles_zone.sql": _model("unique_key='id', landing_zone=target.landing_zone ~ '/'"),
    # Another model named like one of `clashing`'s own tables, which its runs would overwrite.
    "clashing__om_base.sql": "{{ config(materialized='table') }}\nselect 'user data' as note",
}


class TestBadInput:
    @pytest.fixture(scope="class")
    def models(self):
        return BAD_MODELS

    @pytest.fixture(scope="class", autouse=True)
    def published(self, project, warehouse):
        """One good publish first, so 'unchanged' covers an existing table folder too."""
        set_source(
            warehouse, project.test_schema, "select * from values (1, 'eu', 'a'), (2, 'us', 'b') as t(id, region, name)"
        )
        run_dbt(["run", "--select", "rekeyed"])

    def _fails(self, project, landing_zone, select, *extra):
        before = tree_digest(landing_zone)
        results = run_dbt(["run", "--select", select, *extra], expect_pass=False)
        assert tree_digest(landing_zone) == before
        return results[0].message

    @pytest.mark.parametrize(
        "model, expected",
        [
            ("keyless", ["'keyless'", "unique_key"]),
            ("wrong_key", ["'wrong_key'", "customer_id", "id", "region"]),
            ("escaping_table", ["'escaping_table'", "mirror_table", "'../outside'"]),
            ("escaping_schema", ["'escaping_schema'", "mirror_schema", "'a/b'"]),
            ("hidden_table", ["'hidden_table'", "'_staging'", "ignored by the mirror"]),
            ("map_key", ["'map_key'", "'m'", "map<string,string>"]),
            ("collated_key", ["'collated_key'", "'region'", "string collate UTF8_LCASE", "'UTF8_BINARY'"]),
            ("marker_column", ["'marker_column'", "'__RowMarker__'", "rename the column"]),
            ("void_column", ["'void_column'", "column 'nothing' is void", "cast(null as string)"]),
            ("interval_column", ["'interval_column'", "column 'wait' is interval day", "months or microseconds"]),
            ("upper_alias", ["'upper_alias'", ".Orders", ".orders)", "in lower case"]),
            ("misspelt_config", ["'misspelt_config'", "'deleteflag'", "did you mean 'delete_flag'"]),
            ("percent_table", ["'percent_table'", "'%2E%2E'", "percent-decodes"]),
            ("json_snapshot", ["'json_snapshot'", "file_format='json'", "milliseconds", "parquet or delta"]),
            ("located", ["'located'", "location_root='/tmp/openmirror-located'", "Leave it unset"]),
            ("float_struct_key", ["'float_struct_key'", "'k'", "struct<id:int,x:double>", "-0.0 and 0.0", "decimal"]),
            ("accented_alias", ["'accented_alias'", ".café only quoted", "letters a-z"]),
            ("long_alias", ["'long_alias'", "has 233 characters", "at most 232 characters"]),
            ("wide_struct_map", ["'wide_struct_map'", "'s'", "f25:int,when:map<date,int>>", "transform_keys"]),
            ("wide_float_struct_key", ["'wide_float_struct_key'", "'k'", "f25:int,x:double>", "decimal"]),
            ("clashing", ["model 'clashing__om_base'", "beside", ".clashing", "rename one of them"]),
            ("elsewhere", ["'elsewhere'", "landing_zone '/tmp/openmirror-elsewhere'", "package mode's config"]),
        ],
    )
    def test_config_and_name_errors(self, project, landing_zone, model, expected):
        message = self._fails(project, landing_zone, model)
        for fragment in expected:
            assert fragment in message

    def test_a_model_landing_zone_that_is_the_profiles_publishes(self, project, warehouse, landing_zone):
        run_dbt(["run", "--select", "profiles_zone"])
        folder = table_folder(landing_zone, project.test_schema, "profiles_zone")
        assert_mirror_equals(warehouse, folder, f"select * from {project.test_schema}.src")

    def test_a_misspelt_var_is_refused_rather_than_ignored(self, project, landing_zone):
        """Ignored, a misspelt dry run would publish."""
        message = self._fails(project, landing_zone, "rekeyed", "--vars", "{openmirror_dryrun: true}")
        assert '"openmirror_dryrun" is not a dbt-openmirror var' in message
        assert "did you mean openmirror_dry_run" in message

    def test_null_key(self, project, warehouse, landing_zone):
        set_source(
            warehouse, project.test_schema, "select * from values (1, 'eu', 'a'), (2, null, 'b') as t(id, region, name)"
        )
        message = self._fails(project, landing_zone, "pair_key")
        assert "'pair_key'" in message and "NULL" in message
        assert "id=2, region=NULL" in message

    def test_duplicate_key(self, project, warehouse, landing_zone):
        set_source(
            warehouse,
            project.test_schema,
            "select * from values (1, 'eu', 'a'), (1, 'eu', 'b'), (2, 'us', 'c') as t(id, region, name)",
        )
        message = self._fails(project, landing_zone, "pair_key")
        assert "'pair_key'" in message and "not unique" in message
        assert "id=1, region=eu" in message and "2 rows" in message

    def test_changed_unique_key(self, project, warehouse, landing_zone):
        set_source(
            warehouse, project.test_schema, "select * from values (1, 'eu', 'a'), (2, 'us', 'b') as t(id, region, name)"
        )
        message = self._fails(project, landing_zone, "rekeyed", "--vars", "{key: name}")
        assert "'rekeyed'" in message and "['name']" in message and "['id']" in message
        assert "--full-refresh" in message
        # The key change goes through as a rebuild when asked for.
        run_dbt(["run", "--select", "rekeyed", "--vars", "{key: name}", "--full-refresh"])

    def test_text_that_is_not_utf8(self, project, warehouse, landing_zone):
        """Parquet readers refuse such a file (DuckDB refuses it whole): the write fails, naming the
        column and the value with U+FFFD for its bytes, on a first publish and on a change."""
        schema = project.test_schema
        set_source(warehouse, schema, "select * from values (1, 'eu', 'a'), (2, 'us', 'b') as t(id, region, name)")
        for first_publish in (True, False):
            message = self._fails(project, landing_zone, "latin_text", "--vars", "{latin: true}")
            assert "column 'name' holds text that is not valid UTF-8" in message and "'caf\ufffd'" in message
            assert first_publish == (not table_folder(landing_zone, schema, "latin_text").exists())
            run_dbt(["run", "--select", "latin_text"])
            assert_mirror_equals(
                warehouse, table_folder(landing_zone, schema, "latin_text"), f"select * from {schema}.src"
            )
        message = self._fails(project, landing_zone, "latin_text", "--vars", "{latin: true, show: false}")
        assert "column 'name'" in message and "values hidden" in message and "caf" not in message

    def test_a_table_folder_dbt_cannot_write(self, project, warehouse, landing_zone):
        schema = project.test_schema
        run_dbt(["run", "--select", "guarded"])
        set_source(warehouse, schema, "select * from values (1, 'eu', 'a'), (3, 'us', 'c') as t(id, region, name)")
        folder = table_folder(landing_zone, schema, "guarded")
        before = tree_digest(landing_zone)
        with unwritable(folder):
            _, output = run_dbt_and_capture(["run", "--select", "guarded"], expect_pass=False)
        assert tree_digest(landing_zone) == before
        assert "Unhandled error" not in output
        assert str(folder) in output and "write access" in output
        # Once it can write, the next run publishes the change.
        run_dbt(["run", "--select", "guarded"])
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")

    def test_a_model_whose_sql_failed_runs_clean_next_time(self, project, warehouse, landing_zone):
        """A failed statement leaves what Spark wrote of its table: the next run removes it and
        says so, without a warning that --warn-error would turn into a failure."""
        schema = project.test_schema
        message = self._fails(project, landing_zone, "fails_once", "--vars", "{boom: true}")
        assert "boom" in message
        [result] = run_dbt(["run", "--select", "fails_once", "--warn-error"])
        assert result.status == "success"
        assert_mirror_equals(warehouse, table_folder(landing_zone, schema, "fails_once"), f"select * from {schema}.src")

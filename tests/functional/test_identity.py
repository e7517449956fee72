"""What a published table is tied to: its landing zone and table folder (one model, several
landing zones), its owner (two models on one folder), its columns' spelling (names are
case-insensitive in the mirror) and its key's published type (complex keys)."""

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from dbt.tests.util import run_dbt

from tests.support.mirror import (
    assert_local_mirror_equals,
    assert_mirror_equals,
    file_markers,
    set_source,
    table_folder,
    tree_digest,
)
from tests.support.mirror_oracle import data_files

MODEL = """
{{ config(materialized='open_mirror', unique_key='id', on_schema_change=var('on_change', 'append_new_columns')) }}
select * from {{ target.schema }}.src
"""
LANDING_ZONE_VARIABLE = "OPENMIRROR_TEST_LANDING_ZONE"


class TestOneModelSeveralLandingZones:
    """`landing_zone: "{{ env_var(...) }}"`, or dev and prod targets sharing a metastore: the
    snapshot follows one model through several landing zones."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": MODEL}

    @pytest.fixture(scope="class")
    def dbt_profile_target(self, dbt_profile_target):
        default = dbt_profile_target["landing_zone"]
        return {**dbt_profile_target, "landing_zone": f"{{{{ env_var('{LANDING_ZONE_VARIABLE}', '{default}') }}}}"}

    def test_publishing_to_another_landing_zone_and_back_is_never_a_silent_no_op(
        self, project, warehouse, tmp_path, monkeypatch
    ):
        schema = project.test_schema
        first, second = tmp_path / "a", tmp_path / "b"
        first.mkdir(), second.mkdir()
        source = f"select * from {schema}.src"

        def publish(landing_zone, rows):
            monkeypatch.setenv(LANDING_ZONE_VARIABLE, str(landing_zone))
            set_source(warehouse, schema, f"select * from values {rows} as t(id, name)")
            return run_dbt(["run"])[0].adapter_response

        publish(first, "(1, 'a'), (2, 'b')")
        moved = publish(second, "(1, 'a'), (2, 'B')")
        # The new landing zone has no folder yet: the warning says where the snapshot went.
        assert moved["mode"] == "initial"
        assert any(f"the snapshot was published to {first}/" in w and str(second) in w for w in moved["warnings"])
        back = publish(first, "(1, 'a'), (2, 'B')")
        # A still holds 'b': the same change must reach it, by a rebuild that says why.
        assert back["mode"] == "rebuild" and back["files"] == ["00000000000000000001.parquet"]
        assert any(str(second) in w and str(first) in w for w in back["warnings"])
        for landing_zone in (first, second):
            assert_mirror_equals(warehouse, table_folder(landing_zone, schema, "customers"), source)
        again = publish(first, "(1, 'a'), (2, 'B'), (3, 'c')")
        assert again["mode"] == "incremental" and again["warnings"] == []
        assert_mirror_equals(warehouse, table_folder(first, schema, "customers"), source)


class TestAModelGivenAnotherAlias:
    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": MODEL.replace("unique_key='id',", "unique_key='id', alias=var('alias', 'customers'),")}

    def test_its_first_publish_names_the_folder_left_behind(self, project, warehouse, landing_zone):
        schema = project.test_schema
        set_source(warehouse, schema, "select * from values (1, 'a') as t(id, name)")
        run_dbt(["run"])
        [renamed] = run_dbt(["run", "--vars", "{alias: clients}"])
        old, new = table_folder(landing_zone, schema, "customers"), table_folder(landing_zone, schema, "clients")
        assert renamed.adapter_response["mode"] == "initial"
        [warning] = renamed.adapter_response["warnings"]
        assert (
            f"publishing {schema}.schema/clients for the first time; {schema}.schema/customers was published" in warning
        )
        assert "left as last published" in warning
        for folder in (old, new):
            assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")
        again = run_dbt(["run", "--vars", "{alias: clients}"])[0].adapter_response
        assert again["warnings"] == []


class TestAModelFileRenamed:
    """Renaming the model's file renames the model and its relation, as an alias change does: the
    journal of the old folder names the old model, which the project no longer has."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": MODEL}

    def test_its_first_publish_names_the_folder_left_behind(self, project, warehouse, landing_zone):
        schema = project.test_schema
        set_source(warehouse, schema, "select * from values (1, 'a') as t(id, name)")
        run_dbt(["run"])
        models = Path(project.project_root) / "models"
        (models / "customers.sql").rename(models / "clients.sql")
        [renamed] = run_dbt(["run"])
        assert renamed.adapter_response["mode"] == "initial"
        [warning] = renamed.adapter_response["warnings"]
        assert f"{schema}.schema/customers was published by model 'customers', which the project no longer" in warning
        assert "left as last published" in warning
        for name in ("customers", "clients"):
            assert_mirror_equals(warehouse, table_folder(landing_zone, schema, name), f"select * from {schema}.src")


class TestTwoModelsOneTableFolder:
    @pytest.fixture(scope="class")
    def models(self):
        shared = "{{ config(materialized='open_mirror', unique_key='id', mirror_table='shared') }}\n"
        return {
            "first.sql": shared + "select * from {{ target.schema }}.src",
            "second.sql": shared + "select id, upper(name) as name from {{ target.schema }}.src",
        }

    def test_the_second_fails_naming_both_and_writes_nothing(self, project, warehouse, landing_zone):
        schema = project.test_schema
        set_source(warehouse, schema, "select * from values (1, 'a'), (2, 'b') as t(id, name)")
        run_dbt(["run", "--select", "first"])
        before = tree_digest(landing_zone)
        [result] = run_dbt(["run", "--select", "second"], expect_pass=False)
        assert f"{schema}.first" in result.message and f"{schema}.second" in result.message
        assert "mirror_table" in result.message and "--full-refresh" in result.message
        assert tree_digest(landing_zone) == before
        # The owner goes on as before; a deliberate takeover rebuilds the folder.
        assert run_dbt(["run", "--select", "first"])[0].adapter_response["mode"] == "incremental"
        assert run_dbt(["run", "--select", "second", "--full-refresh"])[0].adapter_response["mode"] == "rebuild"
        assert_mirror_equals(
            warehouse, table_folder(landing_zone, schema, "shared"), f"select id, upper(name) as name from {schema}.src"
        )


class TestTableFoldersSpelledAlike:
    @pytest.fixture(scope="class")
    def models(self):
        spelled = "{{ config(materialized='open_mirror', unique_key='id', mirror_table=var('table', 'Orders')) }}\n"
        return {"orders.sql": spelled + "select * from {{ target.schema }}.src"}

    def test_a_table_folder_spelled_like_another_is_refused(self, project, warehouse, landing_zone):
        """Moved to a mirror_table that differs only in case: the mirror is taken to see one table."""
        schema = project.test_schema
        set_source(warehouse, schema, "select * from values (1, 'a') as t(id, name)")
        run_dbt(["run"])
        before = tree_digest(landing_zone)
        [refused] = run_dbt(["run", "--vars", "{table: orders}"], expect_pass=False)
        assert f"{schema}.schema/orders and {schema}.schema/Orders differ only in case" in refused.message
        assert "Nothing was published" in refused.message and "delete that folder" in refused.message
        assert tree_digest(landing_zone) == before
        # The old spelling deleted, as the message says: the new one loads in full.
        shutil.rmtree(landing_zone / f"{schema}.schema" / "Orders")
        assert run_dbt(["run", "--vars", "{table: orders}"])[0].adapter_response["mode"] == "initial"
        assert_mirror_equals(warehouse, landing_zone / f"{schema}.schema" / "orders", f"select * from {schema}.src")


class TestColumnSpelling:
    @pytest.fixture(scope="class")
    def models(self):
        return {"spelled.sql": MODEL}

    def test_a_respelled_column_keeps_the_mirrors_spelling(self, project, warehouse, landing_zone, tmp_path):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "spelled")
        set_source(warehouse, schema, "select * from values (1, 'a'), (2, 'b') as t(id, Name)")
        run_dbt(["run"])
        set_source(warehouse, schema, "select * from values (1, 'a'), (2, 'B') as t(id, name)")
        [result] = run_dbt(["run"])
        assert any("'name' is published as 'Name'" in w for w in result.adapter_response["warnings"])
        set_source(warehouse, schema, "select * from values (1, 'A'), (2, 'B') as t(id, name)")
        run_dbt(["run"])
        # One spelling in every file, also once the snapshot holds the model's own spelling.
        assert [pq.read_schema(p).names[:2] for p in data_files(folder)] == [["id", "Name"]] * 3
        assert_mirror_equals(warehouse, folder, f"select id, name as Name from {schema}.src")
        assert_local_mirror_equals(
            warehouse,
            landing_zone,
            tmp_path / "mirror",
            schema,
            "spelled",
            f"select id, name as Name from {schema}.src",
        )
        # sync_all_columns takes the new spelling by rebuilding the table.
        [rebuilt] = run_dbt(["run", "--vars", "{on_change: sync_all_columns}"])
        assert rebuilt.adapter_response["mode"] == "rebuild"
        assert "'Name' is now spelled 'name'" in rebuilt.adapter_response["warnings"][0]
        assert pq.read_schema(data_files(folder)[-1]).names == ["id", "name"]


class TestComplexKey:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "struct_keyed.sql": "{{ config(materialized='open_mirror', unique_key='k') }}\n"
            "select named_struct('region', region, 'n', n) as k, v from {{ target.schema }}.src",
        }

    def test_a_struct_key_is_json_text_in_every_file(self, project, warehouse, landing_zone, tmp_path):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "struct_keyed")
        expected = f"select to_json(named_struct('region', region, 'n', n)) as k, v from {schema}.src"
        set_source(
            warehouse, schema, "select * from values ('eu', 1, 'a'), ('eu', 2, 'b'), ('us', 1, 'c') as t(region, n, v)"
        )
        run_dbt(["run"])
        set_source(
            warehouse, schema, "select * from values ('eu', 1, 'A'), ('us', 1, 'c'), ('us', 2, 'd') as t(region, n, v)"
        )
        run_dbt(["run"])
        assert [sorted(m) for m in file_markers(folder)] == [[0, 0, 0], [0, 1, 2]]
        assert {str(pq.read_schema(p).field("k").type) for p in data_files(folder)} == {"string"}
        assert_mirror_equals(warehouse, folder, expected)
        assert_local_mirror_equals(warehouse, landing_zone, tmp_path / "mirror", schema, "struct_keyed", expected)

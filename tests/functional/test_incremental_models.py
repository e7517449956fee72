"""Incremental open_mirror models: `is_incremental()` is true on later runs, the run merges the
candidate rows it selected into the snapshot, rows flagged deleted are published as deletes, and
a reconcile run publishes what vanished without a flag. After every run, replaying the landing
zone equals the model's complete output (the source without the rows flagged deleted)."""

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from dbt.tests.util import run_dbt
from pyspark.sql import SparkSession

from dbt.adapters.openmirror.run.held_changes import HeldChanges
from dbt.adapters.openmirror.run.statements import AdapterStatements
from tests.functional.test_publish_modes import HOOK
from tests.support.mirror import (
    assert_local_mirror_equals,
    assert_mirror_equals,
    data_files,
    file_markers,
    findings_for,
    model_output,
    relations,
    set_source,
    table_folder,
    tree_digest,
)

MODEL = """
{{ config(materialized='open_mirror', unique_key='id', delete_flag='deleted',
          reconcile_every=var('reconcile_every', none)) }}
select * from {{ target.schema }}.src
{% if is_incremental() %}
where updated_at >= (select max(updated_at) from {{ this }})
{% endif %}
"""

COLUMNS = "as t(id, name, updated_at, deleted)"
RECONCILE = ["--vars", "{openmirror_reconcile: true}"]


def loader():
    """Another writer of the source: straight on the Spark session, outside dbt's connections."""
    return SparkSession.builder.getOrCreate()


def _source(rows: str) -> str:
    return f"select id, name, updated_at, cast(deleted as boolean) as deleted from values {rows} {COLUMNS}"


class Incremental:
    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": MODEL}

    def publish(self, project, warehouse, rows, args=()):
        set_source(warehouse, project.test_schema, _source(rows))
        [result] = run_dbt(["run", *args])
        return result.adapter_response

    def complete_output(self, project) -> str:
        return f"select id, name, updated_at from {project.test_schema}.src where not deleted"

    def check(self, project, warehouse, landing_zone, tmp_path):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "orders")
        expected = self.complete_output(project)
        assert_mirror_equals(warehouse, folder, expected)
        assert findings_for(landing_zone, folder) == []
        assert model_output(warehouse, f"select * from {schema}.orders") == model_output(warehouse, expected)
        assert_local_mirror_equals(warehouse, landing_zone, tmp_path / "mirror", schema, "orders", expected)
        return folder


class TestCandidatesFlagsAndReconcile(Incremental):
    def test_each_run_publishes_what_changed_among_the_candidates(
        self, project, warehouse, landing_zone, tmp_path, logs_dir
    ):
        base = "(1, 'a', 1, false), (2, 'b', 1, false), (3, 'c', 1, false)"
        response = self.publish(project, warehouse, base)
        folder = self.check(project, warehouse, landing_zone, tmp_path)
        assert response["mode"] == "initial" and file_markers(folder) == [[0, 0, 0]]
        # A run in full writes the complete output once: the model's rows are a view it reads.
        log = (Path(logs_dir) / "dbt.log").read_text("utf-8")
        assert f"create or replace view {project.test_schema}.orders__om_new" in log

        # 2 changes, 3 is flagged deleted, 4 is new; 1 is not a candidate (older updated_at).
        changed = "(1, 'a', 1, false), (2, 'B', 2, false), (3, 'c', 2, true), (4, 'd', 2, false)"
        dry = self.publish(project, warehouse, changed, ["--vars", "{openmirror_dry_run: true}"])
        assert dry["_message"].startswith("dry run, nothing written: +1 ~1 -1") and len(file_markers(folder)) == 1
        response = self.publish(project, warehouse, changed)
        self.check(project, warehouse, landing_zone, tmp_path)
        assert response["mode"] == "incremental"
        assert sorted(file_markers(folder)[-1]) == [0, 1, 2]  # insert 4, update 2, delete 3

        # The candidates (updated_at 2) are what was published: no file.
        response = self.publish(project, warehouse, changed)
        self.check(project, warehouse, landing_zone, tmp_path)
        assert response["files"] == [] and len(file_markers(folder)) == 2

        # Row 1 vanishes without a flag: an incremental run cannot see it...
        vanished = "(2, 'B', 2, false), (3, 'c', 2, true), (4, 'd', 2, false)"
        set_source(warehouse, project.test_schema, _source(vanished))
        run_dbt(["run"])
        assert len(file_markers(folder)) == 2
        assert model_output(warehouse, f"select id from {project.test_schema}.orders") == [
            {"id": 1},
            {"id": 2},
            {"id": 4},
        ]

        # ...a reconcile run runs the model in full and publishes its delete, without a rebuild.
        response = self.publish(project, warehouse, vanished, ["--vars", "{openmirror_reconcile: true}"])
        self.check(project, warehouse, landing_zone, tmp_path)
        assert response["mode"] == "incremental" and file_markers(folder)[-1] == [2]

    def test_the_flag_column_is_not_published(self, project, warehouse, landing_zone):
        folder = table_folder(landing_zone, project.test_schema, "orders")
        for path in sorted(folder.glob("*.parquet")):
            assert "deleted" not in pq.read_schema(path).names


class TestReconcileEvery(Incremental):
    def test_every_second_run_is_in_full(self, project, warehouse, landing_zone, tmp_path):
        args = ["--vars", "{reconcile_every: 2}"]
        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'b', 1, false)", args)
        folder = self.check(project, warehouse, landing_zone, tmp_path)
        # Run 2 selects candidates: 1 vanished unseen.
        self.publish(project, warehouse, "(2, 'b', 1, false), (3, 'c', 2, false)", args)
        assert sorted(file_markers(folder)[-1]) == [0]
        # A reconcile asked for with a misspelt value is refused, not run as a candidate run.
        before = tree_digest(landing_zone)
        [refused] = run_dbt(["run", "--vars", "{reconcile_every: 2, openmirror_reconcile: ture}"], expect_pass=False)
        assert '--vars openmirror_reconcile must be true or false, got "ture"' in refused.message
        assert tree_digest(landing_zone) == before
        # Run 3 is a reconcile: 1's delete is published.
        self.publish(project, warehouse, "(2, 'b', 1, false), (3, 'c', 2, false)", args)
        self.check(project, warehouse, landing_zone, tmp_path)
        assert file_markers(folder)[-1] == [2]


class TestBadCandidates(Incremental):
    def test_a_key_twice_among_the_candidates_is_refused(self, project, warehouse, landing_zone, tmp_path):
        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'b', 1, false)")
        before = tree_digest(landing_zone)
        set_source(warehouse, project.test_schema, _source("(1, 'a', 1, false), (2, 'b', 2, false), (2, 'b', 2, true)"))
        results = run_dbt(["run"], expect_pass=False)
        message = results[0].message
        assert "Model 'orders': unique_key ['id'] is not unique: id=2 appears in 2 rows" in message
        assert tree_digest(landing_zone) == before
        assert sorted(relations(warehouse, project.test_schema)) == ["orders", "orders__om_hashes", "src"]

    def test_a_flag_that_is_not_boolean_is_refused(self, project, warehouse, landing_zone):
        before = tree_digest(landing_zone)
        set_source(
            warehouse,
            project.test_schema,
            "select id, name, updated_at, 1 as deleted from values (5, 'e', 3, 0) as t(id, name, updated_at, x)",
        )
        for args in ([], ["--empty"]):
            results = run_dbt(["run", *args], expect_pass=False)
            assert "delete_flag column 'deleted' is int, not boolean" in results[0].message
            assert tree_digest(landing_zone) == before
            assert sorted(relations(warehouse, project.test_schema)) == ["orders", "orders__om_hashes", "src"]


@pytest.mark.extended
class TestEmptyRunsOfAFlaggedModel(Incremental):
    """`dbt run --empty` checks what a run would publish: the model's columns without its delete
    flag, under `on_schema_change='fail'` too."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": MODEL.replace("reconcile_every=var('reconcile_every', none)", "on_schema_change='fail'")}

    def test_empty_runs_before_and_after_publishing(self, project, warehouse, landing_zone, tmp_path):
        schema = project.test_schema
        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'b', 1, true)", ["--empty"])
        # What downstream models see until the first run: the published columns (the model reads
        # no ref() or source() that --empty would limit, so the rows are there, unflagged only).
        assert warehouse.columns(f"{schema}.orders") == ["id", "name", "updated_at"]
        assert [row["id"] for row in model_output(warehouse, f"select * from {schema}.orders")] == [1]
        assert not list(landing_zone.rglob("*.parquet"))
        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'b', 1, true)")
        self.check(project, warehouse, landing_zone, tmp_path)
        before = tree_digest(landing_zone)
        [result] = run_dbt(["run", "--empty"])
        assert result.adapter_response["mode"] == "empty"
        assert tree_digest(landing_zone) == before
        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'b', 2, false), (3, 'c', 2, false)")
        self.check(project, warehouse, landing_zone, tmp_path)
        before = tree_digest(landing_zone)
        [result] = run_dbt(["run", "--empty"])  # on the overlaid snapshot, a view
        assert tree_digest(landing_zone) == before
        self.check(project, warehouse, landing_zone, tmp_path)


class TestColumnChangesInCandidateRuns(Incremental):
    """A column a candidate run adds is NULL on the snapshot's other rows (as in dbt's own
    incremental models) until a reconcile run fills it; a type change is refused as in any run."""

    def test_an_added_column_then_a_reconcile(self, project, warehouse, landing_zone, tmp_path):
        schema = project.test_schema
        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'b', 2, false)")
        folder = table_folder(landing_zone, schema, "orders")
        with_region = (
            "select id, name, updated_at, cast(deleted as boolean) as deleted, concat('r', id) as region from values"
            " (1, 'a', 1, false), (2, 'B', 3, false) as t(id, name, updated_at, deleted)"
        )
        set_source(warehouse, schema, with_region)
        run_dbt(["run"])
        # Only 2 was a candidate: 1 keeps a NULL region, in the snapshot and in the mirror alike.
        published = f"select id, name, updated_at, region from {schema}.orders"
        assert model_output(warehouse, published) == [
            {"id": 1, "name": "a", "updated_at": 1, "region": None},
            {"id": 2, "name": "B", "updated_at": 3, "region": "r2"},
        ]
        assert_mirror_equals(warehouse, folder, published)
        run_dbt(["run", "--vars", "{openmirror_reconcile: true}"])
        expected = f"select id, name, updated_at, region from {schema}.src where not deleted"
        assert_mirror_equals(warehouse, folder, expected)
        assert_local_mirror_equals(warehouse, landing_zone, tmp_path / "mirror", schema, "orders", expected)

    def test_a_type_change_among_the_candidates_is_refused(self, project, warehouse, landing_zone):
        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'b', 2, false)")
        before = tree_digest(landing_zone)
        as_text = (
            "select id, cast(name as string) as name, cast(updated_at + 10 as string) as updated_at,"
            " cast(deleted as boolean) as deleted, concat('r', id) as region from values"
            " (1, 'a', 1, false), (2, 'B', 3, false) as t(id, name, updated_at, deleted)"
        )
        set_source(warehouse, project.test_schema, as_text)
        results = run_dbt(["run"], expect_pass=False)
        assert "column 'updated_at' int -> string among the rows it selected" in results[0].message
        assert tree_digest(landing_zone) == before


class TestTypeChangesAmongCandidatesOnEveryPath(Incremental):
    """A type change to the snapshot's own type family (string -> int) cannot hide in the merge of
    candidates and snapshot, which would publish it in the old type: a dry run and a run under
    `sync_all_columns` (which merge rather than overlay) refuse it too; a reconcile rebuilds."""

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "orders.sql": MODEL.replace("reconcile_every=", "on_schema_change=var('osc', 'fail'), reconcile_every=")
        }

    def complete_output(self, project) -> str:
        return f"select id, name, updated_at, code from {project.test_schema}.src where not deleted"

    def test_refused_until_a_run_in_full(self, project, warehouse, landing_zone, tmp_path):
        schema = project.test_schema
        coded = (
            "select id, name, updated_at, cast(deleted as boolean) as deleted, cast(id * 10 as {type}) as code"
            " from values {rows} as t(id, name, updated_at, deleted)"
        )
        set_source(warehouse, schema, coded.format(type="string", rows="(1, 'a', 1, false), (2, 'b', 1, false)"))
        run_dbt(["run"])
        before = tree_digest(landing_zone)
        set_source(warehouse, schema, coded.format(type="int", rows="(1, 'a', 1, false), (2, 'B', 2, false)"))
        for args in (["--vars", "{openmirror_dry_run: true}"], ["--vars", "{osc: sync_all_columns}"]):
            [result] = run_dbt(["run", *args], expect_pass=False)
            assert "column 'code' string -> int among the rows it selected" in result.message
            assert tree_digest(landing_zone) == before
        [result] = run_dbt(["run", "--vars", "{osc: sync_all_columns, openmirror_reconcile: true}"])
        assert result.adapter_response["mode"] == "rebuild"
        folder = self.check(project, warehouse, landing_zone, tmp_path)
        assert str(pq.read_schema(data_files(folder)[-1]).field("code").type) == "int32"

    @pytest.mark.extended  # the message alone is tested in test_schema_plan.py
    def test_a_change_the_files_do_not_carry_is_taken_by_any_reconcile(
        self, project, warehouse, landing_zone, tmp_path
    ):
        """A struct's fields travel as JSON text: the change is refused among candidates, and a
        reconcile run under on_schema_change='fail' publishes the changed rows without a rebuild."""
        schema = project.test_schema
        structured = (
            "select id, name, updated_at, cast(deleted as boolean) as deleted, named_struct('{field}', id) as code"
            " from values {rows} as t(id, name, updated_at, deleted)"
        )
        set_source(warehouse, schema, structured.format(field="a", rows="(1, 'a', 1, false), (2, 'b', 1, false)"))
        run_dbt(["run", "--full-refresh"])
        before = tree_digest(landing_zone)
        set_source(warehouse, schema, structured.format(field="b", rows="(1, 'a', 1, false), (2, 'B', 2, false)"))
        [result] = run_dbt(["run"], expect_pass=False)
        assert "column 'code' struct<a:int> -> struct<b:int> among the rows it selected" in result.message
        assert "under any on_schema_change, rebuilding nothing" in result.message
        assert tree_digest(landing_zone) == before
        [result] = run_dbt(["run", *RECONCILE])
        assert result.adapter_response["mode"] != "rebuild"
        folder = table_folder(landing_zone, schema, "orders")
        published = f"select id, name, updated_at, to_json(code) as code from {schema}.src where not deleted"
        assert_mirror_equals(warehouse, folder, published)
        assert findings_for(landing_zone, folder) == []
        assert model_output(warehouse, f"select * from {schema}.orders") == model_output(
            warehouse, self.complete_output(project)
        )


class TestSourceWrittenDuringARunInFull(Incremental):
    """A run in full of a `delete_flag` model reads its output, a view, twice: once to check its
    keys, once to write the complete output. A source written between the two reads (a loader
    syncing while dbt runs) cannot slip a key the first check never saw into the mirror: the
    complete output's keys are checked again by the diff, and the snapshot and the mirror follow
    what the second read wrote."""

    def test_writes_between_the_reads(self, project, warehouse, landing_zone, tmp_path, monkeypatch):
        schema = project.test_schema
        self.publish(project, warehouse, "(1, 'a', 1, false), (2, 'b', 1, false)")
        self.check(project, warehouse, landing_zone, tmp_path)
        before = tree_digest(landing_zone)
        execute = AdapterStatements.execute

        def loader_writes_between_the_reads(written):
            def execute_then_write(statements, macro, **values):
                if macro == "openmirror_complete_output_sql":
                    loader().sql(f"insert overwrite table {schema}.src values {written}")
                execute(statements, macro, **values)

            monkeypatch.setattr(AdapterStatements, "execute", execute_then_write)

        # A key twice: refused, nothing published.
        loader_writes_between_the_reads("(1, 'a', 1, false), (2, 'b', 1, false), (2, 'B', 2, false)")
        results = run_dbt(["run", *RECONCILE], expect_pass=False)
        assert "Model 'orders': unique_key ['id'] is not unique: id=2" in results[0].message
        assert tree_digest(landing_zone) == before
        # A row flagged deleted: the complete output left it out, and so does the mirror.
        set_source(warehouse, schema, _source("(1, 'a', 1, false), (2, 'b', 1, false)"))
        loader_writes_between_the_reads("(1, 'a', 1, false), (2, 'b', 2, true)")
        response = run_dbt(["run", *RECONCILE])[0].adapter_response
        assert response["deletes"] == 1
        monkeypatch.undo()
        self.check(project, warehouse, landing_zone, tmp_path)


HELD_MODEL = """
{{ config(materialized='open_mirror', unique_key='id', delete_flag='deleted', publish='after_tests') }}
select * from {{ target.schema }}.src
{% if is_incremental() %}
where updated_at > (select max(updated_at) from {{ this }})
{% endif %}
"""


def _die_before_the_end(held_changes, results, graph):
    """The invocation dies before its on-run-end hook: its held changes are neither published nor
    discarded, and their leases lapse (released here, as a takeover would find them)."""
    with held_changes._lock:
        held, held_changes._held = held_changes._held, []
    for change in held:
        change.heartbeat.stop()
        held_changes.context.leases.release(change.lease)
    return []


class TestAHeldFirstPublishWhoseInvocationDied(Incremental):
    """The first run of a `publish='after_tests'` model holds its change and dies. The next run
    discards it, which drops `{{ this }}` (nothing was published before), so its model must not
    read `{{ this }}`: `is_incremental()` is false and the run publishes its own first load."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": HELD_MODEL}

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return HOOK

    def test_the_next_run_runs_in_full_and_publishes_once(self, project, warehouse, landing_zone, tmp_path):
        set_source(warehouse, project.test_schema, _source("(1, 'a', 1, false), (2, 'b', 1, false)"))
        with pytest.MonkeyPatch.context() as patched:
            patched.setattr(HeldChanges, "finish", _die_before_the_end)
            run_dbt(["build"])
        folder = table_folder(landing_zone, project.test_schema, "orders")
        assert file_markers(folder) == []  # held, never published
        set_source(
            warehouse, project.test_schema, _source("(1, 'a', 1, false), (2, 'B', 2, false), (3, 'c', 2, false)")
        )
        [result] = [r for r in run_dbt(["build"]) if r.node.name == "orders"]
        assert result.adapter_response["mode"] == "held: initial"
        assert "max(updated_at)" not in result.node.compiled_code
        self.check(project, warehouse, landing_zone, tmp_path)
        assert file_markers(folder) == [[0, 0, 0]]


VALUES = "id > {{ var('deleted_from', 99) }} as deleted, if(id <= 2, 'v{{ var('round', 1) }}', 'v1') as v"
CANDIDATES = "{% if is_incremental() %} where id <= 2 or id > {{ var('deleted_from', 99) }} {% endif %}"
WIDE_SOURCE = (
    "{{ config(materialized='table') }}\nselect id, "
    "{% for n in range(1000) %}id * {{ n }} as column_with_a_long_descriptive_name_{{ '%04d' % n }}, {% endfor %}"
    f"{VALUES} from range(1, 6)"
)
LONG_SQL = (
    "{{ config(materialized='open_mirror', unique_key='id', delete_flag='deleted') }}\nselect id, "
    "{% for n in range(600) %}case when id = {{ n }} then 'value number {{ n }}' else 'other' end as c{{ n }}, "
    f"{{% endfor %}}{VALUES} from range(1, 6) {CANDIDATES}"
)


@pytest.mark.extended
class TestWhatTheEmbeddedMetastoreCannotKeep:
    """Derby, the metastore of a session profile, keeps 32,700 characters of a table property
    or a view's text: the records of a wide table's columns are stored in parts, a model whose
    SQL is longer is built as a table, and a snapshot whose view would name its columns at
    greater length is merged rather than overlaid."""

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "wide_source.sql": WIDE_SOURCE,
            "wide.sql": "{{ config(materialized='open_mirror', unique_key='id', delete_flag='deleted') }}\n"
            f"select * from {{{{ ref('wide_source') }}}} {CANDIDATES}",
            "long_sql.sql": LONG_SQL,
        }

    def test_wide_tables_and_long_models_publish_every_run(self, project, warehouse, landing_zone):
        schema = project.test_schema
        for round_, deleted_from in ((1, 99), (2, 99), (3, 4)):
            run_dbt(["run", "--vars", f"{{round: {round_}, deleted_from: {deleted_from}}}"])
            expected = [{"id": i, "v": f"v{round_}" if i <= 2 else "v1"} for i in range(1, 6) if i <= deleted_from]
            for name in ("wide", "long_sql"):
                folder = table_folder(landing_zone, schema, name)
                assert_mirror_equals(warehouse, folder, f"select * from {schema}.{name}")
                assert model_output(warehouse, f"select id, v from {schema}.{name}") == expected
        assert len(data_files(table_folder(landing_zone, schema, "wide"))) == 3

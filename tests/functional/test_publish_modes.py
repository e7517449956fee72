"""Runs that publish differently: `--empty` publishes nothing, a dry run reports what it would
publish and writes nothing, and `publish='after_tests'` publishes only what passed its tests."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from dbt.tests.util import run_dbt, run_dbt_and_capture
from pyspark.sql import SparkSession

from tests.support.audited_models import AUDITED, AUDITED_TESTS, ORDERS_TESTS, SCHEMA_HEADER
from tests.support.mirror import (
    SAMPLED_MODELS,
    SAMPLED_ROWS,
    SAMPLED_SOURCE,
    assert_mirror_equals,
    file_markers,
    model_output,
    set_source,
    table_folder,
    tree_digest,
)
from tests.support.mirror_oracle import replay
from tests.support.unwritable import unwritable

MODEL = """
{{ config(materialized='open_mirror', unique_key='id', publish=var('publish', 'on_run')) }}
select * from {{ target.schema }}.src
"""
DRY_RUN = ["--vars", "{openmirror_dry_run: true}"]


class TestEmptyRuns:
    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": MODEL, "downstream.sql": "select * from {{ ref('customers') }}"}

    def test_empty_runs_check_and_publish_nothing(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        set_source(warehouse, schema, "select * from values (1, 'a'), (2, 'b') as t(id, name)")
        # Before anything was published: checked, nothing written, and downstream models build.
        results = run_dbt(["run", "--empty"])
        assert [r.status for r in results] == ["success", "success"]
        assert "--empty" in results[0].message and "nothing published" in results[0].message
        assert tree_digest(landing_zone) == {}
        assert run_dbt(["run"])[0].adapter_response["mode"] == "initial"

        # An empty output would delete every row: never published.
        before, snapshot = tree_digest(landing_zone), model_output(warehouse, f"select * from {schema}.customers")
        [result, _] = run_dbt(["run", "--empty"])
        assert result.adapter_response["mode"] == "empty" and result.adapter_response["files"] == []
        assert tree_digest(landing_zone) == before
        assert model_output(warehouse, f"select * from {schema}.customers") == snapshot

        # It still checks: a type change fails as a run would.
        set_source(warehouse, schema, "select * from values (1, 1.5), (2, 2.5) as t(id, name)")
        results = run_dbt(["run", "--empty", "--select", "customers"], expect_pass=False)
        assert "column 'name' string -> decimal(2,1)" in results[0].message
        assert tree_digest(landing_zone) == before

        # The next normal run is an ordinary incremental one.
        set_source(warehouse, schema, "select * from values (1, 'a'), (2, 'B') as t(id, name)")
        [result, _] = run_dbt(["run"])
        assert result.adapter_response["mode"] == "incremental" and file_markers(folder)[-1] == [1]
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")


@pytest.mark.extended
class TestSampledRuns:
    """`dbt run --sample` filters every input that has an `event_time` to the sample's window, and
    the models built from it then hold the sample: a model with such a node upstream builds part
    of its rows, so its run publishes nothing (the rows outside the window would be published as
    deletes). A model with none upstream reads its inputs whole and publishes as usual."""

    @pytest.fixture(scope="class")
    def models(self):
        return {
            **SAMPLED_MODELS,
            "staged.sql": "{{ config(materialized='view') }}\nselect * from {{ ref('events') }}",
            "through_view.sql": SAMPLED_MODELS["customers.sql"].replace("ref('events')", "ref('staged')"),
            "whole.sql": MODEL,
        }

    def test_a_sampled_input_publishes_nothing(self, project, warehouse, landing_zone):
        schema = project.test_schema
        sampled = ("customers", "through_view")
        whole = table_folder(landing_zone, schema, "whole")
        set_source(warehouse, schema, SAMPLED_SOURCE.format(rows=SAMPLED_ROWS))
        run_dbt(["run"])
        before = {name: tree_digest(table_folder(landing_zone, schema, name)) for name in sampled}
        snapshots = {name: model_output(warehouse, f"select * from {schema}.{name}") for name in sampled}

        set_source(warehouse, schema, SAMPLED_SOURCE.format(rows=SAMPLED_ROWS.replace("'b'", "'B'")))
        results = {r.node.name: r for r in run_dbt(["run", "--sample", "1 day"])}
        for name in sampled:
            assert results[name].message == (
                f"--sample filters events, upstream of this model: columns and unique_key checked, "
                f"nothing published to {schema}.schema/{name}"
            )
            assert results[name].adapter_response["mode"] == "sample"
            assert tree_digest(table_folder(landing_zone, schema, name)) == before[name]
            assert model_output(warehouse, f"select * from {schema}.{name}") == snapshots[name]
        # A model reading no sampled input publishes its change.
        assert results["whole"].adapter_response["mode"] == "incremental"
        assert file_markers(whole)[-1] == [1]
        assert_mirror_equals(warehouse, whole, f"select * from {schema}.src")

        # The next run in full publishes the change the sampled run did not.
        run_dbt(["run"])
        for name in sampled:
            folder = table_folder(landing_zone, schema, name)
            assert file_markers(folder)[-1] == [1]
            assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")


class TestDryRun:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "customers.sql": MODEL,
            "split.sql": "{{ config(materialized='open_mirror', unique_key='id', max_rows_per_file=2) }}\n"
            "select * from {{ target.schema }}.src",
        }

    def test_a_dry_run_reports_what_the_next_run_publishes_and_writes_nothing(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        set_source(warehouse, schema, "select * from values (1, 'a'), (2, 'b'), (3, 'c') as t(id, name)")
        [first, _] = run_dbt(["run", *DRY_RUN])
        assert first.message.startswith(
            f"dry run, nothing written: +3 ~0 -0 -> {schema}.schema/customers/00000000000000000001.parquet"
        )
        assert tree_digest(landing_zone) == {}
        run_dbt(["run"])

        set_source(warehouse, schema, "select * from values (1, 'a'), (2, 'B'), (4, 'd'), (5, 'e') as t(id, name)")
        before, snapshot = tree_digest(landing_zone), model_output(warehouse, f"select * from {schema}.customers")
        # A dry run asked for without a value, or misspelt, is refused rather than run for real.
        for typed in ("{openmirror_dry_run}", "{openmirror_dry_run: treu}"):
            results = run_dbt(["run", "--vars", typed, "--select", "customers"], expect_pass=False)
            assert "--vars openmirror_dry_run must be true or false, got " in results[0].message, typed
        assert tree_digest(landing_zone) == before
        dry = {r.node.name: r for r in run_dbt(["run", *DRY_RUN])}
        assert tree_digest(landing_zone) == before
        assert model_output(warehouse, f"select * from {schema}.customers") == snapshot
        predicted = dry["customers"].adapter_response
        assert (predicted["inserts"], predicted["updates"], predicted["deletes"]) == (2, 1, 1)
        assert predicted["files"] == ["00000000000000000002.parquet"]
        assert dry["split"].adapter_response["files"] == [f"{n:020d}.parquet" for n in (3, 4)]

        real = {r.node.name: r.adapter_response for r in run_dbt(["run"])}
        for name in ("customers", "split"):
            for field in ("inserts", "updates", "deletes", "files", "table_folder"):
                assert real[name][field] == dry[name].adapter_response[field], (name, field)
        assert sorted(file_markers(folder)[-1]) == [0, 0, 1, 2]


HOOK = {"on-run-end": ["{{ openmirror_publish_audited(results) }}"]}


class TestWriteAuditPublish:
    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": AUDITED, "payments.sql": AUDITED, "schema.yml": AUDITED_TESTS}

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return HOOK

    def test_only_changes_that_passed_their_tests_are_published(self, project, warehouse, landing_zone):
        schema = project.test_schema
        good = "select * from values (1, 10), (2, 20) as t(id, amount)"
        for table in ("orders", "payments"):
            set_source(warehouse, schema, good, name=f"src_{table}")
        run_dbt(["build"])
        published = {t: replay(table_folder(landing_zone, schema, t)) for t in ("orders", "payments")}

        # One build: orders' change breaks its test, payments' passes.
        set_source(
            warehouse, schema, "select * from values (1, 10), (2, null), (3, 30) as t(id, amount)", name="src_orders"
        )
        set_source(warehouse, schema, "select * from values (1, 11), (3, 30) as t(id, amount)", name="src_payments")
        orders_snapshot = model_output(warehouse, f"select * from {schema}.orders")
        results = {r.node.unique_id: r for r in run_dbt(["build"], expect_pass=False)}
        assert results["model.test.orders"].status == "success"
        assert "after its tests pass" in results["model.test.orders"].message
        # Not published: the mirror and the snapshot are where they were, nothing is left staged.
        assert replay(table_folder(landing_zone, schema, "orders")) == published["orders"]
        assert model_output(warehouse, f"select * from {schema}.orders") == orders_snapshot
        assert not list((landing_zone / "_scratchPad" / "dbt-openmirror").glob("*-*/*.parquet"))
        assert_mirror_equals(
            warehouse, table_folder(landing_zone, schema, "payments"), f"select * from {schema}.src_payments"
        )

        # Fixed: the next build publishes the change against the snapshot it still has.
        set_source(
            warehouse, schema, "select * from values (1, 10), (2, 21), (3, 30) as t(id, amount)", name="src_orders"
        )
        run_dbt(["build"])
        assert_mirror_equals(
            warehouse, table_folder(landing_zone, schema, "orders"), f"select * from {schema}.src_orders"
        )
        assert sorted(file_markers(table_folder(landing_zone, schema, "orders"))[-1]) == [0, 1]

    def test_without_its_tests_a_change_is_not_published(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "orders")
        set_source(warehouse, schema, "select * from values (1, 99) as t(id, amount)", name="src_orders")
        before = replay(folder)
        snapshot = model_output(warehouse, f"select * from {schema}.orders")
        results = run_dbt(["run", "--select", "orders"])  # `dbt run` runs no tests
        result = next(r for r in results if r.node.name == "orders")
        assert replay(folder) == before
        # Known before the model runs: it only reports, as a dry run, and says why (a warning).
        assert result.status == "warn" and result.message.startswith("dry run, nothing written: ")
        assert any("this invocation does not run test.test." in w for w in result.adapter_response["warnings"])
        assert model_output(warehouse, f"select * from {schema}.orders") == snapshot
        # One of its tests excluded from a build: the same.
        results = run_dbt(["build", "--select", "orders", "--exclude", "not_null_orders_amount"])
        result = next(r for r in results if r.node.name == "orders")
        assert result.status == "warn" and replay(folder) == before

    def test_a_publish_that_fails_in_the_hook_is_the_hooks_error(self, project, warehouse, landing_zone):
        """Raised while dbt renders the hook, a failure was reported as a keyboard interrupt with
        ERROR=0 and no hook result; the hook's statement now fails with it."""
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "orders")
        set_source(warehouse, schema, "select * from values (1, 10), (5, 50) as t(id, amount)", name="src_orders")
        with unwritable(folder):
            results, output = run_dbt_and_capture(["build", "--select", "orders"], expect_pass=False)
        assert "keyboard interrupt" not in output
        [hook] = [r for r in results if r.node.resource_type == "operation"]
        assert hook.status == "error" and "Model 'orders'" in hook.message and "write access" in hook.message
        # The journal holds the change: the next build finishes its publish.
        run_dbt(["build", "--select", "orders"])
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src_orders")


DUPLICATED_AFTER_ORDERS = """
{{ config(materialized='open_mirror', unique_key='id') }}
select id from {{ ref('orders') }} union all select 3 as id
"""


# One of orders' tests reads zz_duplicated too, so it runs after zz_duplicated failed, if at all.
TESTS_AFTER_ZZ = (
    SCHEMA_HEADER
    + ORDERS_TESTS
    + """
      - name: id
        tests:
          - relationships: {to: ref('zz_duplicated'), field: id}
"""
)


class TestWriteAuditPublishFailFast:
    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": AUDITED, "schema.yml": TESTS_AFTER_ZZ, "zz_duplicated.sql": DUPLICATED_AFTER_ORDERS}

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return HOOK

    def test_fail_fast_after_a_change_was_held_still_settles_it(self, project, warehouse, landing_zone):
        """--fail-fast cancels the nodes still running, then runs the on-run-end hook: its
        statements failed as cancelled, dbt reported a keyboard interrupt, and the change stayed
        held as `{{ this }}` until the next run. Here orders' change is held, zz_duplicated fails,
        and one of orders' tests never runs: the change is discarded."""
        schema = project.test_schema
        set_source(warehouse, schema, "select * from values (1, 10), (2, 20) as t(id, amount)", name="src_orders")
        run_dbt(["build"])  # zz_duplicated's key 3 is not a duplicate yet
        folder = table_folder(landing_zone, schema, "orders")
        published = replay(folder)
        snapshot = model_output(warehouse, f"select * from {schema}.orders")
        set_source(warehouse, schema, "select * from values (1, 10), (3, 30) as t(id, amount)", name="src_orders")
        results, output = run_dbt_and_capture(["build", "--fail-fast", "--threads", "1"], expect_pass=False)
        assert "keyboard interrupt" not in output
        assert "Model 'orders': not published" in output
        statuses = {r.node.name: r.status for r in results}
        assert (statuses["orders"], statuses["zz_duplicated"]) == ("success", "error")
        assert replay(folder) == published and model_output(warehouse, f"select * from {schema}.orders") == snapshot
        properties = SparkSession.builder.getOrCreate().sql(f"show tblproperties {schema}.orders").collect()
        assert "openmirror.held" not in {row["key"] for row in properties}


class TestWriteAuditPublishNeedsItsHook:
    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": AUDITED}

    def test_a_project_without_the_hook_is_told_what_to_add(self, project, warehouse, landing_zone):
        set_source(warehouse, project.test_schema, "select * from values (1, 10) as t(id, amount)", name="src_orders")
        [result] = run_dbt(["run"], expect_pass=False)
        assert "on-run-end" in result.message and "openmirror_publish_audited(results)" in result.message
        assert tree_digest(landing_zone) == {}


WAP_PROJECT_MODEL = """
{{ config(materialized='open_mirror', unique_key='id', publish='after_tests') }}
select * from values {{ var('rows') }} as t(id, amount)
"""
SLOW_TEST = """
select 1 as failing from range({{ var('slow_rows', 1) }}) a cross join range(2000) b where a.id * b.id < 0
"""


@pytest.mark.extended
def test_a_held_change_whose_invocation_died_is_discarded(tmp_path, spark_settings):
    """The invocation is killed while the tests of a held change run (before its on-run-end
    hook): the next run discards the change, and publishes its own once."""
    root = tmp_path / "project"
    (root / "models").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "models" / "held.sql").write_text(WAP_PROJECT_MODEL)
    (root / "tests" / "slow.sql").write_text("-- depends_on: {{ ref('held') }}\n" + SLOW_TEST)
    (root / "dbt_project.yml").write_text(
        yaml.safe_dump({"name": "wap", "version": "1.0", "config-version": 2, "profile": "wap", **HOOK})
    )
    spark = root / "spark"
    settings = {
        **spark_settings,
        "spark.sql.warehouse.dir": str(spark / "warehouse"),
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={spark / 'metastore_db'};create=true",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={spark}",
    }
    landing_zone = root / "landing_zone"
    landing_zone.mkdir()
    (root / "profiles.yml").write_text(
        yaml.safe_dump(
            {
                "wap": {
                    "target": "dev",
                    "outputs": {
                        "dev": {
                            "type": "openmirror",
                            "method": "session",
                            "host": "localhost",
                            "schema": "wap",
                            "landing_zone": str(landing_zone),
                            "server_side_parameters": settings,
                        }
                    },
                }
            }
        )
    )
    folder = landing_zone / "wap.schema" / "held"

    def build(rows, slow_rows=1):
        command = [
            str(Path(sys.executable).parent / "dbt"),
            "build",
            "--project-dir",
            str(root),
            "--profiles-dir",
            str(root),
            "--vars",
            json.dumps({"rows": rows, "slow_rows": slow_rows}),
        ]
        return subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    # Killed while the slow test runs: the output is {{ this }} for the tests, staged, unpublished.
    killed = build("(1, 10), (2, 20)", slow_rows=2_000_000)
    snapshot = spark / "warehouse" / "wap.db" / "held"
    deadline = time.monotonic() + 300
    while not snapshot.exists() and time.monotonic() < deadline and killed.poll() is None:
        time.sleep(0.5)
    assert snapshot.exists(), killed.stdout.read()[-3000:] if killed.poll() is not None else "no snapshot"
    time.sleep(2)  # into the slow test
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=60)
    assert not folder.exists()
    again = build("(1, 10), (2, 21)")
    output = again.communicate(timeout=600)[0]
    assert again.returncode == 0, output[-3000:]
    assert "was not published and is discarded" in output and "took over the lease" in output
    assert sorted(replay(folder), key=lambda r: r["id"]) == [{"id": 1, "amount": 10}, {"id": 2, "amount": 21}]
    assert file_markers(folder) == [[0, 0]]
    assert not list((landing_zone / "_scratchPad" / "dbt-openmirror").glob("*-*/*.parquet"))

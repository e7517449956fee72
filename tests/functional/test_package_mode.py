"""Package mode: the repository installed from a local path through packages.yml, on a stock
`type: spark` connection, stages runs; `dbt-openmirror publish` publishes them. After every
publish, replaying the landing zone in file order gives exactly the model output."""

import json
import shutil
from urllib.parse import urlparse

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from dbt.adapters.openmirror.package.constants import manifest_columns
from dbt.adapters.openmirror.package.publish import MANIFEST_FOLDER, PACKAGE_RUN_ID, PackagePublisher, read_manifest
from dbt.adapters.openmirror.storage import LocalStorage
from dbt.adapters.openmirror.tools.cli import main as openmirror_command
from tests.support.audited_models import AUDITED, AUDITED_TESTS
from tests.support.delta_reader import read_delta
from tests.support.mirror import (
    SAMPLED_MODELS,
    SAMPLED_ROWS,
    SAMPLED_SOURCE,
    assert_local_mirror_equals,
    assert_mirror_equals,
    file_markers,
    findings_for,
    model_output,
    normalized,
    rewrite_key_hashes,
    set_source,
    sorted_bucket_scans,
    table_folder,
    tree_digest,
    wait_until_mirrored,
    watching_mirror,
)
from tests.support.mirror_oracle import data_files, replay
from tests.support.package_mode import (
    MODEL,
    InPackageMode,
    manifest_rows,
    manifest_states,
    publish,
)

COLUMNS = "as t(id, name, amount)"
MANIFEST_COLUMNS = manifest_columns()
#: A package-mode twin of behaviour the default run tests in plugin mode: extended tier.
PLUGIN_TWIN = pytest.mark.extended


def _stage(project, warehouse, rows: str, columns: str = COLUMNS, extra_args=()):
    set_source(warehouse, project.test_schema, f"select * from values {rows} {columns}")
    return run_dbt(["run", *extra_args])[0]


class TestPackageMode(InPackageMode):
    def test_staged_runs_publish_in_order_exactly_once(self, project, warehouse, landing_zone, tmp_path, capsys):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        source = f"select * from {schema}.src"

        # A first load: staged only, nothing in the table folder until published.
        result = _stage(project, warehouse, "(1, 'a', 10), (2, 'b', 20), (3, 'c', 30)")
        assert result.adapter_response["code"] == "STAGED"
        # Spark trusted declared bucket orders only while the diff ran.
        assert sorted_bucket_scans(project) == "false"
        assert not folder.exists()
        assert manifest_states(landing_zone) == ["staged"]
        # The publish knows a model's runs by their ids (abandoned_staging).
        assert all(PACKAGE_RUN_ID.fullmatch(r.run_id) for r in read_manifest(LocalStorage(landing_zone)))
        assert [r.load for r in publish(landing_zone)] == ["full"]
        assert file_markers(folder) == [[0, 0, 0]]
        assert_mirror_equals(warehouse, folder, source)
        assert publish(landing_zone) == []  # nothing staged: nothing happens
        properties = dict(project.run_sql(f"show tblproperties {schema}.customers", fetch="all"))
        assert properties["test.post_hook"] == "ran"

        # No change: the run is recorded and published without a file.
        _stage(project, warehouse, "(1, 'a', 10), (2, 'b', 20), (3, 'c', 30)")
        assert [r.rows for r in publish(landing_zone)] == [0]
        assert len(file_markers(folder)) == 1

        # Two runs staged before anyone publishes: published in staging order.
        _stage(project, warehouse, "(1, 'a', 11), (3, 'c', 30), (4, 'd', 40)")
        _stage(project, warehouse, "(1, 'a', 11), (4, 'd', 41), (5, 'e', 50)")
        assert openmirror_command(["status", str(landing_zone)]) == 0
        status = capsys.readouterr().out
        assert status.count("'customers' (changes, 3 rows), staged") == 2
        assert [r.rows for r in publish(landing_zone)] == [3, 3]
        assert [sorted(m) for m in file_markers(folder)] == [[0, 0, 0], [0, 1, 2], [0, 1, 2]]
        assert_mirror_equals(warehouse, folder, source)
        assert findings_for(landing_zone, folder) == []

        # A new column is published in place; the mirror's values for old rows are NULL.
        _stage(
            project,
            warehouse,
            "(1, 'a', 11, 'x'), (4, 'd', 41, null), (5, 'e', 50, null)",
            "as t(id, name, amount, note)",
        )
        publish(landing_zone)
        assert_mirror_equals(warehouse, folder, source)
        # A dropped column stays, NULL from now on, in the snapshot and in the mirror.
        _stage(project, warehouse, "(1, 'a', 11), (4, 'd', 42)")
        publish(landing_zone)
        assert "note" in warehouse.columns(f"{schema}.customers")
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.customers")

        # --full-refresh stages the whole table; the publish rebuilds the table folder.
        _stage(project, warehouse, "(7, 'g', 70), (8, 'h', 80)", extra_args=["--full-refresh"])
        assert [r.load for r in publish(landing_zone)] == ["full"]
        assert file_markers(folder) == [[0, 0]]
        assert_mirror_equals(warehouse, folder, source)
        assert set(manifest_states(landing_zone)) == {"published"}
        assert findings_for(landing_zone, folder) == []
        assert_local_mirror_equals(warehouse, landing_zone, tmp_path / "mirror", schema, "customers", source)

    def test_bad_keys_fail_before_staging(self, project, warehouse, landing_zone):
        before = tree_digest(landing_zone)
        set_source(
            warehouse, project.test_schema, f"select * from values (1, 'a', 1), (1, 'b', 2), (2, 'c', 3) {COLUMNS}"
        )
        results = run_dbt(["run"], expect_pass=False)
        message = results[0].message
        assert "Model 'customers'" in message and "['id'] is not unique: id=1 appears in 2 rows" in message
        # A failed key check leaves no setting behind for the invocation's later models.
        assert sorted_bucket_scans(project) == "false"
        set_source(warehouse, project.test_schema, f"select * from values (1, 'a', 1), (null, 'b', 2) {COLUMNS}")
        message = run_dbt(["run"], expect_pass=False)[0].message
        assert "['id'] has NULL values, e.g. the row with id=NULL" in message
        assert tree_digest(landing_zone) == before

        # Against a snapshot, keys are checked in the changed-keys join.
        _stage(project, warehouse, "(1, 'a', 1), (2, 'c', 3)")
        before = tree_digest(landing_zone)
        set_source(
            warehouse, project.test_schema, f"select * from values (1, 'a', 1), (2, 'b', 2), (2, 'c', 3) {COLUMNS}"
        )
        message = run_dbt(["run"], expect_pass=False)[0].message
        assert "['id'] is not unique: id=2 appears in 2 rows" in message
        assert sorted_bucket_scans(project) == "false"
        assert tree_digest(landing_zone) == before

    def test_the_next_run_settles_an_interrupted_one(self, project, warehouse, landing_zone):
        """dbt stopped between staging and advancing {{ this }}, or between advancing it and
        recording that: the next run settles the earlier one; nothing is lost or published twice."""
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        source = f"select * from {schema}.src"
        _stage(project, warehouse, "(1, 'a', 10), (2, 'b', 20)", extra_args=["--full-refresh"])
        publish(landing_zone)

        # Stopped after advancing {{ this }}: drop the run's `staged` row, as if never written.
        _stage(project, warehouse, "(1, 'a', 11), (2, 'b', 20), (3, 'c', 30)")
        staged_row = max(
            (r for r in manifest_rows(landing_zone) if r["state"] == "staged"), key=lambda r: r["recorded_at"]
        )
        staged_row["file"].unlink()
        warehouse.run(f"refresh table {schema}.openmirror_manifest")  # the file went behind Spark's back
        assert manifest_states(landing_zone)[-1] == "staging"
        # Stopped before advancing {{ this }}: a staged folder and a `staging` row of a run whose
        # output never became the snapshot (written here as a copy of the row above).
        warehouse.run(
            f"insert into {schema}.openmirror_manifest select 'lost-run', model, table_folder, key_columns, "
            f"base_run_id, load, reason, staged_sequence + 1, '_scratchPad/dbt-openmirror/lost-run', rows, "
            f"marker_counts, 'staging', current_timestamp(), relation from {schema}.openmirror_manifest "
            f"where run_id = '{staged_row['run_id']}' and state = 'staging'"
        )
        lost = landing_zone / "_scratchPad" / "dbt-openmirror" / "lost-run"
        lost.mkdir()
        (lost / "part-00000.parquet").write_bytes(b"not published")

        _stage(project, warehouse, "(1, 'a', 11), (3, 'c', 31)")
        states = {r.run_id: r.state for r in read_manifest(LocalStorage(landing_zone))}
        assert states["lost-run"] == "discarded"
        assert [r.rows for r in publish(landing_zone)] == [2, 2]
        assert not lost.exists()
        assert_mirror_equals(warehouse, folder, source)
        assert findings_for(landing_zone, folder) == []

    def test_changes_are_found_by_key_hashes_that_belong_to_the_snapshot(self, project, warehouse, landing_zone):
        """The package diffs by the key hashes table when the run that wrote the snapshot wrote it
        too, over the same columns, and compares whole rows otherwise."""
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        hashes = f"{schema}.customers__om_hashes"
        rows = "(1, 'a', 10), (2, 'b', 20), (3, 'c', 30)"
        _stage(project, warehouse, rows, extra_args=["--full-refresh"])
        publish(landing_zone)
        snapshot_properties = dict(project.run_sql(f"show tblproperties {schema}.customers", fetch="all"))
        snapshot_run = snapshot_properties["openmirror.staged_run_id"]
        hashes_properties = dict(project.run_sql(f"show tblproperties {hashes}", fetch="all"))
        assert hashes_properties["openmirror.run_id"] == snapshot_run
        described = dict(
            (str(k).strip(), str(v).strip())
            for k, v, *_ in project.run_sql(f"describe table extended {hashes}", fetch="all")
        )
        assert (described["Num Buckets"], described["Bucket Columns"]) == ("1", "[`id`]")

        # Hashes wrong for every row but stamped by the snapshot's run are trusted: every row is
        # staged as an update (the same values, so the mirror stays equal to the output).
        rewrite_key_hashes(warehouse, hashes, "id", hash1_offset=1)
        _stage(project, warehouse, rows)
        assert [r.marker_counts for r in publish(landing_zone)] == [{"1": 3}]
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")

        # Stamped by another run: not trusted; whole rows are compared and nothing changed.
        rewrite_key_hashes(warehouse, hashes, "id", hash1_offset=1, run_id="another run")
        _stage(project, warehouse, rows)
        assert [r.rows for r in publish(landing_zone)] == [0]
        assert len(file_markers(folder)) == 2


@pytest.mark.extended
class TestPackageModeWithoutKeyHashes(InPackageMode):
    """var openmirror_key_hashes: false (where managed tables must be Delta): no key hashes tables,
    whole rows are compared and the key is checked on the output, with the same results."""

    @pytest.fixture(scope="class")
    def project_config_update(self, landing_zone):
        return {"vars": {"openmirror_landing_zone": str(landing_zone), "openmirror_key_hashes": False}}

    def test_whole_rows_are_compared_and_no_hashes_are_kept(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        _stage(project, warehouse, "(1, 'a', 10), (2, 'b', 20), (3, 'c', 30)")
        _stage(project, warehouse, "(1, 'a', 11), (3, 'c', 30), (4, 'd', 40)")
        assert [r.rows for r in publish(landing_zone)] == [3, 3]
        assert [sorted(m) for m in file_markers(folder)] == [[0, 0, 0], [0, 1, 2]]
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")
        tables = {str(row[1]) for row in project.run_sql(f"show tables in {schema}", fetch="all")}
        assert "customers" in tables and not any("__om_" in t for t in tables)

        before = tree_digest(landing_zone)
        set_source(warehouse, schema, f"select * from values (1, 'a', 1), (1, 'b', 2) {COLUMNS}")
        message = run_dbt(["run"], expect_pass=False)[0].message
        assert "['id'] is not unique: id=1 appears in 2 rows" in message
        assert tree_digest(landing_zone) == before
        # Every openmirror_* flag var is checked, as in the plugin, even one package mode does not act on.
        for typed in ("{openmirror_reconcile: ture}", "{openmirror_key_hashes: nope}"):
            message = run_dbt(["run", "--vars", typed], expect_pass=False)[0].message
            assert f"--vars {typed[1:].split(':')[0]} must be true or false" in message, message
        assert tree_digest(landing_zone) == before

    def test_a_snapshot_that_lost_its_rows_is_not_compared(self, project, warehouse, landing_zone):
        """Its folder deleted (or moved by a rename cut off, which package mode cannot repair), it
        reads as empty: every row would be staged again as an INSERT."""
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        _stage(project, warehouse, "(1, 'a', 10), (2, 'b', 20)", extra_args=["--full-refresh"])
        publish(landing_zone)
        rows = project.run_sql(f"describe table extended {schema}.customers", fetch="all")
        [location] = [str(row[1]) for row in rows if str(row[0]) == "Location"]
        shutil.rmtree(urlparse(location).path)
        project.run_sql(f"refresh table {schema}.customers")
        before = tree_digest(landing_zone)
        set_source(warehouse, schema, f"select * from values (1, 'a', 10), (2, 'b', 21) {COLUMNS}")
        message = run_dbt(["run"], expect_pass=False)[0].message
        assert f"Model 'customers': {schema}.customers holds 0 rows, but the run that wrote it left 2" in message
        assert tree_digest(landing_zone) == before

        _stage(project, warehouse, "(1, 'a', 10), (2, 'b', 21)", extra_args=["--full-refresh"])
        publish(landing_zone)
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")


class TestAManifestOfAnEarlierVersion(InPackageMode):
    """A manifest table created before runs recorded their relation gains the column; each run
    records `{{ this }}`, which the journal then names as the table folder's publisher (two
    targets of one model are told apart by it)."""

    def test_the_relation_is_added_and_recorded(self, project, warehouse, landing_zone):
        schema = project.test_schema
        manifest = f"{schema}.openmirror_manifest"
        older = [f"{name} {data_type}" for name, data_type in MANIFEST_COLUMNS if name != "relation"]
        location = landing_zone / MANIFEST_FOLDER
        project.run_sql(f"create table {manifest} ({', '.join(older)}) using parquet location '{location}'")
        _stage(project, warehouse, "(1, 'a', 10), (2, 'b', 20)")
        assert [r.relation for r in publish(landing_zone)] == [f"{schema}.customers"]
        assert "relation" in {str(row[0]) for row in project.run_sql(f"describe {manifest}", fetch="all")}
        folder = table_folder(landing_zone, schema, "customers")
        assert json.loads((folder / "_dbt_openmirror.json").read_text())["owner"] == f"{schema}.customers"
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")


@PLUGIN_TWIN
class TestPackageRunsThatStageNothing(InPackageMode):
    def test_empty_and_dry_runs_stage_nothing(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        set_source(warehouse, schema, f"select * from values (1, 'a', 10), (2, 'b', 20) {COLUMNS}")
        result = run_dbt(["run", "--empty"])[0]
        assert "--empty" in result.message and tree_digest(landing_zone) == {}
        dry = run_dbt(["run", "--vars", "{openmirror_dry_run: true}"])[0]
        assert (
            dry.message
            == f"dry run, nothing written: +2 ~0 -0 would be staged (full: first publish) for {schema}.schema/customers"
        )
        assert tree_digest(landing_zone) == {}
        _stage(project, warehouse, "(1, 'a', 10), (2, 'b', 20)")
        publish(landing_zone)

        set_source(warehouse, schema, f"select * from values (1, 'a', 11), (3, 'c', 30) {COLUMNS}")
        before, snapshot = tree_digest(landing_zone), warehouse.rows(f"select * from {schema}.customers")
        dry = run_dbt(["run", "--vars", "{openmirror_dry_run: true}"])[0]
        assert dry.message.startswith("dry run, nothing written: +1 ~1 -1 would be staged (incremental)")
        assert run_dbt(["run", "--empty"])[0].adapter_response["code"] == "EMPTY"
        assert tree_digest(landing_zone) == before
        assert warehouse.rows(f"select * from {schema}.customers") == snapshot
        _stage(project, warehouse, "(1, 'a', 11), (3, 'c', 30)")
        publish(landing_zone)
        assert sorted(file_markers(folder)[-1]) == [0, 1, 2]
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")


@PLUGIN_TWIN
class TestPackageSampledRuns(InPackageMode):
    """test_publish_modes.py's sampled runs, staged: nothing is staged from a sampled input."""

    @pytest.fixture(scope="class")
    def models(self):
        return SAMPLED_MODELS

    def test_a_sampled_input_stages_nothing(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        set_source(warehouse, schema, SAMPLED_SOURCE.format(rows=SAMPLED_ROWS))
        run_dbt(["run"])
        publish(landing_zone)
        before, snapshot = tree_digest(landing_zone), warehouse.rows(f"select * from {schema}.customers")

        set_source(warehouse, schema, SAMPLED_SOURCE.format(rows=SAMPLED_ROWS.replace("'b'", "'B'")))
        result = run_dbt(["run", "--sample", "1 day"])[1]
        assert result.message == (
            f"--sample filters events, upstream of this model: columns and unique_key checked, "
            f"nothing staged for {schema}.schema/customers"
        )
        assert result.adapter_response["code"] == "SAMPLE"
        assert publish(landing_zone) == [] and tree_digest(landing_zone) == before
        assert warehouse.rows(f"select * from {schema}.customers") == snapshot
        run_dbt(["run"])
        publish(landing_zone)
        assert file_markers(folder)[-1] == [1]
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")


@PLUGIN_TWIN
class TestPackageColumnsDescribeHides(InPackageMode):
    """Columns DESCRIBE lists oddly: a name starting with '#' (dbt-spark's column list ends there),
    and a struct of more than 25 fields, whose type DESCRIBE cuts short."""

    WIDE = "named_struct(" + "".join(f"'f{i}', id, " for i in range(26)) + "'last', {last}) as s"

    def test_they_are_published_whole_or_refused(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        rows = "from values (1, 'a'), (2, 'b') as t(id, name)"
        set_source(warehouse, schema, f"select id, id + 1 as `# items`, {self.WIDE.format(last='name')}, name {rows}")
        run_dbt(["run"])
        publish(landing_zone)
        assert_mirror_equals(warehouse, folder, f"select id, `# items`, to_json(s) as s, name from {schema}.src")

        before = tree_digest(landing_zone)
        set_source(warehouse, schema, f"select id, {self.WIDE.format(last='map(current_date(), id)')}, name {rows}")
        message = run_dbt(["run"], expect_pass=False)[0].message
        assert "column 's' is" in message and "f25:int,last:map<date,int>>" in message and "transform_keys" in message
        assert publish(landing_zone) == [] and tree_digest(landing_zone) == before


@PLUGIN_TWIN
class TestPackageModeWithALandingZonePerModel(InPackageMode):
    """A model's `landing_zone` config overrides the var: its runs are staged and recorded in its
    own landing zone, one manifest per landing zone, so each landing zone's publish finds exactly
    its own runs. A manifest table that belongs to another landing zone is refused."""

    @pytest.fixture(scope="class")
    def other_landing_zone(self, tmp_path_factory):
        return tmp_path_factory.mktemp("other_landing_zone")

    @pytest.fixture(scope="class")
    def models(self, other_landing_zone):
        elsewhere = MODEL.replace("unique_key='id',", f"unique_key='id', landing_zone='{other_landing_zone}',")
        return {"customers.sql": MODEL, "orders.sql": elsewhere}

    def test_each_landing_zone_publishes_its_own_runs(self, project, warehouse, landing_zone, other_landing_zone):
        schema = project.test_schema
        source = f"select * from {schema}.src"
        for rows in ("(1, 'a', 10), (2, 'b', 20)", "(1, 'a', 11), (3, 'c', 30)"):
            set_source(warehouse, schema, f"select * from values {rows} {COLUMNS}")
            run_dbt(["run"])
            assert [r.model for r in publish(landing_zone)] == ["customers"]
            assert [r.model for r in publish(other_landing_zone)] == ["orders"]
            assert_mirror_equals(warehouse, table_folder(landing_zone, schema, "customers"), source)
            assert_mirror_equals(warehouse, table_folder(other_landing_zone, schema, "orders"), source)
        assert not table_folder(landing_zone, schema, "orders").exists()
        assert not table_folder(other_landing_zone, schema, "customers").exists()
        assert set(manifest_states(landing_zone)) == set(manifest_states(other_landing_zone)) == {"published"}

    def test_a_manifest_of_another_landing_zone_is_refused(self, project, warehouse, landing_zone, tmp_path):
        """The var now names another landing zone, but the schema's manifest table is still the
        one stored in the first: the run fails before staging anything, naming both."""
        moved = tmp_path / "moved_landing_zone"
        moved.mkdir()
        results = run_dbt(
            ["run", "-s", "customers", "--vars", f"{{openmirror_landing_zone: '{moved}'}}"], expect_pass=False
        )
        message = results[0].message
        assert "openmirror_manifest" in message and str(landing_zone) in message and str(moved) in message
        assert list(moved.iterdir()) == []

        # A manifest created before manifests recorded their landing zone: its location decides.
        manifest = f"{project.test_schema}.openmirror_manifest"
        project.run_sql(f"alter table {manifest} unset tblproperties ('openmirror.landing_zone')")
        results = run_dbt(
            ["run", "-s", "customers", "--vars", f"{{openmirror_landing_zone: '{moved}'}}"], expect_pass=False
        )
        assert f"kept in the folder file:{landing_zone}/_scratchPad/dbt-openmirror/manifest" in results[0].message
        assert list(moved.iterdir()) == []
        run_dbt(["run", "-s", "customers"])
        properties = dict(project.run_sql(f"show tblproperties {manifest}", fetch="all"))
        assert properties["openmirror.landing_zone"] == str(landing_zone)


class TestPackageWriteAuditPublish(InPackageMode):
    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": AUDITED, "payments.sql": AUDITED, "schema.yml": AUDITED_TESTS}

    @pytest.fixture(scope="class")
    def project_config_update(self, landing_zone):
        return {
            "vars": {"openmirror_landing_zone": str(landing_zone)},
            "on-run-end": ["{{ dbt_openmirror.openmirror_publish_audited(results) }}"],
        }

    def test_only_runs_that_passed_their_tests_are_staged(self, project, warehouse, landing_zone):
        schema = project.test_schema
        for table in ("orders", "payments"):
            set_source(warehouse, schema, "select * from values (1, 10), (2, 20) as t(id, amount)", name=f"src_{table}")
        run_dbt(["build"])
        assert sorted(r.model for r in publish(landing_zone)) == ["orders", "payments"]
        published = {t: replay(table_folder(landing_zone, schema, t)) for t in ("orders", "payments")}

        # One build: orders' change breaks its test, payments' passes.
        set_source(warehouse, schema, "select * from values (1, 10), (2, null) as t(id, amount)", name="src_orders")
        set_source(warehouse, schema, "select * from values (1, 11) as t(id, amount)", name="src_payments")
        orders_snapshot = warehouse.rows(f"select * from {schema}.orders")
        results = {r.node.name: r for r in run_dbt(["build"], expect_pass=False)}
        assert results["orders"].adapter_response["code"] == "HELD"
        assert [r.model for r in publish(landing_zone)] == ["payments"]
        assert replay(table_folder(landing_zone, schema, "orders")) == published["orders"]
        assert warehouse.rows(f"select * from {schema}.orders") == orders_snapshot
        assert_mirror_equals(
            warehouse, table_folder(landing_zone, schema, "payments"), f"select * from {schema}.src_payments"
        )

        # Fixed: staged against the snapshot it still has, published once.
        set_source(warehouse, schema, "select * from values (1, 10), (2, 21) as t(id, amount)", name="src_orders")
        run_dbt(["build"])
        assert {r.model: r.rows for r in publish(landing_zone)} == {"orders": 1, "payments": 0}
        assert_mirror_equals(
            warehouse, table_folder(landing_zone, schema, "orders"), f"select * from {schema}.src_orders"
        )
        assert sorted(file_markers(table_folder(landing_zone, schema, "orders"))[-1]) == [1]

        # `dbt run` runs no tests: a dry run's report and a warning, nothing staged or held.
        set_source(warehouse, schema, "select * from values (1, 12) as t(id, amount)", name="src_orders")
        snapshot = warehouse.rows(f"select * from {schema}.orders")
        results, output = run_dbt_and_capture(["run", "--select", "orders"])
        [orders] = [r for r in results if r.node.name == "orders"]
        assert orders.adapter_response["code"] == "DRY_RUN"
        assert "this invocation does not run test." in output
        assert publish(landing_zone) == []
        assert warehouse.rows(f"select * from {schema}.orders") == snapshot


@pytest.mark.extended
class TestPackagePublishWhileTheServiceMirrors(InPackageMode):
    """`dbt-openmirror publish` into an item's `Files/LandingZone` while `replay --watch` mirrors
    it as the service would: a `--full-refresh` is published by the restart protocol (the folder
    is recreated only once the service dropped the table), and after every publish the mirrored
    Delta table equals the model output."""

    @pytest.fixture(scope="class")
    def landing_zone(self, tmp_path_factory):
        root = tmp_path_factory.mktemp("item") / "Files" / "LandingZone"
        root.mkdir(parents=True)
        return root

    def test_the_mirror_follows_every_publish_through_a_rebuild(self, project, warehouse, landing_zone, tmp_path):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        source = f"select * from {schema}.src"
        target = tmp_path / "mirror"
        steps = [
            ("(1, 'a', 10), (2, 'b', 20), (3, 'c', 30)", []),
            ("(1, 'a', 11), (3, 'c', 30), (4, 'd', 40)", []),
            ("(7, 'g', 70), (8, 'h', 80)", ["--full-refresh"]),
            ("(7, 'g', 71), (9, 'i', 90)", []),
        ]
        said = []
        with watching_mirror(landing_zone, target, interval=0.3):
            for rows, extra_args in steps:
                _stage(project, warehouse, rows, extra_args=extra_args)
                PackagePublisher(LocalStorage(landing_zone), log=said.append).publish()
                wait_until_mirrored(landing_zone, target, [folder])
                mirrored = normalized(read_delta(target / schema / "customers"))
                assert mirrored == model_output(warehouse, source), f"after {rows}"
        waits = [line for line in said if "waiting until the mirroring service" in line]
        assert any(f"no longer lists table {schema}.customers" in line for line in waits), said
        # The rebuild started again at file 1; the change after it is file 2.
        assert [p.name for p in data_files(folder)] == ["00000000000000000001.parquet", "00000000000000000002.parquet"]
        assert file_markers(folder)[0] == [0, 0]
        assert findings_for(landing_zone, folder) == []


@PLUGIN_TWIN
class TestPackageKeyWarnings(InPackageMode):
    """Keys the mirror may compare differently warn in package mode as with the plugin."""

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "codes.sql": "{{ config(materialized='open_mirror', unique_key='code') }}\n"
            "select * from {{ target.schema }}.src",
            "secret.sql": "{{ config(materialized='open_mirror', unique_key='code', show_key_values=false) }}\n"
            "select * from {{ target.schema }}.src",
        }

    def test_lookalike_string_keys_warn_with_or_without_values(self, project, warehouse, landing_zone):
        schema = project.test_schema
        set_source(warehouse, schema, "select * from values ('ABC', 1), ('abc ', 2), ('x', 3) as t(code, id)")
        _, output = run_dbt_and_capture(["run"])
        assert "differ only in letter case or trailing spaces: 'code=" in output
        assert "two keys (values hidden: show_key_values=false)" in output
        # An incremental run compares only its changed keys with all keys.
        set_source(warehouse, schema, "select * from values ('ABC', 1), ('abc ', 2), ('x', 3), ('y', 4) as t(code, id)")
        _, output = run_dbt_and_capture(["run", "--select", "codes"])
        assert "differ only in letter case" not in output
        set_source(
            warehouse, schema, "select * from values ('ABC', 1), ('abc ', 2), ('x', 3), ('X ', 5) as t(code, id)"
        )
        _, output = run_dbt_and_capture(["run", "--select", "codes"])
        assert "'code=x' and 'code=X '" in output or "'code=X ' and 'code=x'" in output
        publish(landing_zone)
        assert_mirror_equals(warehouse, table_folder(landing_zone, schema, "codes"), f"select * from {schema}.src")

    @PLUGIN_TWIN
    def test_an_empty_output_that_deletes_every_row_warns(self, project, warehouse, landing_zone):
        schema = project.test_schema
        set_source(warehouse, schema, "select * from values ('a', 1) as t(code, id)")
        run_dbt(["run", "--select", "codes"])
        set_source(warehouse, schema, "select * from values ('a', 1) as t(code, id) where id < 0")
        _, output = run_dbt_and_capture(["run", "--select", "codes"])
        assert "its output is empty, so this run deletes every row" in output
        _, output = run_dbt_and_capture(["run", "--select", "codes"])
        assert "its output is empty" not in output  # nothing left to delete
        publish(landing_zone)
        assert_mirror_equals(warehouse, table_folder(landing_zone, schema, "codes"), f"select * from {schema}.src")


@pytest.mark.extended  # the race is not reproduced on demand; the check itself has unit cases
class TestPackageModelsStagingAtOnce(InPackageMode):
    """With several dbt threads, models append to the one manifest table together, which Spark's
    file commit does not make safe: a row that did not arrive fails its model, and nothing is
    left that a later run and publish do not put right."""

    NAMES = ("a", "b", "c", "d")

    @pytest.fixture(scope="class")
    def models(self):
        return {
            f"{name}.sql": "{{ config(materialized='open_mirror', unique_key='id') }}\n"
            f"select id, id * {{{{ var('round', 1) }}}} + {number} as v from range(0, 20)"
            for number, name in enumerate(self.NAMES)
        }

    def test_no_run_is_lost_or_stuck(self, project, warehouse, landing_zone):
        schema = project.test_schema
        for round_ in (1, 2, 3):
            run_dbt(["run", "--threads", "4", "--vars", f"{{round: {round_}}}"], expect_pass=None)
            run_dbt(["run", "--threads", "1", "--vars", f"{{round: {round_}}}"])
            publish(landing_zone)
            for name in self.NAMES:
                assert_mirror_equals(
                    warehouse, table_folder(landing_zone, schema, name), f"select * from {schema}.{name}"
                )
        assert findings_for(landing_zone, table_folder(landing_zone, schema, "a")) == []

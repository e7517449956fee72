"""The open_mirror materialization over several runs: after every run, replaying the landing
zone in file order gives exactly the model output."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from dbt.adapters.openmirror.run.staging_mode import StagingModeChoice
from dbt.adapters.openmirror.storage.local import LocalStorage
from tests.support.mirror import (
    assert_local_mirror_equals,
    assert_mirror_equals,
    data_files,
    file_markers,
    findings_for,
    marked_files,
    model_output,
    set_source,
    table_folder,
    tree_digest,
)

MODEL = """
{{ config(materialized='open_mirror', unique_key=var('key', 'id')) }}
select * from {{ target.schema }}.src
"""

COLUMNS = "as t(id, name, amount)"


def _publish(project, warehouse, select_sql, extra_args=()):
    set_source(warehouse, project.test_schema, select_sql)
    results = run_dbt(["run", *extra_args])
    return results[0].adapter_response


class TestChangeSequence:
    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": MODEL}

    def test_each_run_publishes_exactly_the_changes(self, project, warehouse, landing_zone, tmp_path):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        source = f"select * from {schema}.src"
        steps = [
            # (source rows, markers of the new file or None when no file is expected)
            ("(1, 'a', 10), (2, 'b', 20), (3, 'c', 30)", [0, 0, 0]),
            ("(1, 'a', 10), (2, 'b', 20), (3, 'c', 30)", None),
            ("(1, 'a', 11), (3, 'c', 30), (4, 'd', 40)", [0, 1, 2]),
            ("(1, 'a', 11), (3, 'c', 30), (4, 'd', 40)", None),
            ("(9, 'x', 0)", [0, 2, 2, 2]),
            ("(2, 'b is back', 20), (9, 'x', 0)", [0]),
        ]
        expected_files = []
        for rows, markers in steps:
            response = _publish(project, warehouse, f"select * from values {rows} {COLUMNS}")
            if markers is not None:
                expected_files.append(markers)
                assert sorted(file_markers(folder)[-1]) == markers
            # Checked before the local mirror moves the files to _ProcessedFiles.
            assert_mirror_equals(warehouse, folder, source)
            assert findings_for(landing_zone, folder) == []
            assert model_output(warehouse, f"select * from {schema}.customers") == model_output(warehouse, source)
            assert_local_mirror_equals(warehouse, landing_zone, tmp_path / "mirror", schema, "customers", source)
            assert response["files"] == ([f"{len(expected_files):020d}.parquet"] if markers is not None else [])
        assert json.loads((folder / "_metadata.json").read_text()) == {"keyColumns": ["id"]}
        # The full load is insert-only, without a marker column; every change file carries it.
        assert marked_files(folder) == [False, True, True, True]

    def test_run_reports_counts_and_file(self, project, warehouse, landing_zone):
        schema = project.test_schema
        _publish(project, warehouse, f"select * from values (1, 'a', 1), (2, 'b', 2) {COLUMNS}")
        response = _publish(project, warehouse, f"select * from values (1, 'a', 5), (3, 'c', 3) {COLUMNS}")
        folder = table_folder(landing_zone, schema, "customers")
        last = sorted(p.name for p in folder.glob("*.parquet"))[-1]
        assert (response["inserts"], response["updates"], response["deletes"]) == (1, 1, 1)
        assert response["_message"] == f"+1 ~1 -1 -> {schema}.schema/customers/{last}"
        assert response["rows_affected"] == 3


class TestStagingProbe:
    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": MODEL}

    def test_a_remote_spark_that_writes_the_landing_zone_stages_there(
        self, project, warehouse, landing_zone, monkeypatch
    ):
        """spark_staging auto, Spark not local and not known to share the landing zone: a probe
        write decides. This Spark can write it, so it stages there directly."""
        monkeypatch.setattr(StagingModeChoice, "spark_master", lambda self: "spark://elsewhere:7077")
        monkeypatch.setattr(LocalStorage, "shared_with_spark", False)
        schema = project.test_schema
        set_source(warehouse, schema, f"select * from values (1, 'a', 10), (2, 'b', 20) {COLUMNS}")
        _, logs = run_dbt_and_capture(["--debug", "run"])
        assert "Spark stages change files with spark_staging=direct" in logs
        assert list((landing_zone / "_scratchPad" / "dbt-openmirror").glob("probe-*")) == []
        assert_mirror_equals(warehouse, table_folder(landing_zone, schema, "customers"), f"select * from {schema}.src")


class TestKeyChangesAndCompositeKeys:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "order_lines.sql": """
                {{ config(materialized='open_mirror', unique_key=['order_id', 'line']) }}
                select * from {{ target.schema }}.src
            """
        }

    def test_composite_key_changes_are_delete_plus_insert(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "order_lines")
        columns = "as t(order_id, line, sku, qty)"
        steps = [
            ("(1, 1, 'A', 2), (1, 2, 'B', 1), (2, 1, 'A', 5)", [0, 0, 0]),
            # line 1 of order 1 becomes line 3 (a key change); order 2 line 1 changes qty
            ("(1, 3, 'A', 2), (1, 2, 'B', 1), (2, 1, 'A', 6)", [0, 1, 2]),
            # the same key in another order is a different row
            ("(1, 3, 'A', 2), (1, 2, 'B', 1), (2, 1, 'A', 6), (2, 2, 'B', 1)", [0]),
        ]
        for rows, markers in steps:
            _publish(project, warehouse, f"select * from values {rows} {columns}")
            assert sorted(file_markers(folder)[-1]) == markers
            assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")
        deleted = [r for r in _rows_of(folder, 2) if r["__rowMarker__"] == 2]
        assert deleted == [{"order_id": 1, "line": 1, "sku": None, "qty": None, "__rowMarker__": 2}]
        assert json.loads((folder / "_metadata.json").read_text()) == {"keyColumns": ["order_id", "line"]}


def _rows_of(folder, number):
    import pyarrow.parquet as pq

    return pq.read_table(folder / f"{number:020d}.parquet").to_pylist()


class TestFullRefreshAndEmptyModels:
    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": MODEL}

    def test_empty_model_still_creates_the_table(self, project, warehouse, landing_zone):
        folder = table_folder(landing_zone, project.test_schema, "customers")
        _publish(project, warehouse, f"select * from values (1, 'a', 1) {COLUMNS} where false")
        assert file_markers(folder) == [[]]
        _publish(project, warehouse, f"select * from values (1, 'a', 1) {COLUMNS}")
        assert file_markers(folder) == [[], [0]]
        assert_mirror_equals(warehouse, folder, f"select * from {project.test_schema}.src")

    def test_full_refresh_rebuilds_from_file_one(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        _publish(project, warehouse, f"select * from values (1, 'a', 2), (2, 'b', 2) {COLUMNS}")
        assert len(file_markers(folder)) >= 2
        response = _publish(
            project,
            warehouse,
            f"select * from values (1, 'a', 3), (2, 'b', 2) {COLUMNS}",
            ["--full-refresh"],
        )
        assert file_markers(folder) == [[0, 0]]
        assert response["mode"] == "rebuild"
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")
        # Incremental publishing continues after the rebuild.
        _publish(project, warehouse, f"select * from values (1, 'a', 4) {COLUMNS}")
        assert [sorted(m) for m in file_markers(folder)] == [[0, 0], [1, 2]]
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")


class TestSnapshotAndFolderDisagree:
    """When the snapshot and the table folder cannot be proven to match, the run reloads the table
    in full rather than guess; the mirror still ends equal to the model."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": MODEL}

    def test_stale_snapshot_record_rebuilds(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        _publish(project, warehouse, f"select * from values (1, 'a', 1), (2, 'b', 2) {COLUMNS}")
        _publish(project, warehouse, f"select * from values (1, 'a', 5) {COLUMNS}")
        # As if the last run had stopped after its renames but before recording the snapshot.
        warehouse.run(f"alter table {schema}.customers set tblproperties ('openmirror.sequence_number' = '1')")
        response = _publish(project, warehouse, f"select * from values (1, 'a', 5), (3, 'c', 3) {COLUMNS}")
        assert response["mode"] == "rebuild"
        assert file_markers(folder) == [[0, 0]]
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")

    def test_deleted_table_folder_is_loaded_again(self, project, warehouse, landing_zone):
        import shutil

        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        shutil.rmtree(folder)
        response = _publish(project, warehouse, f"select * from values (1, 'a', 6) {COLUMNS}")
        assert response["mode"] == "initial"
        assert file_markers(folder) == [[0]]
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")

    def test_dropped_snapshot_table_rebuilds(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        project.run_sql(f"drop table {schema}.customers")
        response = _publish(project, warehouse, f"select * from values (1, 'a', 6), (4, 'd', 4) {COLUMNS}")
        assert response["mode"] == "rebuild"
        assert file_markers(folder) == [[0, 0]]
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")

    def test_a_column_added_to_the_snapshot_by_hand_rebuilds(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        warehouse.run(f"alter table {schema}.customers add columns (note string)")
        response = _publish(project, warehouse, f"select * from values (1, 'a', 7), (4, 'd', 4) {COLUMNS}")
        assert response["mode"] == "rebuild" and "note" in " ".join(response["warnings"])
        assert file_markers(folder) == [[0, 0]]
        assert pq.read_schema(data_files(folder)[0]).names == ["id", "name", "amount"]
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")

    @pytest.mark.parametrize("deleted", [2, 3])
    def test_a_file_deleted_behind_one_still_waiting_stops_the_run(self, project, warehouse, landing_zone, deleted):
        """The mirror has not processed file 1 yet, so a later file missing was not cleaned up
        by it: publishing after the gap would never be applied. A rebuild starts over."""
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        for amount in (8, 9):
            _publish(project, warehouse, f"select * from values (1, 'a', {amount}), (4, 'd', 4) {COLUMNS}")
        assert len(data_files(folder)) == 3
        (folder / f"{deleted:020d}.parquet").unlink()
        left = tree_digest(folder)
        set_source(warehouse, schema, f"select * from values (1, 'a', 10), (4, 'd', 4) {COLUMNS}")
        [result] = run_dbt(["run"], expect_pass=False)
        assert f"is missing file {deleted:020d}.parquet" in result.message and "customers" in result.message
        assert tree_digest(folder) == left
        assert (
            _publish(project, warehouse, f"select * from values (1, 'a', 10) {COLUMNS}", ["--full-refresh"])["mode"]
            == "rebuild"
        )
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")

    def test_a_waiting_file_truncated_since_it_was_published_stops_the_run(self, project, warehouse, landing_zone):
        """The mirror would stall on the empty file (or take another table's rows, had it been
        overwritten): publishing after it would never be applied as the model's change."""
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        _publish(project, warehouse, f"select * from values (1, 'a', 12), (4, 'd', 4) {COLUMNS}")
        last = data_files(folder)[-1]
        last.write_bytes(b"")
        left = tree_digest(folder)
        set_source(warehouse, schema, f"select * from values (1, 'a', 13), (4, 'd', 4) {COLUMNS}")
        [result] = run_dbt(["run"], expect_pass=False)
        assert f"{last.name} is not the file dbt-openmirror published" in result.message
        assert "customers" in result.message and tree_digest(folder) == left
        assert (
            _publish(project, warehouse, f"select * from values (1, 'a', 13) {COLUMNS}", ["--full-refresh"])["mode"]
            == "rebuild"
        )
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")

    def test_a_metadata_file_declaring_another_format_stops_the_run(self, project, warehouse, landing_zone):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        contract = {
            "keyColumns": ["id"],
            "FileFormat": "DelimitedText",
            "FileExtension": "csv",
            "FileFormatTypeProperties": {"FirstRowAsHeader": True},
            "SchemaDefinition": {"Columns": [{"Name": "id", "DataType": "Int32"}]},
        }
        (folder / "_metadata.json").write_text(json.dumps(contract))
        left = tree_digest(folder)
        set_source(warehouse, schema, f"select * from values (1, 'a', 11) {COLUMNS}")
        [result] = run_dbt(["run"], expect_pass=False)
        assert "declares FileFormat 'DelimitedText'" in result.message and "customers" in result.message
        assert tree_digest(folder) == left
        _publish(project, warehouse, f"select * from values (1, 'a', 11) {COLUMNS}", ["--full-refresh"])
        assert json.loads((folder / "_metadata.json").read_text()) == {"keyColumns": ["id"]}
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")
        assert findings_for(landing_zone, folder) == []

    def test_a_deleted_metadata_file_still_holds_the_table_to_its_key(self, project, warehouse, landing_zone):
        """The key we declared is in our record too: with `_metadata.json` deleted, a changed
        `unique_key` is still refused, and the next file published declares the key again first;
        with the file rewritten to another key, that key is refused too."""
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        (folder / "_metadata.json").unlink()
        left = tree_digest(folder)
        set_source(warehouse, schema, f"select * from values (1, 'a', 12) {COLUMNS}")
        [result] = run_dbt(["run", "--vars", "{key: name}"], expect_pass=False)
        assert "unique_key is now ['name']" in result.message and "keyColumns ['id']" in result.message
        assert tree_digest(folder) == left
        _publish(project, warehouse, f"select * from values (1, 'a', 12) {COLUMNS}")
        assert json.loads((folder / "_metadata.json").read_text()) == {"keyColumns": ["id"]}
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")
        assert findings_for(landing_zone, folder) == []

        # Rewritten to another key, it does not make that key the table's either.
        (folder / "_metadata.json").write_text(json.dumps({"keyColumns": ["name"]}))
        left = tree_digest(folder)
        set_source(warehouse, schema, f"select * from values (1, 'b', 13) {COLUMNS}")
        [result] = run_dbt(["run", "--vars", "{key: name}"], expect_pass=False)
        assert "declares keyColumns ['name'], but dbt-openmirror declared ['id']" in result.message
        assert tree_digest(folder) == left

    def test_files_no_journal_accounts_for_are_never_deleted(self, project, warehouse, landing_zone):
        """Without our journal, files the snapshot does not account for may be anyone's: the run
        that would rebuild over them (and so delete them) stops instead, the landing zone as it
        was; `--full-refresh` takes the folder over. So does a run that would publish its changes after
        them, even where the folder ends where the snapshot does."""
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        journal = folder / "_dbt_openmirror.json"
        _publish(project, warehouse, f"select * from values (1, 'a', 14) {COLUMNS}", ["--full-refresh"])
        _publish(project, warehouse, f"select * from values (1, 'a', 15) {COLUMNS}")
        # Another publisher's next file, with our journal deleted.
        journal.unlink()
        files = data_files(folder)
        (folder / f"{len(files) + 1:020d}.parquet").write_bytes(files[-1].read_bytes())
        left = tree_digest(landing_zone)
        set_source(warehouse, schema, f"select * from values (1, 'a', 16) {COLUMNS}")
        [result] = run_dbt(["run"], expect_pass=False)
        assert f"holds files up to {len(files) + 1:020d}.parquet" in result.message
        assert "_dbt_openmirror.json" in result.message and "customers" in result.message
        assert tree_digest(landing_zone) == left

        def refused_until_a_full_refresh(rows, *said):
            """The run fails saying `said`, the landing zone as it was; a --full-refresh rebuilds."""
            left = tree_digest(landing_zone)
            set_source(warehouse, schema, f"select * from values {rows} {COLUMNS}")
            [result] = run_dbt(["run"], expect_pass=False)
            assert all(text in result.message for text in said), result.message
            assert tree_digest(landing_zone) == left
            rebuilt = _publish(project, warehouse, f"select * from values {rows} {COLUMNS}", ["--full-refresh"])
            assert rebuilt["mode"] == "rebuild"

        # So does a model whose snapshot is gone (another publisher's folder, as far as it knows).
        project.run_sql(f"drop table {schema}.customers")
        refused_until_a_full_refresh("(1, 'a', 16)", "_dbt_openmirror.json", "no snapshot table")
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")
        # The journal deleted with nothing else changed: the folder ends where the snapshot does, but
        # so would a folder copied from another table; only a --full-refresh takes it over.
        journal.unlink()
        refused_until_a_full_refresh("(1, 'b', 16)", "and no journal of dbt-openmirror", "--full-refresh")
        assert journal.exists()
        assert_mirror_equals(warehouse, folder, f"select * from {schema}.src")

        # Another publisher's table whose files are not named by number (LastUpdateTimeFileDetection,
        # GUID names), or whose files the service processed and purged, is not deleted either.
        import shutil

        project.run_sql(f"drop table {schema}.customers")
        for foreign, shown in (("3f2a9c1e.parquet", "3f2a9c1e.parquet"), ("_ProcessedFiles", "_ProcessedFiles/")):
            shutil.rmtree(folder)
            folder.mkdir()
            metadata = {"keyColumns": ["id"], "fileDetectionStrategy": "LastUpdateTimeFileDetection"}
            (folder / "_metadata.json").write_text(json.dumps(metadata))
            if foreign.endswith(".parquet"):
                pq.write_table(pa.table({"id": [7], "name": ["theirs"], "amount": [7]}), folder / foreign)
            else:
                (folder / foreign).mkdir()
            left = tree_digest(landing_zone)
            [result] = run_dbt(["run"], expect_pass=False)
            assert f"holds {shown}, and no journal of dbt-openmirror" in result.message
            assert tree_digest(landing_zone) == left and (folder / foreign).exists()

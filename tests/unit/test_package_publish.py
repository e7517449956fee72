"""`dbt-openmirror publish` over runs staged without Spark: order, exactly once, broken chains,
unsafe table folders, discarded runs and `status`."""

import os
import shutil
import time
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dbt.adapters.openmirror.errors import PublishError
from dbt.adapters.openmirror.package.publish import (
    MANIFEST_FOLDER,
    MANIFEST_SCHEMA,
    PackagePublisher,
    read_manifest,
    supersede_staged_runs,
)
from dbt.adapters.openmirror.planning.run_plan import FULL_REFRESH
from dbt.adapters.openmirror.publishing.lease import LeaseManager
from dbt.adapters.openmirror.storage import LocalStorage
from dbt.adapters.openmirror.tools.cli import main
from tests.support.mirror import tree_digest
from tests.support.mirror_oracle import replay
from tests.support.package_staging import FOLDER, record, stage_run, write_manifest_rows

FIRST = [{"id": 1, "amount": 10, "__rowMarker__": 0}, {"id": 2, "amount": 20, "__rowMarker__": 0}]
SECOND = [{"id": 1, "amount": 11, "__rowMarker__": 1}, {"id": 2, "amount": None, "__rowMarker__": 2}]


def _publish(landing_zone):
    return PackagePublisher(LocalStorage(landing_zone), log=lambda line: None).publish()


def test_runs_publish_in_staging_order_once(tmp_path):
    # Staged out of listing order: the sequence decides.
    stage_run(tmp_path, "run-b", 2, SECOND, base_run_id="run-a")
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    published = _publish(tmp_path)
    assert [(p.run.run_id, p.names) for p in published] == [
        ("run-a", ["00000000000000000001.parquet"]),
        ("run-b", ["00000000000000000002.parquet"]),
    ]
    assert replay(tmp_path / FOLDER) == [{"id": 1, "amount": 11}]
    assert record(tmp_path)["lastRunId"] == "run-b"
    assert {r.run_id: r.state for r in read_manifest(LocalStorage(tmp_path))} == {
        "run-a": "published",
        "run-b": "published",
    }
    assert not (tmp_path / "_scratchPad" / "dbt-openmirror" / "run-a").exists()
    before = tree_digest(tmp_path)
    assert _publish(tmp_path) == []
    assert tree_digest(tmp_path) == before


def test_a_run_without_changes_moves_the_chain_on_without_a_file(tmp_path):
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    stage_run(tmp_path, "run-b", 2, [], base_run_id="run-a")
    stage_run(tmp_path, "run-c", 3, SECOND, base_run_id="run-b")
    assert [p.names for p in _publish(tmp_path)] == [
        ["00000000000000000001.parquet"],
        [],
        ["00000000000000000002.parquet"],
    ]
    assert record(tmp_path)["lastRunId"] == "run-c"


def _lose_run_b(landing_zone):
    stage_run(landing_zone, "run-c", 2, SECOND, base_run_id="run-b")


def _remove_run_bs_files(landing_zone):
    stage_run(landing_zone, "run-b", 2, SECOND, base_run_id="run-a")
    shutil.rmtree(landing_zone / "_scratchPad/dbt-openmirror/run-b")


def _rewrite_run_bs_files(landing_zone):
    """Its file rewritten by someone else with as many rows, now all inserts."""
    stage_run(landing_zone, "run-b", 2, SECOND, base_run_id="run-a")
    rewritten = [dict(row, amount=999, __rowMarker__=0) for row in SECOND]
    schema = pq.read_schema(landing_zone / "_scratchPad/dbt-openmirror/run-b/part-00000.parquet")
    pq.write_table(
        pa.Table.from_pylist(rewritten, schema=schema),
        landing_zone / "_scratchPad/dbt-openmirror/run-b/part-00000.parquet",
    )


@pytest.mark.parametrize(
    "break_the_chain, expected",
    [
        (_lose_run_b, ["holds the changes since run run-b", "holds run run-a last"]),
        (
            _remove_run_bs_files,
            [
                "staged files in _scratchPad/dbt-openmirror/run-b hold 0 rows in 0 files",
                "removed or changed after they were staged",
            ],
        ),
        (
            _rewrite_run_bs_files,
            [
                "staged files in _scratchPad/dbt-openmirror/run-b hold 2 rows (2 INSERT) in 1 files, "
                "Spark counted 2 (1 UPDATE, 1 DELETE)",
                "removed or changed after they were staged",
            ],
        ),
    ],
    ids=["a lost run", "a run's files removed", "a run's file rewritten"],
)
def test_a_run_that_cannot_be_published_stops_the_table_and_says_what_to_do(tmp_path, break_the_chain, expected):
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    break_the_chain(tmp_path)
    with pytest.raises(PublishError) as failure:
        _publish(tmp_path)
    for fragment in [*expected, "dbt run --full-refresh -s orders"]:
        assert fragment in failure.value.msg
    assert replay(tmp_path / FOLDER) == [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}]


def test_a_full_load_into_a_folder_spelled_like_another_stops_that_table_only(tmp_path):
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    _publish(tmp_path)
    stage_run(tmp_path, "run-b", 2, FIRST, load="full", table_folder="Sales.schema/Orders", model="orders2")
    stage_run(tmp_path, "run-c", 3, FIRST, load="full", table_folder="sales.schema/other", model="other")
    before = tree_digest(tmp_path / "sales.schema" / "orders")
    with pytest.raises(PublishError) as failure:
        _publish(tmp_path)
    assert "Sales.schema/Orders and sales.schema/orders differ only in case" in failure.value.msg
    assert not (tmp_path / "Sales.schema").exists()
    assert tree_digest(tmp_path / "sales.schema" / "orders") == before
    assert replay(tmp_path / "sales.schema" / "other") == [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}]


def test_a_deleted_journal_is_named_when_it_stops_the_table(tmp_path):
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    _publish(tmp_path)
    (tmp_path / FOLDER / "_dbt_openmirror.json").unlink()
    stage_run(tmp_path, "run-b", 2, SECOND, base_run_id="run-a")
    with pytest.raises(PublishError) as failure:
        _publish(tmp_path)
    assert "has no journal (_dbt_openmirror.json) saying which run it holds" in failure.value.msg
    assert "dbt run --full-refresh -s orders" in failure.value.msg


def test_a_full_load_supersedes_the_runs_staged_before_it(tmp_path):
    """A refused run stays first in line; the full load --full-refresh stages after it, as the
    refusal advises, holds the whole table: the runs before it are recorded superseded (their
    staged files removed) and the full load is published."""
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    _publish(tmp_path)
    stage_run(tmp_path, "run-c", 2, SECOND, base_run_id="run-b")  # run-b was lost
    with pytest.raises(PublishError, match="dbt run --full-refresh -s orders"):
        _publish(tmp_path)
    stage_run(tmp_path, "run-d", 3, [{"id": 3, "amount": 30, "__rowMarker__": 1}], base_run_id="run-c")
    stage_run(tmp_path, "run-e", 4, [{"id": 9, "amount": 90, "__rowMarker__": 0}], load="full", reason=FULL_REFRESH)
    stage_run(tmp_path, "run-f", 5, [{"id": 9, "amount": 91, "__rowMarker__": 1}], base_run_id="run-e")
    logged = []
    published = PackagePublisher(LocalStorage(tmp_path), log=logged.append).publish()
    assert [(p.run.run_id, p.names) for p in published] == [
        ("run-e", ["00000000000000000001.parquet"]),
        ("run-f", ["00000000000000000002.parquet"]),
    ]
    assert replay(tmp_path / FOLDER) == [{"id": 9, "amount": 91}]
    assert {r.run_id: r.state for r in read_manifest(LocalStorage(tmp_path))} == {
        "run-a": "published",
        "run-c": "superseded",
        "run-d": "superseded",
        "run-e": "published",
        "run-f": "published",
    }
    assert any("run run-c" in line and "superseded by run run-e" in line for line in logged)
    assert not (tmp_path / "_scratchPad" / "dbt-openmirror" / "run-c").exists()
    before = tree_digest(tmp_path)
    assert _publish(tmp_path) == []
    assert tree_digest(tmp_path) == before


def test_a_full_load_rebuilds_the_table_folder(tmp_path):
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    stage_run(tmp_path, "run-b", 2, [{"id": 9, "amount": 90, "__rowMarker__": 0}], load="full")
    _publish(tmp_path)
    assert sorted(p.name for p in (tmp_path / FOLDER).glob("0*.parquet")) == ["00000000000000000001.parquet"]
    assert replay(tmp_path / FOLDER) == [{"id": 9, "amount": 90}]


def test_a_table_folder_outside_the_landing_zone_is_refused(tmp_path):
    stage_run(tmp_path, "run-a", 1, FIRST, load="full", table_folder="../escape")
    stage_run(tmp_path, "run-b", 1, FIRST, load="full", table_folder="sales.schema/_hidden")
    before = tree_digest(tmp_path)
    with pytest.raises(PublishError) as failure:
        _publish(tmp_path)
    assert "table_folder '../escape' is not a landing-zone table folder" in failure.value.msg
    assert "the row is skipped" in failure.value.msg
    assert tree_digest(tmp_path) == before
    assert not (tmp_path.parent / "escape").exists()


def test_one_failing_table_does_not_stop_the_others(tmp_path):
    stage_run(tmp_path, "run-x", 1, SECOND, base_run_id="gone", table_folder="other")
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    with pytest.raises(PublishError):
        _publish(tmp_path)
    assert replay(tmp_path / FOLDER) == [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}]


def test_unfinished_and_discarded_runs(tmp_path, capsys):
    stage_run(tmp_path, "run-a", 1, FIRST, load="full", states=("staging",))
    stage_run(tmp_path, "run-d", 2, SECOND, states=("staging", "discarded"))
    assert main(["status", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "run run-a of 'orders' (full load, 2 rows), staging at" in out
    one_row = stage_run(tmp_path, "run-o", 1, FIRST[:1], load="full", states=("staging",), table_folder="other")
    assert one_row.describe() == "run run-o of 'orders' (full load, 1 row)"
    assert "run-d" not in out
    assert _publish(tmp_path) == []  # still staging: dbt has not advanced its snapshot
    assert not (tmp_path / "_scratchPad" / "dbt-openmirror" / "run-d").exists()
    assert (tmp_path / "_scratchPad" / "dbt-openmirror" / "run-a").exists()


def test_publish_command(tmp_path, capsys):
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    assert main(["publish", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"{FOLDER}: published run run-a of 'orders' (full load, 2 rows) as 00000000000000000001.parquet" in out
    assert out.endswith("published 1 staged run\n")
    stage_run(tmp_path, "run-c", 2, SECOND, base_run_id="run-b")
    assert main(["publish", str(tmp_path)]) == 2
    assert "dbt run --full-refresh -s orders" in capsys.readouterr().err


def test_a_plugin_publish_supersedes_the_runs_staged_for_its_table_before_it(tmp_path):
    """The plugin's publish holds the whole table as the model outputs it now: a full load staged
    before it would put an older state over it, a change staged before it would stop the table."""
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    _publish(tmp_path)
    stage_run(tmp_path, "run-b", 2, SECOND, load="full", reason=FULL_REFRESH)
    stage_run(tmp_path, "run-c", 3, SECOND, base_run_id="run-b")
    stage_run(tmp_path, "run-d", 1, FIRST, load="full", table_folder="sales.schema/other")
    said = supersede_staged_runs(LocalStorage(tmp_path), FOLDER, "run-p")
    assert "runs run-b, run-c" in said and "run-p" in said
    assert {r.run_id: r.state for r in read_manifest(LocalStorage(tmp_path))} == {
        "run-a": "published",
        "run-b": "superseded",
        "run-c": "superseded",
        "run-d": "staged",
    }
    assert not (tmp_path / "_scratchPad/dbt-openmirror/run-b").exists()
    assert [p.run.run_id for p in _publish(tmp_path)] == ["run-d"]
    assert replay(tmp_path / FOLDER) == [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}]
    # Nothing staged, or no manifest at all: nothing to say.
    assert supersede_staged_runs(LocalStorage(tmp_path), FOLDER, "run-q") is None
    assert supersede_staged_runs(LocalStorage(tmp_path / "elsewhere"), FOLDER, "run-q") is None


def test_a_table_another_publisher_holds_names_the_option_that_waits_for_it(tmp_path):
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    LeaseManager(LocalStorage(tmp_path)).acquire(FOLDER, "run-x", "orders", ttl_seconds=3600, wait_seconds=0)
    with pytest.raises(PublishError) as error:
        _publish(tmp_path)
    assert "is being published by run run-x" in error.value.msg
    assert "--lease-wait-seconds" in error.value.msg and "set lease_wait_seconds" not in error.value.msg


def test_watch_publishes_what_is_staged_at_each_poll(tmp_path, monkeypatch, capsys):
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    polls = []

    def between_polls(seconds):
        polls.append(seconds)
        if len(polls) == 1:
            stage_run(tmp_path, "run-x", 1, SECOND, base_run_id="gone", table_folder="other")
        elif len(polls) == 2:
            stage_run(tmp_path, "run-b", 2, SECOND, base_run_id="run-a")
        else:
            raise KeyboardInterrupt  # Ctrl-C or SIGTERM

    monkeypatch.setattr("dbt.adapters.openmirror.tools.cli._pause", between_polls)
    assert main(["publish", str(tmp_path), "--watch", "--interval", "5"]) == 0
    assert polls == [5, 5, 5]
    assert record(tmp_path)["lastRunId"] == "run-b"
    assert replay(tmp_path / FOLDER) == [{"id": 1, "amount": 11}]
    # The broken table is reported at each later poll and does not stop the others.
    assert capsys.readouterr().err.count("holds the changes since run gone") == 2


def test_watch_waits_for_a_landing_zone_spark_has_not_written_yet(tmp_path, monkeypatch, capsys):
    landing_zone = tmp_path / "lz"
    polls = []

    def between_polls(seconds):
        polls.append(seconds)
        if len(polls) == 1:
            stage_run(landing_zone, "run-a", 1, FIRST, load="full")  # the first job writes it
        else:
            raise KeyboardInterrupt

    monkeypatch.setattr("dbt.adapters.openmirror.tools.cli._pause", between_polls)
    assert main(["publish", str(landing_zone), "--watch", "--interval", "5"]) == 0
    assert capsys.readouterr().out.count("does not exist yet; watching it") == 1
    assert replay(landing_zone / FOLDER) == [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}]


# -- the manifest is data: every field of a row is checked before anything is done with it ------


def _untouched(landing_zone, before, *kept):
    after = tree_digest(landing_zone)
    return all(after.get(path) == before[path] for path in kept)


@pytest.mark.parametrize(
    "recorded_folder", ["", ".", "sales.schema", "_scratchPad", "_scratchPad/dbt-openmirror/run-a"]
)
def test_a_discarded_row_deletes_nothing_but_its_own_staged_folder(tmp_path, recorded_folder):
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    (tmp_path / "sales.schema" / "customers").mkdir(parents=True)
    (tmp_path / "sales.schema" / "customers" / "00000000000000000001.parquet").write_bytes(b"another table")
    (tmp_path / "notes.txt").write_text("not ours")
    stage_run(tmp_path, "run-d", 2, SECOND, states=("staging", "discarded"), recorded_folder=recorded_folder)
    before = tree_digest(tmp_path)
    logged = []
    with pytest.raises(PublishError) as failure:
        PackagePublisher(LocalStorage(tmp_path), log=logged.append).publish()
    # The healthy run is published; the bad row touched nothing, not even its own files.
    assert replay(tmp_path / FOLDER) == [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}]
    kept = [p for p in before if not p.startswith("_scratchPad/dbt-openmirror/run-a/")]
    assert _untouched(tmp_path, before, *kept)
    assert (tmp_path / "_scratchPad/dbt-openmirror/run-d/part-00000.parquet").exists()
    assert f"staged_folder {recorded_folder!r}" in failure.value.msg
    assert "run-d" in failure.value.msg and "skipped" in failure.value.msg
    assert any("run-d" in line for line in logged)


def test_a_staged_row_cannot_publish_another_runs_files(tmp_path):
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    # Sorted first, and pointing at run-a's staged folder: it would move run-a's file into its
    # own table folder, then delete run-a's folder.
    stage_run(
        tmp_path,
        "run-x",
        1,
        SECOND,
        load="full",
        table_folder="dbo.schema/third",
        recorded_folder="_scratchPad/dbt-openmirror/run-a",
    )
    with pytest.raises(PublishError) as failure:
        _publish(tmp_path)
    assert "run-x" in failure.value.msg and "_scratchPad/dbt-openmirror/run-a" in failure.value.msg
    assert not (tmp_path / "dbo.schema").exists()
    assert replay(tmp_path / FOLDER) == [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}]


def _row(run_id, **changes):
    row = {
        "run_id": run_id,
        "model": "orders",
        "table_folder": "other",
        "key_columns": '["id"]',
        "base_run_id": None,
        "load": "full",
        "reason": "",
        "staged_sequence": 1,
        "staged_folder": f"_scratchPad/dbt-openmirror/{run_id}",
        "rows": 2,
        "marker_counts": '{"0": 2}',
        "state": "staged",
        "recorded_at": datetime.now(timezone.utc),
    }
    return {**row, **changes}


def test_malformed_manifest_rows_are_skipped_and_reported(tmp_path):
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    write_manifest_rows(tmp_path, "part-bad-state.parquet", [_row("run-s", state="published-ish")])
    write_manifest_rows(tmp_path, "part-null-id.parquet", [_row(None)])
    write_manifest_rows(tmp_path, "part-null-folder.parquet", [_row("run-n", table_folder=None)])
    write_manifest_rows(tmp_path, "part-bad-json.parquet", [_row("run-j", key_columns="[id")])
    write_manifest_rows(tmp_path, "part-bad-counts.parquet", [_row("run-c", marker_counts='{"0": "two"}')])
    write_manifest_rows(tmp_path, "part-bad-id.parquet", [_row("../../x", staged_folder="_scratchPad/x")])
    text_rows = pa.schema([(f.name, pa.string()) if f.name == "rows" else f for f in MANIFEST_SCHEMA])
    write_manifest_rows(tmp_path, "part-text-rows.parquet", [_row("run-t", rows="two")], text_rows)
    (tmp_path / MANIFEST_FOLDER / "part-garbage.parquet").write_bytes(b"not parquet")
    logged = []
    with pytest.raises(PublishError) as failure:
        PackagePublisher(LocalStorage(tmp_path), log=logged.append).publish()
    assert replay(tmp_path / FOLDER) == [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}]
    assert not (tmp_path / "other").exists()
    report = "\n".join(logged)
    for expected in (
        "part-bad-state.parquet row 1: state 'published-ish' is not one of",
        "part-null-id.parquet row 1: run_id None",
        "part-null-folder.parquet row 1: table_folder None",
        "part-bad-json.parquet row 1: key_columns '[id'",
        "part-bad-counts.parquet row 1: marker_counts",
        "part-bad-id.parquet row 1: run_id '../../x'",
        "part-text-rows.parquet row 1: rows 'two'",
        "part-garbage.parquet: not readable",
    ):
        assert expected in report, report
    assert "skipped" in failure.value.msg
    assert {r.run_id for r in read_manifest(LocalStorage(tmp_path))} == {"run-a"}


@pytest.mark.parametrize("run_id", ["manifest", "leases", "Leases", "probe-0a1b"])
@pytest.mark.parametrize("state", ["discarded", "staged"])
def test_a_run_id_naming_one_of_our_own_folders_is_refused(tmp_path, run_id, state):
    """The staging root's own folders are not runs' staged folders: discarding such a run would
    delete the manifest or the leases, publishing it would move the manifest into a table."""
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    _publish(tmp_path)
    (tmp_path / "_scratchPad/dbt-openmirror/leases/x").mkdir(parents=True, exist_ok=True)
    (tmp_path / f"_scratchPad/dbt-openmirror/{run_id}").mkdir(parents=True, exist_ok=True)
    (tmp_path / f"_scratchPad/dbt-openmirror/{run_id}/part-00000.parquet").write_bytes(b"ours, not a run's")
    rows = len(list((tmp_path / MANIFEST_FOLDER).iterdir()))
    write_manifest_rows(
        tmp_path, "part-forged.parquet", [_row(run_id, state=state, rows=rows, table_folder="evil.schema/t")]
    )
    before = tree_digest(tmp_path)
    logged = []
    with pytest.raises(PublishError) as failure:
        PackagePublisher(LocalStorage(tmp_path), log=logged.append).publish()
    assert f"run_id {run_id!r}" in "\n".join(logged) and "skipped" in failure.value.msg
    assert tree_digest(tmp_path) == before
    assert not (tmp_path / "evil.schema").exists()


def test_rows_of_one_run_that_disagree_are_skipped(tmp_path):
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    # A second `staged` row for run-a, naming another table folder.
    write_manifest_rows(tmp_path, "part-forged.parquet", [_row("run-a", table_folder="dbo.schema/third")])
    with pytest.raises(PublishError) as failure:
        _publish(tmp_path)
    assert "run-a" in failure.value.msg and "table_folder" in failure.value.msg
    assert not (tmp_path / FOLDER).exists() and not (tmp_path / "dbo.schema").exists()
    assert (tmp_path / "_scratchPad/dbt-openmirror/run-a/part-00000.parquet").exists()


def test_a_storage_error_in_one_table_does_not_stop_the_others(tmp_path):
    # A file where a table folder should be: every write into it fails with an OSError.
    (tmp_path / "other").write_text("in the way")
    stage_run(tmp_path, "run-x", 1, FIRST, load="full", table_folder="other")
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    logged = []
    with pytest.raises(PublishError) as failure:
        PackagePublisher(LocalStorage(tmp_path), log=logged.append).publish()
    assert replay(tmp_path / FOLDER) == [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}]
    assert failure.value.msg.startswith("other: ")
    assert (tmp_path / "other").read_text() == "in the way"


# Two publishers of one table folder: two models, or two targets (schemas) of one model.
PUBLISHERS = {
    "two models": ({"model": "orders"}, {"model": "orders_v2"}),
    "two targets": ({"relation": "prod.orders"}, {"relation": "dev.orders"}),
}


@pytest.mark.parametrize("first, second", PUBLISHERS.values(), ids=PUBLISHERS.keys())
def test_two_publishers_staging_into_one_table_folder_are_refused_naming_both(tmp_path, first, second):
    """Each would rebuild the other's table at every run: the table is not published."""
    stage_run(tmp_path, "run-a", 1, FIRST, load="full", **first)
    stage_run(tmp_path, "run-b", 2, FIRST, load="full", **second)
    before = tree_digest(tmp_path)
    with pytest.raises(PublishError) as failure:
        _publish(tmp_path)
    for publisher in (first, second):
        assert f"'{publisher.get('relation') or publisher['model']}'" in failure.value.msg
    assert FOLDER in failure.value.msg
    assert tree_digest(tmp_path) == before


def test_a_folder_another_model_publishes_is_refused(tmp_path):
    stage_run(tmp_path, "run-a", 1, FIRST, load="full", model="orders")
    _publish(tmp_path)
    stage_run(tmp_path, "run-b", 2, SECOND, base_run_id="run-a", model="orders_v2")
    with pytest.raises(PublishError, match="'orders_v2'.*orders"):
        _publish(tmp_path)
    assert replay(tmp_path / FOLDER) == [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}]


@pytest.mark.parametrize("first, second", PUBLISHERS.values(), ids=PUBLISHERS.keys())
@pytest.mark.parametrize("reason", ["first publish", "no snapshot records a staged run", FULL_REFRESH])
def test_a_full_load_takes_a_folder_another_publisher_publishes_only_on_a_full_refresh(tmp_path, reason, first, second):
    """A full load deletes the folder: one staged because its snapshot was missing (a new
    target's first run) is refused, as an incremental run is; one staged by --full-refresh takes
    the folder over."""
    stage_run(tmp_path, "run-a", 1, FIRST, load="full", **first)
    _publish(tmp_path)
    stage_run(tmp_path, "run-b", 2, [{"id": 9, "amount": 90, "__rowMarker__": 0}], load="full", reason=reason, **second)
    if reason == FULL_REFRESH:
        assert [p.names for p in _publish(tmp_path)] == [["00000000000000000001.parquet"]]
        assert replay(tmp_path / FOLDER) == [{"id": 9, "amount": 90}]
        return
    before = tree_digest(tmp_path / FOLDER)
    owner, model = first.get("relation") or first["model"], second.get("model", "orders")
    with pytest.raises(PublishError, match=f"'{model}'.*, which {owner} publishes.*--full-refresh -s {model}"):
        _publish(tmp_path)
    assert tree_digest(tmp_path / FOLDER) == before


def test_a_journal_naming_the_bare_model_accepts_its_runs_that_record_a_relation(tmp_path):
    """Runs staged before the manifest recorded relations were journaled under the model's name."""
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    _publish(tmp_path)
    assert record(tmp_path)["owner"] == "orders"
    stage_run(tmp_path, "run-b", 2, SECOND, base_run_id="run-a", relation="prod.orders")
    assert [p.names for p in _publish(tmp_path)] == [["00000000000000000002.parquet"]]
    assert record(tmp_path)["owner"] == "prod.orders"
    stage_run(tmp_path, "run-c", 3, [{"id": 9, "amount": 90, "__rowMarker__": 0}], load="full", relation="dev.orders")
    with pytest.raises(PublishError, match="which prod.orders publishes"):
        _publish(tmp_path)


@pytest.mark.parametrize("reason", ["first publish", "no snapshot records a staged run"])
def test_files_no_journal_accounts_for_are_deleted_only_on_a_full_refresh(tmp_path, reason):
    """Another publisher's table (or one whose journal was deleted): a full load would delete its
    files, so only one staged by --full-refresh is published."""
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    _publish(tmp_path)
    (tmp_path / FOLDER / "_dbt_openmirror.json").unlink()
    stage_run(tmp_path, "run-b", 2, SECOND, load="full", reason=reason)
    before = tree_digest(tmp_path / FOLDER)
    with pytest.raises(PublishError) as failure:
        _publish(tmp_path)
    assert "holds files up to 00000000000000000001.parquet" in failure.value.msg
    assert "_dbt_openmirror.json" in failure.value.msg and "--full-refresh -s orders" in failure.value.msg
    assert tree_digest(tmp_path / FOLDER) == before


def test_a_full_refresh_takes_over_files_no_journal_accounts_for(tmp_path):
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    _publish(tmp_path)
    (tmp_path / FOLDER / "_dbt_openmirror.json").unlink()
    stage_run(tmp_path, "run-b", 2, [{"id": 9, "amount": 90, "__rowMarker__": 0}], load="full", reason=FULL_REFRESH)
    assert [p.names for p in _publish(tmp_path)] == [["00000000000000000001.parquet"]]
    assert replay(tmp_path / FOLDER) == [{"id": 9, "amount": 90}]
    assert record(tmp_path)["lastRunId"] == "run-b"


def test_a_full_load_waits_until_the_service_no_longer_lists_the_table(tmp_path):
    """The restart protocol in package mode: with the service still holding the table, the
    full load stays staged; once the table is gone it is published."""
    landing_zone = tmp_path / "Files" / "LandingZone"
    landing_zone.mkdir(parents=True)
    (tmp_path / "Files" / "Monitoring").mkdir()
    tables = tmp_path / "Files" / "Monitoring" / "tables.json"
    tables.write_text(
        '{"tables": [{"sourceSchemaName": "sales", "sourceTableName": "orders", "status": "Replicating"}]}'
    )
    stage_run(landing_zone, "run-a", 1, FIRST, load="full")
    publisher = PackagePublisher(LocalStorage(landing_zone), rebuild_wait_seconds=0, log=lambda line: None)
    with pytest.raises(PublishError, match="still lists table sales.orders"):
        publisher.publish()
    assert not (landing_zone / FOLDER).exists()
    assert [r.state for r in read_manifest(LocalStorage(landing_zone))] == ["staged"]
    tables.write_text('{"tables": []}')
    assert [p.names for p in publisher.publish()] == [["00000000000000000001.parquet"]]
    assert record(landing_zone)["waitForListing"] is True


def test_a_run_held_for_its_tests_is_published_only_once_marked_staged(tmp_path):
    """publish='after_tests': the on-run-end hook marks a held run staged when its tests passed."""
    stage_run(tmp_path, "run-a", 1, FIRST, load="full", states=("staging", "held"))
    assert _publish(tmp_path) == []
    assert not (tmp_path / FOLDER).exists()
    assert [r.state for r in read_manifest(LocalStorage(tmp_path))] == ["held"]
    stage_run(tmp_path, "run-a", 1, FIRST, load="full", states=("staging", "held", "staged"))
    assert [p.names for p in _publish(tmp_path)] == [["00000000000000000001.parquet"]]


def test_files_of_a_run_stopped_before_the_manifest_recorded_it_go_once_its_model_ran_again(tmp_path):
    # A job killed while Spark wrote its staged files: no manifest row names the folder, and
    # nothing removed it (validate warned about it for good).
    invocation = "0b6b5c2e-4a8e-4f0a-9c57-3f1d2a7e9b10"
    model = "1a2b3c4d"  # the part of a package run id that names the model
    staging = tmp_path / "_scratchPad" / "dbt-openmirror"

    def staged_files(name, age_seconds):
        (staging / name).mkdir(parents=True)
        part = staging / name / "part-00000.parquet"
        pq.write_table(pa.table({"id": [9]}), part)
        os.utime(part, (time.time() - age_seconds,) * 2)

    staged_files(f"{invocation[:-1]}1-{model}", age_seconds=3600)  # abandoned: its model ran since
    kept = [
        f"{invocation[:-1]}2-{model}",  # written just now: perhaps still being written
        f"{invocation[:-1]}3-99999999",  # a model with no later run
        f"{invocation[:-1]}4-{model[:-1]}",  # not a package run id
    ]
    for name in kept:
        staged_files(name, age_seconds=0 if model in name else 3600)
    stage_run(tmp_path, f"{invocation}-{model}", 1, FIRST, load="full")
    lines = []
    PackagePublisher(LocalStorage(tmp_path), log=lines.append).publish()
    assert not (staging / f"{invocation[:-1]}1-{model}").exists(), lines
    assert all((staging / name / "part-00000.parquet").exists() for name in kept)
    assert any(f"{invocation[:-1]}1-{model}" in line and "before the manifest recorded it" in line for line in lines)

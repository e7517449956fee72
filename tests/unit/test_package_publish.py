"""`dbt-openmirror publish` over runs staged without Spark: order, exactly once, broken chains,
unsafe table folders, discarded runs and `status`."""

import pytest

from dbt.adapters.openmirror.cli import main
from dbt.adapters.openmirror.errors import PublishError
from dbt.adapters.openmirror.package_publish import PackagePublisher, read_manifest
from dbt.adapters.openmirror.storage import LocalStorage
from tests.functional.mirror import tree_digest
from tests.mirror_oracle import replay
from tests.unit.package_staging import FOLDER, record, stage_run

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
        ("run-a", ["00000000000000000001.parquet"]), ("run-b", ["00000000000000000002.parquet"]),
    ]
    assert replay(tmp_path / FOLDER) == [{"id": 1, "amount": 11}]
    assert record(tmp_path)["lastRunId"] == "run-b"
    assert {r.run_id: r.state for r in read_manifest(LocalStorage(tmp_path))} == {
        "run-a": "published", "run-b": "published",
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
        ["00000000000000000001.parquet"], [], ["00000000000000000002.parquet"],
    ]
    assert record(tmp_path)["lastRunId"] == "run-c"


def test_a_broken_chain_stops_the_table_and_says_what_to_do(tmp_path):
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    stage_run(tmp_path, "run-c", 2, SECOND, base_run_id="run-b")  # run-b was lost
    with pytest.raises(PublishError) as failure:
        _publish(tmp_path)
    assert "holds the changes since run run-b" in failure.value.msg
    assert "holds run run-a last" in failure.value.msg
    assert "dbt run --full-refresh -s orders" in failure.value.msg
    assert replay(tmp_path / FOLDER) == [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}]


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
    assert "'../escape'" in failure.value.msg and "Nothing of it was published" in failure.value.msg
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
    assert "run-d" not in out
    assert _publish(tmp_path) == []  # still staging: dbt has not advanced its snapshot
    assert not (tmp_path / "_scratchPad" / "dbt-openmirror" / "run-d").exists()
    assert (tmp_path / "_scratchPad" / "dbt-openmirror" / "run-a").exists()


def test_publish_command(tmp_path, capsys):
    stage_run(tmp_path, "run-a", 1, FIRST, load="full")
    assert main(["publish", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"{FOLDER}: published run run-a of 'orders' (full load, 2 rows) as 00000000000000000001.parquet" in out
    stage_run(tmp_path, "run-c", 2, SECOND, base_run_id="run-b")
    assert main(["publish", str(tmp_path)]) == 2
    assert "dbt run --full-refresh -s orders" in capsys.readouterr().err


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

    monkeypatch.setattr("dbt.adapters.openmirror.cli._pause", between_polls)
    assert main(["publish", str(tmp_path), "--watch", "--interval", "5"]) == 0
    assert polls == [5, 5, 5]
    assert record(tmp_path)["lastRunId"] == "run-b"
    assert replay(tmp_path / FOLDER) == [{"id": 1, "amount": 11}]
    # The broken table is reported at each later poll and does not stop the others.
    assert capsys.readouterr().err.count("holds the changes since run gone") == 2

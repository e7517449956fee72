"""`dbt-openmirror replay --watch`: polling as the service does until stopped, with the service's
status files beside an item's `Files/LandingZone`, followed through a table's rebuild (delete the
folder, wait until the table is gone, recreate it, wait until it is back)."""

import json
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from dbt.adapters.openmirror.package.publish import PackagePublisher
from dbt.adapters.openmirror.rules.monitoring import describe_replicator, parse_tables
from dbt.adapters.openmirror.storage import LocalStorage
from dbt.adapters.openmirror.tools.cli import main
from dbt.adapters.openmirror.tools.local_mirror.replay import LocalMirror
from tests.support.landing_zones import declare, parquet, rows

TABLE = ("sales", "orders")


def wait_until(condition, timeout=60.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def monitoring(files, name="tables.json"):
    path = files / "Monitoring" / name
    return path.read_text() if path.exists() else None


def listed(files):
    text = monitoring(files)
    return parse_tables(text, "Files/Monitoring/tables.json") if text else {}


@pytest.fixture
def item(tmp_path):
    files = tmp_path / "item" / "Files"
    folder = declare(files / "LandingZone" / "sales.schema" / "orders", ["id"])
    parquet(folder, 1, {"id": [1, 2], "v": ["old", "old"]})
    parquet(folder, 2, {"id": [2], "v": ["changed"]}, [1])
    return files


def rebuild_and_follow(files, target):
    """The restart protocol a publisher follows, checked against what the mirror says."""
    folder = files / "LandingZone" / "sales.schema" / "orders"
    wait_until(
        lambda: (listed(files).get(TABLE) or None) and listed(files)[TABLE].processed_rows == 3,
        what="the table replicated",
    )
    wait_until(lambda: rows(target, *TABLE) == [{"id": 1, "v": "old"}, {"id": 2, "v": "changed"}], what="rows")
    shutil.rmtree(folder)
    wait_until(lambda: TABLE not in listed(files), what="the table to disappear")
    assert not (target / "sales" / "orders").exists()
    declare(folder, ["id"])
    parquet(folder, 1, {"id": [7], "v": ["new"]})
    wait_until(
        lambda: TABLE in listed(files) and listed(files)[TABLE].status == "Replicating", what="the table to reappear"
    )
    assert rows(target, *TABLE) == [{"id": 7, "v": "new"}]
    assert listed(files)[TABLE].processed_rows == 1


def test_watch_in_process_follows_a_rebuilt_table_and_stops_on_request(item, tmp_path):
    target = tmp_path / "mirror"
    mirror = LocalMirror(LocalStorage(item / "LandingZone"), target)
    stop = threading.Event()
    watching = threading.Thread(target=mirror.watch, args=(0.1, stop))
    watching.start()
    try:
        rebuild_and_follow(item, target)
        assert describe_replicator(monitoring(item, "replicator.json")) == "Running"
        # The target's own copy of the status says the same.
        assert json.loads((target / "Monitoring" / "tables.json").read_text()) == json.loads(monitoring(item))
    finally:
        stop.set()
        watching.join(timeout=30)
    assert not watching.is_alive()
    assert describe_replicator(monitoring(item, "replicator.json")) == "Stopped"


def test_replay_watch_command_follows_a_rebuilt_table_until_sigterm(item, tmp_path):
    target = tmp_path / "mirror"
    command = [
        sys.executable,
        "-m",
        "dbt.adapters.openmirror.tools.cli",
        "replay",
        str(item / "LandingZone"),
        "--target",
        str(target),
        "--watch",
        "--interval",
        "0.2",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        rebuild_and_follow(item, target)
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "Traceback" not in err
    assert "sales.orders: dropped (its folder was deleted)" in out
    assert describe_replicator(monitoring(item, "replicator.json")) == "Stopped"


@pytest.mark.parametrize("command", ["replay", "validate", "status", "publish"])
def test_a_landing_zone_that_does_not_exist_is_an_error(tmp_path, capsys, command):
    """A mistyped path is not an empty landing zone: a scheduled publish would succeed forever.
    (`publish --watch` and `webhook` may start before Spark first writes it.)"""
    arguments = [command, str(tmp_path / "missing")] + (
        ["--target", str(tmp_path / "m")] if command == "replay" else []
    )
    assert main(arguments) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"dbt-openmirror {command}: the landing zone ") and "does not exist" in error
    assert not (tmp_path / "missing").exists()


def test_status_of_a_local_mirror_that_does_not_exist_is_an_error(lz, tmp_path, capsys):
    declare(lz / "t", ["id"])
    assert main(["status", str(lz), "--target", str(tmp_path / "no-mirror")]) == 2
    assert "the local mirror" in capsys.readouterr().err


@pytest.mark.parametrize(
    "arguments, refusal",
    [
        (["publish", "--rebuild-wait-seconds", "-5"], "'-5' is not a number of seconds (0 or more)"),
        (["publish", "--lease-wait-seconds", "nan"], "'nan' is not a number of seconds"),
        (["publish", "--watch", "--interval", "0"], "'0' is not a number of seconds more than 0"),
        (["webhook", "--max-age-seconds", "0"], "'0' is not a number of seconds more than 0"),
        (["replay", "--target", "m", "--watch", "--interval", "-1"], "'-1' is not a number of seconds"),
        (["webhook", "--max-age-seconds", "inf"], "'inf' is not a number of seconds"),
        (["webhook", "--rebuild-wait-seconds", "soon"], "'soon' is not a number of seconds"),
        (["webhook", "--port", "99999"], "'99999' is not a port number (0 to 65535)"),
        (["webhook", "--port", "-1"], "'-1' is not a port number"),
    ],
)
def test_durations_and_ports_out_of_range_are_refused(tmp_path, capsys, arguments, refusal):
    with pytest.raises(SystemExit) as exit:
        main([arguments[0], str(tmp_path), *arguments[1:]])
    assert exit.value.code == 2
    assert refusal in capsys.readouterr().err


def test_a_target_that_cannot_be_written_is_a_message(lz, tmp_path, capsys):
    declare(lz / "t", ["id"])
    (tmp_path / "file").write_text("not a folder")
    assert main(["replay", str(lz), "--target", str(tmp_path / "file" / "mirror")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("dbt-openmirror replay: ") and "Traceback" not in error


def test_the_command_starts_where_fcntl_does_not_exist():
    """Windows has no fcntl: the replay lock must not need it at import time."""
    code = (
        "import sys\n"
        "sys.modules.pop('fcntl', None)\n"
        "class NoFcntl:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'fcntl':\n"
        "            raise ImportError('no fcntl on this system')\n"
        "sys.meta_path.insert(0, NoFcntl())\n"
        "from dbt.adapters.openmirror.tools.cli import parser\n"
        "parser().parse_args(['replay', 'lz', '--target', 'm'])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_replay_of_a_onelake_landing_zone_writes_its_monitoring_files(tmp_path, monkeypatch, capsys):
    """A one-off replay writes only its target's status; a watching one, the service's too (a
    status nothing updates would keep a publisher's rebuild waiting)."""
    from dbt.adapters.openmirror.storage import open_landing_zone
    from tests.support.dfs_emulator import DfsEmulator, FixedTokenCredential
    from tests.support.onelake import sign_in_with

    with DfsEmulator(tmp_path / "onelake", filesystems=["ws"]) as dfs:
        files = dfs.root / "ws" / "item" / "Files"
        folder = declare(files / "LandingZone" / "sales.schema" / "orders", ["id"])
        parquet(folder, 1, {"id": [1, 2], "v": ["a", "b"]})
        parquet(folder, 2, {"id": [2], "v": ["b2"]}, [1])
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", dfs.ca_path)
        sign_in_with(monkeypatch, "t")
        url = f"{dfs.url}/ws/item/Files/LandingZone"
        assert main(["replay", url, "--target", str(tmp_path / "mirror")]) == 0
        assert rows(tmp_path / "mirror", *TABLE) == [{"id": 1, "v": "a"}, {"id": 2, "v": "b2"}]
        assert sorted(p.name for p in (folder / "_ProcessedFiles").iterdir()) == [
            f"{1:020d}.parquet",
            f"{2:020d}.parquet",
        ]
        assert not (files / "Monitoring").exists()
        stop = threading.Event()
        LocalMirror(open_landing_zone(url, credential=FixedTokenCredential("t")), tmp_path / "mirror").watch(
            0.01, stop, lambda statuses: stop.set()
        )
        assert listed(files)[TABLE].processed_rows == 3
        assert describe_replicator(monitoring(files, "replicator.json")) == "Stopped"
        assert sorted(p.name for p in (files / "Monitoring").iterdir()) == ["replicator.json", "tables.json"]
    assert "sales.orders: Replicating, applied through file 2, 3 rows processed" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["publish", "replay", "validate"])
def test_ctrl_c_of_a_command_that_does_not_watch_is_one_line(lz, tmp_path, capsys, monkeypatch, command):
    # It ended in a Python traceback; what a stopped publish started, the next one finishes.
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(PackagePublisher, "publish", interrupted)
    monkeypatch.setattr(LocalMirror, "replay", interrupted)
    monkeypatch.setattr("dbt.adapters.openmirror.tools.cli.validate", interrupted)
    extra = ["--target", str(tmp_path / "m")] if command == "replay" else []
    assert main([command, str(lz), *extra]) == 130
    error = capsys.readouterr().err
    assert error.startswith(f"dbt-openmirror {command}: interrupted") and error.count("\n") == 1, error

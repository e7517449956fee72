"""`dbt-openmirror replay` killed with SIGKILL at random moments: the next call neither loses
nor double-applies a file (checked against the independent pyarrow replay)."""

import json
import random
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.delta_reader import read_delta
from tests.support.mirror_oracle import replay as oracle_replay

pytestmark = pytest.mark.extended


def _landing_zone(root, files=24, keys=400):
    folder = root / "s.schema" / "t"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text(json.dumps({"keyColumns": ["id"]}))
    rng = random.Random(11)
    present = set()
    for number in range(1, files + 1):
        ids = rng.sample(range(keys), 120)
        markers = []
        for key in ids:
            if key in present and rng.random() < 0.3:
                markers.append(2)
                present.discard(key)
            else:
                markers.append(1 if key in present else 0)
                present.add(key)
        table = pa.table(
            {
                "id": ids,
                "v": [f"{number}-{k}" for k in ids],
                "__rowMarker__": pa.array(markers, pa.int32()),
            }
        )
        pq.write_table(table, folder / f"{number:020d}.parquet")
    return folder


def _replay(landing_zone, target):
    command = [
        sys.executable,
        "-m",
        "dbt.adapters.openmirror.tools.cli",
        "replay",
        str(landing_zone),
        "--target",
        str(target),
    ]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _commits(target) -> int:
    log = target / "s" / "t" / "_delta_log"
    return len(list(log.glob("*.json"))) if log.exists() else 0


def test_replay_survives_kills(tmp_path):
    landing_zone, target = tmp_path / "lz", tmp_path / "mirror"
    folder = _landing_zone(landing_zone)
    expected = sorted(json.dumps(r, sort_keys=True) for r in oracle_replay(folder))
    rng = random.Random(5)
    kills = 0
    for _ in range(6):
        # Kill after 1 to 3 more files were committed (each file is one Delta commit), a little
        # later at random: between a commit and its file move, or inside the next file.
        committed = _commits(target) + rng.randint(1, 3)
        process = _replay(landing_zone, target)
        while process.poll() is None and _commits(target) < committed:
            time.sleep(0.002)
        time.sleep(rng.uniform(0, 0.05))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        process.wait()
    finished = _replay(landing_zone, target)
    assert finished.wait(timeout=120) == 0, finished.stderr.read().decode()
    assert kills >= 1, "no replay was interrupted: make the landing zone larger"
    mirrored = sorted(json.dumps(r, sort_keys=True) for r in read_delta(target / "s" / "t"))
    assert mirrored == expected
    assert not list(folder.glob("*.parquet"))  # every file applied and moved


def test_concurrent_replays_apply_each_file_once(tmp_path):
    landing_zone, target = tmp_path / "lz", tmp_path / "mirror"
    folder = _landing_zone(landing_zone, files=12)
    expected = sorted(json.dumps(r, sort_keys=True) for r in oracle_replay(folder))
    processes = [_replay(landing_zone, target) for _ in range(3)]
    for process in processes:
        assert process.wait(timeout=120) == 0, process.stderr.read().decode()
    mirrored = sorted(json.dumps(r, sort_keys=True) for r in read_delta(target / "s" / "t"))
    assert mirrored == expected

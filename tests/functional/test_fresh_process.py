"""`dbt run` as a user starts it: a new process, whose Spark session is created from the profile
(only a process's first session applies Spark's static settings), on a `method: session` profile
that sets neither the warehouse nor the metastore.

- Runs started from different folders find the same snapshots: the second is incremental.
- Spark's console output does not bury dbt's: no progress bars, no log lines, no stack traces.
- Ctrl-C stops the running model: its Spark job is cancelled, nothing is published.
"""

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.mirror import tree_digest
from tests.support.subprocess_project import dbt_run_command, write_project

pytestmark = pytest.mark.extended

FIRST = [(1, "a", 10), (2, "b", 20), (3, "c", 30)]
SECOND = [(1, "a", 11), (2, "b", 20), (4, "d", 40)]
# With `slow`, the output only after an aggregate over a trillion rows: hours of Spark work.
SLOW_MODEL = """
{{ config(materialized='open_mirror', unique_key='id') }}
select t.* from values {{ var('rows') }} as t(id, name, amount)
{% if var('slow', false) %}
cross join (select max(hash(id)) as h from range(1000000000000)) where h is not null
{% endif %}
"""
SPARK_FILES = ("metastore_db", "spark-warehouse", "derby.log")


def _profile_target():
    """What a user's profile sets: where Spark runs, not where it keeps its tables."""
    return {
        "type": "openmirror",
        "method": "session",
        "host": "localhost",
        "threads": 2,
        "server_side_parameters": {
            "spark.master": "local[2]",
            "spark.sql.shuffle.partitions": "2",
            "spark.ui.enabled": "false",
            "spark.sql.session.timeZone": "UTC",
        },
    }


def _run_from(folder: Path, command) -> subprocess.CompletedProcess:
    folder.mkdir(exist_ok=True)
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600)


def _modes(project: Path):
    results = json.loads((project / "target" / "run_results.json").read_text())["results"]
    return {r["unique_id"].split(".")[-1]: r["adapter_response"].get("mode") for r in results}


@pytest.fixture(scope="module")
def two_folders(tmp_path_factory):
    """Two runs of the project, each started from a folder of its own; the first also has a
    model that fails in Spark."""
    work = tmp_path_factory.mktemp("two_folders")
    project = work / "project"
    write_project(project, _profile_target())
    (project / "models" / "broken.sql").write_text(
        "{{ config(materialized='table') }}\nselect raise_error('boom') as x"
    )
    first = _run_from(work / "here", dbt_run_command(project, FIRST))
    first_modes = _modes(project)
    second = _run_from(work / "there", dbt_run_command(project, SECOND) + ["--select", "customers"])
    second_modes = _modes(project)
    third = _run_from(work / "here", dbt_run_command(project, SECOND) + ["--select", "customers"])
    return work, project, first, first_modes, second, second_modes, third


def _messages(project: Path):
    results = json.loads((project / "target" / "run_results.json").read_text())["results"]
    return {r["unique_id"].split(".")[-1]: r["adapter_response"].get("_message", "") for r in results}


def test_a_run_from_another_folder_is_incremental(two_folders):
    work, project, first, first_modes, second, second_modes, _ = two_folders
    assert first.returncode == 1, first.stdout[-3000:]  # the broken model
    assert first_modes["customers"] == "initial"
    assert second.returncode == 0, second.stdout[-3000:]
    assert second_modes["customers"] == "incremental"
    for name in SPARK_FILES:
        assert (project / name).exists(), name
        assert not (work / "here" / name).exists() and not (work / "there" / name).exists(), name


def test_a_later_process_reading_the_same_inputs_builds_nothing(two_folders):
    """What a model reads is digested the same way by every process (no process-bound setting
    in it), so a scheduled run over untouched inputs skips."""
    _, project, _, _, _, _, third = two_folders
    assert third.returncode == 0, third.stdout[-3000:]
    assert _messages(project)["customers"].startswith("inputs unchanged since run ")
    assert _modes(project)["customers"] == "incremental"


def test_spark_does_not_flood_the_output(two_folders):
    _, _, first, _, _, _, _ = two_folders
    output = first.stdout + first.stderr
    assert "SparkRuntimeException: [USER_RAISED_EXCEPTION] boom SQLSTATE: P0001" in first.stdout
    assert "[Stage " not in output  # progress bars
    assert "\tat " not in output  # Java stack traces
    assert "SQLQueryContextLogger" not in output
    assert "Ignoring non-Spark config property" not in output  # spark-submit on a bare Hive key
    # Spark's log lines once the session is up (at start it still prints a few; see README).
    assert not re.search(r" (WARN|ERROR) (HiveConf|SessionState|Executor|TaskSetManager|Utils: Aborting)", output)


def _python_tracebacks(output: str):
    """Each Python traceback in the output: its frames' files and its last line."""
    found = []
    for block in output.split("Traceback (most recent call last):")[1:]:
        lines = block.strip("\n").splitlines()
        files = re.findall(r'File "([^"]+)"', block)
        last = next(line for line in lines if line and not line.startswith(" "))
        found.append((files, last))
    return found


def test_ctrl_c_stops_the_running_model_and_publishes_nothing(tmp_path):
    project = tmp_path / "project"
    landing_zone = write_project(project, _profile_target()).parents[1]
    (project / "models" / "customers.sql").write_text(SLOW_MODEL)
    (landing_zone / "_partnerEvents.json").write_text("{}\n")  # something to keep as it is
    before = tree_digest(landing_zone)

    run = subprocess.Popen(
        dbt_run_command(project, FIRST, slow=True),
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    output = []
    try:
        for line in run.stdout:
            output.append(line)
            if "START sql open_mirror model" in line:
                break
        time.sleep(8)  # into the model's Spark job
        os.killpg(run.pid, signal.SIGINT)  # as a terminal sends Ctrl-C: to the whole group
        interrupted = time.monotonic()
        output.append(run.communicate(timeout=120)[0])  # not minutes of Spark work
        stopped_after = time.monotonic() - interrupted
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    text = "".join(output)
    print(f"the process ended {stopped_after:.1f} s after Ctrl-C")

    assert run.returncode != 0
    assert tree_digest(landing_zone) == before
    assert "ERROR creating sql open_mirror model jobs.customers" in text, text[-3000:]
    # dbt prints no model message after Ctrl-C; its debug log has it.
    assert "interrupted: the run was cancelled" in (project / "logs" / "dbt.log").read_text()
    # The one traceback is dbt-core's own report of the KeyboardInterrupt (dbt/cli/requires.py
    # logs every non-dbt exception with its stack); none comes from the adapter, pyspark or py4j.
    for files, last in _python_tracebacks(text):
        assert last == "KeyboardInterrupt", text[-3000:]
        assert files[0].endswith("dbt/cli/requires.py"), files
        assert not any(re.search(r"(openmirror|pyspark|py4j)", f) for f in files), files

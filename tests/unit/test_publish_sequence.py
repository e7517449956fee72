"""The plugin and `dbt-openmirror publish` publish through one sequence: the same runs leave the
same table folder and journal, also a run without changes (no file, and the journal names it)."""

import json
from pathlib import Path
from typing import Any

import pytest

from dbt.adapters.openmirror.package.publish import PackagePublisher
from dbt.adapters.openmirror.rules.landing_zone import PUBLISH_RECORD_FILE
from dbt.adapters.openmirror.storage.local import LocalStorage
from tests.support.mirror_runs import Project
from tests.support.package_staging import FOLDER, stage_run

FIRST = [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}]
#: (model output after the run, its change rows as package mode stages them)
RUNS = [
    (FIRST, [{**row, "__rowMarker__": 0} for row in FIRST]),
    (FIRST, []),  # no change
    (
        [FIRST[0], {"id": 3, "amount": 30}],
        [{"id": 3, "amount": 30, "__rowMarker__": 0}, {"id": 2, "amount": None, "__rowMarker__": 2}],
    ),
    ([FIRST[0], {"id": 3, "amount": 30}], []),  # no change again
]


class PluginRuns:
    def __init__(self, root: Path) -> None:
        self.project = Project(root, {"mirror_schema": "sales", "mirror_table": "orders"})
        self.landing_zone = self.project.landing_zone

    def publish(self, number: int, output: list[dict[str, Any]], changes: list[dict[str, Any]]) -> None:
        self.project.run([{"id": r["id"], "name": str(r["amount"])} for r in output])


class PackageRuns:
    def __init__(self, root: Path) -> None:
        self.landing_zone = root / "landing_zone"
        self.landing_zone.mkdir()
        self.last: str | None = None

    def publish(self, number: int, output: list[dict[str, Any]], changes: list[dict[str, Any]]) -> None:
        load = "full" if number == 1 else "incremental"
        stage_run(self.landing_zone, f"run-{number}", number, changes, base_run_id=self.last, load=load)
        PackagePublisher(LocalStorage(self.landing_zone), log=lambda line: None).publish()
        self.last = f"run-{number}"


def _outcome(landing_zone: Path) -> dict[str, Any]:
    folder = landing_zone / FOLDER
    record = json.loads((folder / PUBLISH_RECORD_FILE).read_text())
    return {
        "files": sorted(p.name for p in folder.glob("*.parquet")),
        "last run": record["lastRunId"],
        "last number": record["lastSequenceNumber"],
        "last files": record["lastFiles"],
        "pending": record.get("pending"),
        "staged": sorted(p.name for p in (landing_zone / "_scratchPad" / "dbt-openmirror").glob("run-*")),
    }


@pytest.mark.parametrize("publisher", [PluginRuns, PackageRuns], ids=["plugin", "package"])
def test_every_run_is_journaled_and_a_run_without_changes_publishes_no_file(tmp_path: Path, publisher: Any) -> None:
    runs = publisher(tmp_path)
    outcomes = []
    for number, (output, changes) in enumerate(RUNS, start=1):
        runs.publish(number, output, changes)
        outcomes.append(_outcome(runs.landing_zone))
    one, two = "00000000000000000001.parquet", "00000000000000000002.parquet"
    assert outcomes == [
        {"files": [one], "last run": "run-1", "last number": 1, "last files": [one], "pending": None, "staged": []},
        {"files": [one], "last run": "run-2", "last number": 1, "last files": [], "pending": None, "staged": []},
        {
            "files": [one, two],
            "last run": "run-3",
            "last number": 2,
            "last files": [two],
            "pending": None,
            "staged": [],
        },
        {"files": [one, two], "last run": "run-4", "last number": 2, "last files": [], "pending": None, "staged": []},
    ]

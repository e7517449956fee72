"""Crash-point sweeps: a run fails at each landing-zone operation in turn (tests/support/faults.py),
the next `dbt run` recovers, and an independent replay of the table folder must equal the model
output with continuous numbering, no journal left open and nothing left staged."""

import json
from dataclasses import dataclass, field

import pytest
from dbt.tests.util import run_dbt

from tests.support.faults import OVERLAY_VIEW, SNAPSHOT_ASIDE, SNAPSHOT_TO_BASE, FaultInjector, injected
from tests.support.mirror import findings_for, model_output, normalized, set_source, table_folder
from tests.support.mirror_oracle import data_files, replay
from tests.support.onelake import OnOneLake, onelake_landing_zone_on_disk

MODEL = """
{{ config(materialized='open_mirror', unique_key='id', max_rows_per_file=2,
          on_schema_change=var('on_change', 'append_new_columns')) }}
select * from {{ target.schema }}.src
"""

# Alternating between these changes 5 rows each way (2 updates, 1 delete, 2 inserts), so every
# incremental run publishes 3 files of at most 2 rows.
STATE_A = (
    "select * from values (1, 'a', 10), (2, 'b', 20), (3, 'c', 30), (4, 'd', 40), (5, 'e', 50), (6, 'f', 60)"
    " as t(id, name, amount)"
)
STATE_B = (
    "select * from values (1, 'a', 11), (2, 'B', 20), (4, 'd', 40), (5, 'e', 50), (6, 'f', 60), (7, 'g', 70),"
    " (8, 'h', 80) as t(id, name, amount)"
)


SNAPSHOT_POINTS = (SNAPSHOT_ASIDE, SNAPSHOT_TO_BASE, OVERLAY_VIEW)


@dataclass
class SweepReport:
    scenario: str
    crash_points: int = 0
    runs: int = 0
    failed_runs: int = 0
    #: Crash points among the operations at the end of a run that release its lease (a fault
    #: there fails nothing).
    release_points: int = 0
    divergences: list[str] = field(default_factory=list)
    #: The operations of the fault-free run that replace the snapshot.
    snapshot_points: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (
            f"{self.scenario}: {self.crash_points} crash points, {self.runs} dbt runs "
            f"({self.failed_runs} failed at the fault), {len(self.divergences)} divergences"
        )


def _run(args, fail_at=None, log=None):
    """`dbt` in this process; failing at operation `fail_at` when given."""
    if fail_at is None:
        return run_dbt(list(args), expect_pass=None)
    with injected(FaultInjector(fail_at, log_path=log and str(log))):
        return run_dbt(list(args), expect_pass=None)


def _divergence(project, warehouse, landing_zone, table, expected_sql) -> str:
    """'' when the table folder replays to exactly the model output, else what differs."""
    folder = table_folder(landing_zone, project.test_schema, table)
    expected = model_output(warehouse, expected_sql.format(schema=project.test_schema))
    columns = list(expected[0]) if expected else []
    mirrored = normalized([{c: row.get(c) for c in columns} for row in replay(folder)])
    numbers = [int(p.name[:20]) for p in data_files(folder)]
    record = json.loads((folder / "_dbt_openmirror.json").read_text())
    staged = [p.name for p in (landing_zone / "_scratchPad" / "dbt-openmirror").iterdir() if p.name != "leases"]
    problems = [
        "mirror != model output" if mirrored != expected else "",
        f"numbers {numbers}" if numbers != list(range(1, len(numbers) + 1)) else "",
        "journal still pending" if "pending" in record else "",
        f"staged leftovers {staged}" if staged else "",
        "; ".join(findings_for(landing_zone, folder)),
    ]
    return "; ".join(p for p in problems if p)


@pytest.fixture
def every_point(request) -> bool:
    """Whether a sweep crashes every operation (--crash-points all) or a sample of them."""
    return request.config.getoption("--crash-points") == "all"


def crash_points(operations: int, every_point: bool) -> list[int]:
    """Every operation, or every third one plus the last two (the commit and lease release)."""
    if every_point:
        return list(range(1, operations + 1))
    return sorted(set(range(1, operations + 1, 3)) | {operations - 1, operations})


def sweep(
    project,
    warehouse,
    landing_zone,
    tmp_path,
    scenario,
    states,
    args,
    every_point,
    expected_sql="select * from {schema}.src",
) -> SweepReport:
    """Publish `states` in turn; for each, first crash at operation N (N = 1, 2, ...), then let
    the next run recover. One fault-free run first counts the operations of such a run. The
    model's complete output is `expected_sql`."""
    report = SweepReport(scenario)
    set_source(warehouse, project.test_schema, states[0])
    # A rebuild nobody asked for (sync_all_columns) is a warning: `warn` is a successful run too.
    assert _run([*args, "--full-refresh"] if "--full-refresh" not in args else args)[0].status in ("success", "warn")
    log = tmp_path / f"{scenario}.log"
    set_source(warehouse, project.test_schema, states[1])
    assert _run(args, fail_at=0, log=log)[0].status in ("success", "warn")
    lines = log.read_text().splitlines()
    operations = len(lines)
    assert operations >= 5, log.read_text()
    report.snapshot_points = [line for line in lines if any(name in line for name in SNAPSHOT_POINTS)]
    assert report.snapshot_points, "the snapshot's replacement is no crash point"
    # The lease's release ends the run; a fault there is logged, not raised.
    releasing = next(n for n, line in enumerate(reversed(lines)) if "/leases/" not in line)
    for point in crash_points(operations, every_point):
        report.release_points += point > operations - releasing
        set_source(warehouse, project.test_schema, states[(point + 1) % len(states)])
        crashed = _run(args, fail_at=point)
        recovered = _run(args)
        report.crash_points += 1
        report.runs += 2
        report.failed_runs += crashed[0].status == "error"
        # A recovery is a warning: the recovered run ends `warn`, or `success` when nothing was left.
        problem = "" if recovered[0].status in ("success", "warn") else f"recovery failed: {recovered[0].message}"
        problem += _divergence(project, warehouse, landing_zone, "customers", expected_sql)
        if problem:
            report.divergences.append(f"crash point {point}: {problem}")
    print(report.line())
    return report


class TestCrashPointSweep:
    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": MODEL}

    def test_multi_file_publish(self, project, warehouse, landing_zone, tmp_path, request, every_point):
        # The publish sequence's own sweep: every operation in the extended tier, a sample by default.
        every_point = every_point or request.config.getoption("--extended")
        report = sweep(
            project,
            warehouse,
            landing_zone,
            tmp_path,
            "multi-file publish",
            [STATE_A, STATE_B],
            ["run"],
            every_point,
        )
        assert report.divergences == [] and report.crash_points >= (8 if every_point else 4)
        # Every crash point fails its run, but those in the final lease release.
        assert report.failed_runs == report.crash_points - report.release_points

    @pytest.mark.extended
    def test_rebuild(self, project, warehouse, landing_zone, tmp_path, every_point):
        report = sweep(
            project,
            warehouse,
            landing_zone,
            tmp_path,
            "rebuild",
            [STATE_A, STATE_B],
            ["run", "--full-refresh"],
            every_point,
        )
        assert report.divergences == [] and report.crash_points >= 4

    @pytest.mark.extended
    def test_schema_change_rebuild(self, project, warehouse, landing_zone, tmp_path, every_point):
        # amount flips between int and string: each run rebuilds under sync_all_columns.
        as_text = STATE_B.replace("select *", "select id, name, cast(amount as string) as amount")
        report = sweep(
            project,
            warehouse,
            landing_zone,
            tmp_path,
            "type change (sync_all_columns)",
            [STATE_A, as_text],
            ["run", "--vars", "{on_change: sync_all_columns}"],
            every_point,
        )
        assert report.divergences == [] and report.crash_points >= 4

    @pytest.mark.extended
    def test_added_and_removed_columns(self, project, warehouse, landing_zone, tmp_path, every_point):
        # Each state drops the column the one before added and adds another one.
        states = [STATE_A.replace("select *", f"select *, id * {n} as extra_{n}") for n in range(1, 4)]
        report = sweep(
            project, warehouse, landing_zone, tmp_path, "added and removed columns", states, ["run"], every_point
        )
        assert report.divergences == [] and report.crash_points >= 4


INCREMENTAL_MODEL = """
{{ config(materialized='open_mirror', unique_key='id', max_rows_per_file=2, delete_flag='deleted') }}
select * from {{ target.schema }}.src
{% if is_incremental() %} where updated_at >= (select max(updated_at) from {{ this }}) {% endif %}
"""
# Every id is in both states (some flagged deleted), all with one updated_at: each run selects
# every row as a candidate, and the changes between them are updates, flagged deletes and
# re-inserts of flagged rows.
FLAGGED_A = (
    "select id, name, amount, 1 as updated_at, cast(deleted as boolean) as deleted from values"
    " (1, 'a', 10, false), (2, 'b', 20, false), (3, 'c', 30, false), (4, 'd', 40, true), (5, 'e', 50, false),"
    " (6, 'f', 60, true) as t(id, name, amount, deleted)"
)
FLAGGED_B = (
    "select id, name, amount, 1 as updated_at, cast(deleted as boolean) as deleted from values"
    " (1, 'a', 11, false), (2, 'B', 20, false), (3, 'c', 30, true), (4, 'd', 40, false), (5, 'e', 50, false),"
    " (6, 'f', 60, false) as t(id, name, amount, deleted)"
)


@pytest.mark.extended
class TestCrashPointSweepOfCandidateRuns:
    """An incremental model (is_incremental() true, candidates merged into the snapshot, flagged
    rows published as deletes) crashed at each operation: the next run recovers exactly once."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": INCREMENTAL_MODEL}

    def test_candidate_runs(self, project, warehouse, landing_zone, tmp_path, every_point):
        report = sweep(
            project,
            warehouse,
            landing_zone,
            tmp_path,
            "candidate runs with a delete flag",
            [FLAGGED_A, FLAGGED_B],
            ["run"],
            every_point,
            expected_sql="select id, name, amount, updated_at from {schema}.src where not deleted",
        )
        assert report.divergences == [] and report.crash_points >= 4
        # The candidate runs overlay the snapshot: the snapshot table becomes the base of a view.
        points = " ".join(report.snapshot_points)
        assert SNAPSHOT_TO_BASE in points and OVERLAY_VIEW in points, report.snapshot_points


@pytest.mark.extended
class TestCrashPointSweepOnOneLake(OnOneLake):
    """The same sweep with the landing zone on OneLake (the DFS stand-in): uploads of staged
    files, raw renames and journal writes are crash points too."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": MODEL}

    def test_multi_file_publish(self, project, warehouse, onelake, tmp_path, every_point):
        report = sweep(
            project,
            warehouse,
            onelake_landing_zone_on_disk(onelake),
            tmp_path,
            "multi-file publish on OneLake",
            [STATE_A, STATE_B],
            ["run"],
            every_point,
        )
        assert report.divergences == [] and report.crash_points >= 4

"""A run crashed inside one of Spark's statements that change a table's folder (a create, a
rename or a drop of a managed table, tests/support/halfway_statements.py): the next `dbt run`
puts the folders back in step with the catalog and recovers. Each statement of a run is cut off
in turn; after every recovery the landing zone replays to the model's complete output,
`{{ this }}` holds it, and every folder of the schema belongs to a table."""

from functools import partial

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture
from pyspark.sql import SparkSession

from tests.functional.test_crash_recovery import (
    FLAGGED_A,
    FLAGGED_B,
    INCREMENTAL_MODEL,
    MODEL,
    STATE_A,
    STATE_B,
    _divergence,
    _run,
)
from tests.functional.test_publish_modes import HOOK
from tests.support.halfway_statements import cut_off_at, stray_folders
from tests.support.mirror import model_output, normalized, set_source, tree_digest


def _first_of_its_kind(statements: list[str], point: int) -> bool:
    kind = statements[point - 1].split(" ", 1)[0]
    return not any(s.startswith(f"{kind} ") for s in statements[: point - 1])


def published_then_cut(warehouse, schema: str, states, args, cut_at: int, seen: list[str]) -> str:
    """`states[0]` published in full, the states between with `args`, then the run publishing the
    last state with its `cut_at`-th statement cut off (0: none; `seen` gets them): its status."""
    set_source(warehouse, schema, states[0])
    assert _run(["run", "--full-refresh"])[0].status in ("success", "warn")
    for state in states[1:-1]:
        set_source(warehouse, schema, state)
        assert _run(args)[0].status in ("success", "warn")
    set_source(warehouse, schema, states[-1])
    with cut_off_at(cut_at, seen):
        results = _run(args)
    # Cut off in the on-run-end hook: the hook fails, with what failed.
    hook_failed = any(r.node.resource_type == "operation" and r.status == "error" for r in results)
    return "error" if hook_failed else results[0].status


def sweep(
    project, warehouse, landing_zone, states, args, expected_sql, every_point=True, recovery=None
) -> tuple[list[str], list[str]]:
    """`published_then_cut` at the N-th statement (N = 1, 2, ...), then the next runs (with the
    arguments of `recovery`, by default one run with `args`) recover. A run that cuts off nothing
    counts the statements first; without `every_point`, only the renames and the first create and
    drop are cut off. The statements counted, and what was wrong after each recovery."""
    schema = project.test_schema
    spark = SparkSession.builder.getOrCreate()
    published_then_cut_at = partial(published_then_cut, warehouse, schema, states, args)

    counted: list[str] = []
    assert published_then_cut_at(0, counted) in ("success", "warn")
    problems = []
    for point, statement in enumerate(counted, start=1):
        if not (every_point or statement.startswith("rename ") or _first_of_its_kind(counted, point)):
            continue
        seen: list[str] = []
        crashed = published_then_cut_at(point, seen)
        problem = "" if crashed == "error" and seen == counted[:point] else f"cut off {seen}; "
        said = ""
        for run_args in recovery or [args]:
            recovered, output = run_dbt_and_capture(list(run_args), expect_pass=None)
            said += output
            if recovered[0].status not in ("success", "warn"):
                problem += f"recovery {run_args} failed: {recovered[0].message}; "
        if REPAIRED[statement.split(" ", 1)[0]] not in said:
            problem += "the repair did not say what it did; "
        problem += _divergence(project, warehouse, landing_zone, "customers", expected_sql)
        expected = normalized(model_output(warehouse, expected_sql.format(schema=schema)))
        if normalized(model_output(warehouse, f"select * from {schema}.customers")) != expected:
            problem += "; {{ this }} != model output"
        stray = stray_folders(spark, schema)
        if stray:
            problem += f"; stray folders {stray}"
        if problem:
            problems.append(f"{statement}: {problem}")
    return counted, problems


def renamed(statements: list[str], to: str) -> bool:
    return any(s.startswith("rename ") and s.endswith(f".customers{to}") for s in statements)


#: What the recovery says it did after each kind of statement cut off halfway.
REPAIRED = {"create": "which no table uses", "drop": "which no table uses", "rename": "they are back in its folder"}
CANDIDATES = "select id, name, amount, updated_at from {schema}.src where not deleted"
HELD_MODEL = MODEL.replace("max_rows_per_file=2,", "max_rows_per_file=2, publish='after_tests',")


class TestCandidateRunsCutOffHalfway:
    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": INCREMENTAL_MODEL}

    def test_the_first_candidate_run(self, project, warehouse, landing_zone, request):
        # Every statement in the extended tier, each kind by default.
        every_point = request.config.getoption("--extended")
        states = [FLAGGED_A, FLAGGED_B]
        cut, problems = sweep(project, warehouse, landing_zone, states, ["run"], CANDIDATES, every_point)
        assert problems == []
        # The snapshot table renamed to the base of an overlaid snapshot; work tables created and dropped.
        assert renamed(cut, "__om_base") and sum(c.startswith("create") for c in cut) >= 2, cut

    def test_a_dry_run_refuses_a_snapshot_a_cut_off_rename_left_empty(self, project, warehouse, landing_zone):
        dry = ["run", "--vars", "{openmirror_dry_run: true}"]
        states = [FLAGGED_A, FLAGGED_B]
        published_then_cut_at = partial(published_then_cut, warehouse, project.test_schema, states, ["run"])
        counted: list[str] = []
        published_then_cut_at(0, counted)
        published_then_cut_at(next(n for n, c in enumerate(counted, 1) if renamed([c], "__om_base")), [])
        before = tree_digest(landing_zone)
        [refused] = run_dbt(dry, expect_pass=False)
        assert "Model 'customers': table customers has no folder and reads as empty: a run stopped" in refused.message
        assert tree_digest(landing_zone) == before
        assert _run(["run"])[0].status in ("success", "warn") and _run(dry)[0].status in ("success", "warn")
        assert _divergence(project, warehouse, landing_zone, "customers", CANDIDATES) == ""

    @pytest.mark.extended
    def test_a_candidate_run_on_an_overlaid_snapshot(self, project, warehouse, landing_zone):
        states = [FLAGGED_A, FLAGGED_B, FLAGGED_A]
        cut, problems = sweep(project, warehouse, landing_zone, states, ["run"], CANDIDATES)
        assert problems == [] and any(c.startswith("drop ") and "__om_overlay_" in c for c in cut), cut


@pytest.mark.extended
class TestFullDiffRunsCutOffHalfway:
    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": MODEL}

    def test_a_full_diff_run(self, project, warehouse, landing_zone):
        expected = "select * from {schema}.src"
        cut, problems = sweep(project, warehouse, landing_zone, [STATE_A, STATE_B], ["run"], expected)
        assert problems == []
        # The snapshot renamed aside, the new output and its key hashes renamed into place.
        assert renamed(cut, "__dbt_backup") and renamed(cut, "__om_hashes"), cut

    def test_a_dry_run(self, project, warehouse, landing_zone):
        dry = ["run", "--vars", "{openmirror_dry_run: true}"]
        expected = "select * from {schema}.src"
        # A dry run repairs what a dry run left, then a run publishes.
        cut, problems = sweep(
            project, warehouse, landing_zone, [STATE_A, STATE_B], dry, expected, recovery=[dry, ["run"]]
        )
        assert problems == [] and cut and all("__om_check_" in c for c in cut), cut

    def test_an_empty_run(self, project, warehouse, landing_zone):
        empty = ["run", "--empty"]
        expected = "select * from {schema}.src"
        cut, problems = sweep(
            project, warehouse, landing_zone, [STATE_A, STATE_B], empty, expected, recovery=[empty, ["run"]]
        )
        assert problems == [] and cut and all("__om_check_" in c for c in cut), cut


@pytest.mark.extended
class TestHeldChangesCutOffHalfway:
    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": HELD_MODEL}

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return HOOK

    def test_a_change_held_for_its_tests(self, project, warehouse, landing_zone):
        expected = "select * from {schema}.src"
        cut, problems = sweep(project, warehouse, landing_zone, [STATE_A, STATE_B], ["run"], expected)
        assert problems == []
        # The published snapshot and its key hashes kept aside while the tests run.
        assert renamed(cut, "__om_audit_base") and renamed(cut, "__om_audit_base_hashes"), cut


AMOUNT_NOT_NULL = """
version: 2
models:
  - name: customers
    columns:
      - name: amount
        data_tests: [not_null]
"""


@pytest.mark.extended
class TestDiscardedChangesCutOffHalfway:
    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": HELD_MODEL, "schema.yml": AMOUNT_NOT_NULL}

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return HOOK

    def test_a_discard_cut_off_while_the_snapshot_goes_back(self, project, warehouse, landing_zone):
        """A change whose test failed is discarded at the invocation's end: `{{ this }}` (the
        held output) is dropped and the published snapshot renamed back. Cut off at either of
        them, the next build puts the snapshot back and publishes the fix as a change, without
        rebuilding the mirrored table."""
        schema = project.test_schema
        failing = STATE_B.replace("(7, 'g', 70)", "(7, 'g', null)")

        def discard_cut_off_at(point: int, seen: list[str]) -> None:
            set_source(warehouse, schema, STATE_A)
            run_dbt(["build", "--full-refresh"])
            set_source(warehouse, schema, failing)
            with cut_off_at(point, seen):
                run_dbt(["build"], expect_pass=False)

        counted: list[str] = []
        discard_cut_off_at(0, counted)
        this = f"{schema}.customers"
        points = [
            counted.index(f"drop {this}", counted.index(f"rename {this}__om_audit_base to {this}") - 1) + 1,
            counted.index(f"rename {this}__om_audit_base to {this}") + 1,
        ]
        for point in points:
            seen: list[str] = []
            discard_cut_off_at(point, seen)
            assert seen == counted[:point]
            set_source(warehouse, schema, STATE_B)
            results, said = run_dbt_and_capture(["build"])
            [model] = [r for r in results if r.node.name == "customers"]
            assert model.adapter_response["mode"] == "held: incremental", (seen[-1], model.adapter_response)
            assert "back in place" in said, seen[-1]
            assert _divergence(project, warehouse, landing_zone, "customers", "select * from {schema}.src") == ""
            expected = normalized(model_output(warehouse, f"select * from {schema}.src"))
            assert normalized(model_output(warehouse, f"select * from {this}")) == expected

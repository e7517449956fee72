"""Overlaid snapshots (planning/overlay.py): which overlay table a run writes, and when a
candidate run overlays its snapshot rather than merging into a complete table."""

import pytest

from dbt.adapters.openmirror.planning.overlay import (
    MIN_OVERLAY_ROWS,
    OverlayFacts,
    base_run_id,
    free_slot,
    overlay_limit,
    overlay_refusal,
)
from dbt.adapters.openmirror.planning.run_plan import (
    INCREMENTAL,
    REBUILD,
    Destination,
    RunPlan,
    SnapshotRecord,
    snapshot_properties,
    snapshot_record,
)
from dbt.adapters.openmirror.planning.schema_plan import ColumnSpec, SchemaPlan

PLAIN = SnapshotRecord("s.schema/t", 3, "run-3")
OVERLAID = SnapshotRecord("s.schema/t", 4, "run-4", base_run_id="run-3", overlay="a")
COLUMNS = [ColumnSpec("id", "int"), ColumnSpec("name", "string")]
WIDE = [ColumnSpec(f"c_{n:03d}_{'x' * 24}", "int") for n in range(1000)]


def test_a_run_writes_the_overlay_the_view_does_not_read():
    assert free_slot(None) == "a"
    assert free_slot(PLAIN) == "a"
    assert free_slot(OVERLAID) == "b"
    assert free_slot(SnapshotRecord("f", 5, "run-5", base_run_id="run-3", overlay="b")) == "a"


def test_the_base_is_the_plain_snapshot_or_the_one_the_overlay_names():
    assert base_run_id(PLAIN) == "run-3"
    assert base_run_id(OVERLAID) == "run-3"


def test_the_overlay_is_recorded_on_the_snapshot():
    properties = snapshot_properties(
        Destination("m", "lz", "s.schema/t", "a.m"), 4, "run-4", ["id"], base_run_id="run-3", overlay="a"
    )
    record = snapshot_record(properties)
    assert record is not None and (record.base_run_id, record.overlay) == ("run-3", "a")
    plain = snapshot_record(snapshot_properties(Destination("m", "lz", "s.schema/t", "a.m"), 3, "run-3", ["id"]))
    assert plain is not None and (plain.base_run_id, plain.overlay) == (None, None)


def test_the_limit_is_a_share_of_the_base_but_never_below_the_floor():
    assert overlay_limit(10) == MIN_OVERLAY_ROWS
    assert overlay_limit(100_000_000) == 5_000_000


def facts(**changes):
    values = dict(
        plan=RunPlan(INCREMENTAL, "", SchemaPlan(COLUMNS), ["id"]),
        hashes_usable=True,
        base_rows=10_000_000,
        overlay_rows=100_000,
        candidate_rows=100_000,
    )
    values.update(changes)
    return OverlayFacts(**values)


@pytest.mark.parametrize(
    "changes, refused",
    [
        ({}, None),
        ({"plan": RunPlan(REBUILD, "the table folder was missing", SchemaPlan(COLUMNS), ["id"])}, "full load"),
        ({"plan": RunPlan(INCREMENTAL, "", SchemaPlan(COLUMNS, added=[ColumnSpec("x", "int")]), ["id"])}, "added"),
        ({"plan": RunPlan(INCREMENTAL, "", SchemaPlan(COLUMNS, ignored=[ColumnSpec("x", "int")]), ["id"])}, None),
        # Dropped before (NULL in every row since): overlays carry it as NULL. The run that drops
        # it merges, as its key hashes no longer cover this run's columns.
        ({"plan": RunPlan(INCREMENTAL, "", SchemaPlan(COLUMNS, kept=[ColumnSpec("x", "int")]), ["id"])}, None),
        # Respelled in case only: the same column to Spark, published under the mirror's spelling.
        ({"plan": RunPlan(INCREMENTAL, "", SchemaPlan(COLUMNS, respelled=[("Name", "name")]), ["id"])}, None),
        ({"hashes_usable": False}, "key hashes"),
        ({"overlay_rows": 450_000}, "more than 500000"),
        ({"overlay_rows": 300_000}, None),
        # A view naming 1,000 columns of 30 characters is more than the embedded metastore keeps,
        # and so is one of 420 with a key of eight of them, which the view names four times more.
        ({"plan": RunPlan(INCREMENTAL, "", SchemaPlan(WIDE[:420]), [c.name for c in WIDE[:8]])}, "more than a"),
        ({"plan": RunPlan(INCREMENTAL, "", SchemaPlan(WIDE), ["c_000"])}, "more than a metastore may keep"),
        ({"plan": RunPlan(INCREMENTAL, "", SchemaPlan(WIDE[:300]), ["c_000"])}, None),
    ],
)
def test_when_a_candidate_run_overlays(changes, refused):
    reason = overlay_refusal(facts(**changes))
    if refused is None:
        assert reason is None
    else:
        assert reason is not None and refused in reason

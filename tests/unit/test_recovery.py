"""Recovery decisions for a publish an interrupted run journaled but did not commit."""

from dbt.adapters.openmirror.publishing.publisher import PendingPublish
from dbt.adapters.openmirror.publishing.recovery import ABANDON, DISCARD, ROLL_FORWARD, decide

STAGED = "_scratchPad/dbt-openmirror/run-2"
PENDING = PendingPublish(
    run_id="run-2",
    model="m",
    table_folder="s.schema/t",
    key_columns=["id"],
    base_sequence_number=4,
    rebuild=False,
    staged_folder=STAGED,
    files=[
        (f"{STAGED}/part-0.parquet", "00000000000000000005.parquet"),
        (f"{STAGED}/part-1.parquet", "00000000000000000006.parquet"),
    ],
    rows=10,
)
FIVE, SIX = "00000000000000000005.parquet", "00000000000000000006.parquet"
BOTH_STAGED = {"part-0.parquet", "part-1.parquet"}


def test_output_table_still_there_rolls_forward_and_promotes():
    recovery = decide(PENDING, {FIVE}, {"part-1.parquet"}, "run-1", "run-2")
    assert (recovery.action, recovery.promote) == (ROLL_FORWARD, True)
    assert "run run-2" in recovery.message and "published 1 of 2 files" in recovery.message


def test_snapshot_already_replaced_only_finishes():
    recovery = decide(PENDING, {FIVE, SIX}, set(), "run-2", None)
    assert (recovery.action, recovery.promote) == (ROLL_FORWARD, False)


def test_nothing_renamed_is_rolled_forward_when_possible_else_discarded():
    assert decide(PENDING, set(), BOTH_STAGED, "run-1", "run-2").action == ROLL_FORWARD
    recovery = decide(PENDING, set(), BOTH_STAGED, "run-1", None)
    assert recovery.action == DISCARD and "before publishing any file" in recovery.message


def test_published_files_without_their_output_are_abandoned():
    recovery = decide(PENDING, {FIVE}, {"part-1.parquet"}, "run-1", "run-9")
    assert recovery.action == ABANDON and "its output table" in recovery.message


def test_lost_staged_files_are_abandoned_even_with_the_output():
    recovery = decide(PENDING, {FIVE}, set(), "run-1", "run-2")
    assert recovery.action == ABANDON and SIX in recovery.message


def test_files_the_service_moved_count_as_published():
    # published_names includes _ProcessedFiles/ entries: nothing is renamed twice.
    recovery = decide(PENDING, {FIVE, SIX}, set(), "run-1", "run-2")
    assert (recovery.action, recovery.promote) == (ROLL_FORWARD, True)

"""The publish sequence, one for the plugin and for `dbt-openmirror publish`.

A run's publish is journaled (`begin`), its staged files are renamed into place (`complete`), its
output becomes the snapshot where there is one (the plugin's `{{ this }}`; package mode's output
is the manifest row, already durable), and the journal is committed (`commit`). A run without
changes goes through the same steps: the journal then names that run, so the next run's snapshot
and the folder agree on who published last.

Recovery is the same sequence resumed: a publish an interrupted run journaled is finished or
forgotten (recovery.py decides), from what the caller knows of that run's output.
"""

from collections.abc import Callable
from dataclasses import dataclass

from dbt.adapters.openmirror.publishing.lease import Fence
from dbt.adapters.openmirror.publishing.publisher import PendingPublish, PublishedFiles, Publisher
from dbt.adapters.openmirror.publishing.recovery import ROLL_FORWARD, Recovery, decide


def _nothing() -> None:
    return None


@dataclass(frozen=True)
class CrashedRunOutput:
    """Where the output of the run that journaled a publish is, as the caller knows it: the run
    id recorded on the snapshot and on the output table built beside it (None where missing or
    recording none). Package mode's output is its manifest row: the snapshot holds the run when
    the manifest still stages it."""

    snapshot_run_id: str | None
    new_output_run_id: str | None = None


class PublishSequence:
    """begin -> renames -> snapshot -> commit under one writer's lease."""

    def __init__(self, publisher: Publisher, fence: Fence) -> None:
        self.publisher = publisher
        self.fence = fence

    def publish(
        self,
        pending: PendingPublish,
        rebuild_wait_seconds: float,
        make_snapshot: Callable[[], None] = _nothing,
        if_refused: Callable[[], None] = _nothing,
    ) -> PublishedFiles:
        """Publish `pending`. `if_refused` runs when the publish cannot be journaled (nothing was
        published: the caller's staged files go, unless they are durable); after the journal
        entry a failure leaves everything for recovery. `make_snapshot` runs after the renames,
        just before the commit (after the last lease check: Spark's renames are unconditional)."""
        try:
            self.fence.check()
            self.publisher.begin(pending, self.fence, rebuild_wait_seconds)
        except Exception:
            if_refused()
            raise
        self.publisher.complete(pending, self.fence)
        self.fence.check()
        make_snapshot()
        self.publisher.commit(pending, self.fence)
        return PublishedFiles(pending.names, pending.rows, pending.last_sequence_number)

    def recover(
        self,
        table_folder: str,
        crashed_output: Callable[[PendingPublish], CrashedRunOutput],
        report: Callable[[Recovery], None],
        promote: Callable[[], None] = _nothing,
    ) -> Recovery | None:
        """Finish or forget the publish journaled in `table_folder`, if any. `crashed_output` is
        asked only when there is one; `report` hears the decision before it is carried out;
        `promote` makes the crashed run's new output the snapshot (when recovery says so)."""
        pending = self.publisher.table_state(table_folder).pending
        if pending is None:
            return None
        output = crashed_output(pending)
        recovery = decide(
            pending,
            self.publisher.published_names(table_folder),
            set(self.publisher.storage.list_names(pending.staged_folder)),
            output.snapshot_run_id,
            output.new_output_run_id,
        )
        report(recovery)
        if recovery.action == ROLL_FORWARD:
            self.publisher.complete(pending, self.fence)
            if recovery.promote:
                self.fence.check()
                promote()
            self.publisher.commit(pending, self.fence)
        else:
            self.publisher.abandon(pending, self.fence)
        return recovery

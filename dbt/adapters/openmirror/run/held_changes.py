"""Write-audit-publish in the plugin: changes held for their models' tests (publish='after_tests').

A held change's output is `{{ this }}` for the tests while the published snapshot and its key
hashes wait beside it; its staged files and its lease stay until the invocation's end, where the
on-run-end hook publishes each change whose tests passed (run/audit.py) and discards the others.
"""

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dbt.adapters.openmirror.planning.run_plan import SNAPSHOT_HELD, SnapshotRecord
from dbt.adapters.openmirror.publishing.lease import Heartbeat, Lease
from dbt.adapters.openmirror.publishing.publisher import PendingPublish, PublishedFiles
from dbt.adapters.openmirror.rules.landing_zone import scratch_path
from dbt.adapters.openmirror.run.audit import verdict
from dbt.adapters.openmirror.run.config import MirrorConfig
from dbt.adapters.openmirror.run.context import RunContext
from dbt.adapters.openmirror.run.overlay import drop_stale_layers
from dbt.adapters.openmirror.run.relations import RunRelations
from dbt.adapters.openmirror.run.statements import recorded_snapshot


@dataclass
class HeldChange:
    """A staged change waiting for its model's tests, with the lease that keeps other runs off
    its table until it is published or discarded."""

    model_id: str
    mirror: MirrorConfig
    pending: PendingPublish
    target: Any
    lease: Lease
    heartbeat: Heartbeat


@dataclass(frozen=True)
class FinishedAudits:
    """What the on-run-end hook did: a line per held change, and the messages of those that
    failed."""

    lines: list[str]
    failures: list[str]


class HeldChanges:
    """The changes held in one invocation, published or discarded at its end."""

    def __init__(self, context: RunContext) -> None:
        self.context = context
        self._held: list[HeldChange] = []
        self._lock = threading.Lock()

    def hold(self, change: HeldChange, new_output: Any, new_hashes: Any, changes: Any) -> PublishedFiles:
        """The output and its key hashes become `{{ this }}` and its hashes; what they replace
        waits beside them."""
        catalog, kept_aside = self.context.catalog, RunRelations.of(change.target, publishes=True).kept_aside()
        catalog.refresh([relation for pair in kept_aside for relation in pair])
        for (kept, aside), fresh in zip(kept_aside, (new_output, new_hashes), strict=True):
            catalog.drop(aside)
            existing = catalog.find(kept)
            if existing is not None:
                catalog.rename(existing, aside)
            catalog.rename(fresh, kept)
        catalog.drop(changes)
        with self._lock:
            self._held.append(change)
        pending = change.pending
        return PublishedFiles(pending.names, pending.rows, pending.last_sequence_number)

    def finish(self, results: Sequence[Any], graph: Mapping[str, Any]) -> FinishedAudits:
        """At the invocation's end: publish each held change whose tests passed, discard the
        others (their snapshot goes back). One table's failure does not stop the others."""
        lines: list[str] = []
        failures: list[str] = []
        with self._lock:
            held, self._held = self._held, []
        for change in held:
            decided = verdict(change.model_id, graph.get("nodes", {}), results)
            where = f"{change.mirror.table_folder} ({len(change.pending.files)} files, run {change.pending.run_id})"
            try:
                if decided.publish:
                    self._publish(change)
                    lines.append(f"Model '{change.mirror.model}': published {where}: {decided.reason}")
                else:
                    self._discard(change)
                    lines.append(f"Model '{change.mirror.model}': not published, {where} discarded: {decided.reason}")
                    self.context.warn(lines[-1])
            except Exception as exc:
                failures.append(f"Model '{change.mirror.model}': {where}: {getattr(exc, 'msg', exc)}")
                self.context.error(failures[-1])
            finally:
                change.heartbeat.stop()
                try:
                    self.context.leases.release(change.lease)
                except Exception as exc:  # it expires on its own
                    self.context.warning(f"could not release the lease on {change.lease.table_folder}: {exc}")
        return FinishedAudits(lines, failures)

    def _publish(self, change: HeldChange) -> None:
        """The publish sequence with `{{ this }}` already the output: a failure before the
        journal entry discards the change; after it, recovery finishes the publish."""
        self.context.publish(
            change.pending,
            change.lease,
            change.mirror.model,
            self.context.warn,
            rebuild_wait_seconds=change.mirror.rebuild_wait_seconds,
            if_refused=lambda: self._discard(change),
        )
        self.release_audit_base(change.target)
        drop_stale_layers(self.context.catalog, RunRelations.of(change.target, publishes=True))

    def _discard(self, change: HeldChange) -> None:
        self.context.publisher.discard(change.pending.staged_folder)
        self.restore_audit_base(change.target)

    def settle(self, mirror: MirrorConfig, target: Any, held: SnapshotRecord | None, warn: Any) -> bool:
        """A change held for its tests whose invocation stopped before its end (`held`, the
        record of `{{ this }}`, says so): done if the journal names it (its publish went through),
        discarded otherwise, with the snapshot it was diffed against back in place. Whether
        `{{ this }}` changed."""
        if held is None:
            return self._put_back_stranded_snapshot(mirror, target, warn)
        if not held.held:
            return False
        record = self.context.publisher.read_record(mirror.table_folder)
        if record is not None and record.run_id == held.run_id:
            self.release_audit_base(target)
            return True
        warn(
            f"Model '{mirror.model}': run {held.run_id} held a change to {mirror.table_folder} for its "
            "tests and stopped before the end of its invocation; the change was not published and "
            "is discarded, and the snapshot is back where it was"
        )
        self.restore_audit_base(target)
        if held.run_id is not None:
            self.context.publisher.discard(scratch_path(held.run_id))
        return True

    def _put_back_stranded_snapshot(self, mirror: MirrorConfig, target: Any, warn: Any) -> bool:
        """Holding a change and discarding one each move `{{ this }}` in two steps (renamed aside
        then replaced; dropped then renamed back): a process stopped in between leaves no
        `{{ this }}` and the published snapshot aside. It goes back when the journal says it is
        what was published last; the run would otherwise take itself for a first run and rebuild
        the mirrored table."""
        catalog = self.context.catalog
        if catalog.find(target) is not None:
            return False
        aside = RunRelations.of(target, publishes=True).audit_base
        kept = recorded_snapshot(self.context.statements, catalog.find(aside))
        record = self.context.publisher.read_record(mirror.table_folder)
        if kept is None or record is None or kept.run_id != record.run_id:
            return False
        warn(
            f"Model '{mirror.model}': {target} was missing and {aside} holds the snapshot published by "
            f"run {kept.run_id}, where a run stopped while it moved the snapshot for a held change; "
            "it is back in place"
        )
        self.restore_audit_base(target)
        return True

    def restore_audit_base(self, target: Any) -> None:
        """The snapshot and key hashes a held change was diffed against go back in place (on a
        first publish there were none: the table goes, and the next run is a first publish again)."""
        catalog = self.context.catalog
        for kept, aside in RunRelations.of(target, publishes=True).kept_aside():
            catalog.refresh([kept, aside])
            catalog.drop(kept)
            existing = catalog.find(aside)
            if existing is not None:
                catalog.rename(existing, kept)

    def release_audit_base(self, target: Any) -> None:
        """The held change is published: `{{ this }}` is an ordinary snapshot, the old one goes."""
        self.context.statements.execute("openmirror_unset_properties_sql", relation=str(target), keys=[SNAPSHOT_HELD])
        for _, aside in RunRelations.of(target, publishes=True).kept_aside():
            self.context.catalog.drop(aside)

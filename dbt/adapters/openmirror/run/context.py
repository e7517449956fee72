"""What every model run of one invocation shares: the landing zone and its publisher and leases,
the seam to Spark, and how the invocation stages, warns and stops."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dbt.adapters.openmirror.package.publish import supersede_staged_runs
from dbt.adapters.openmirror.publishing.lease import Lease, LeaseManager
from dbt.adapters.openmirror.publishing.publisher import PendingPublish, PublishedFiles, Publisher
from dbt.adapters.openmirror.publishing.sequence import PublishSequence
from dbt.adapters.openmirror.run.statements import Catalog, Statements
from dbt.adapters.openmirror.spark.model_inputs import ModelInputs
from dbt.adapters.openmirror.spark.table_folders import TableFolders
from dbt.adapters.openmirror.storage.base import LandingZoneStorage


@dataclass(frozen=True)
class RunContext:
    storage: LandingZoneStorage
    publisher: Publisher
    leases: LeaseManager
    statements: Statements
    catalog: Catalog
    #: The profile's landing_zone, as the snapshot records it.
    landing_zone: str
    #: direct or upload (publishing/staging.py), decided once per invocation.
    staging_mode: Callable[[], str]
    #: What a model's compiled SQL reads, with what else decides its output (spark/model_inputs.py).
    model_inputs: Callable[[str, Sequence[str]], ModelInputs]
    #: The warehouse folders of tables, where dbt's process reaches them (spark/table_folders.py).
    table_folders: Callable[[], TableFolders | None]
    #: dbt was cancelled (Ctrl-C) while a model ran.
    interrupted: Callable[[], bool]
    #: Log a warning about the running model (an error under --warn-error).
    warn: Callable[[str], None]
    info: Callable[[str], None]
    debug: Callable[[str], None]
    warning: Callable[[str], None]
    error: Callable[[str], None]

    def publish(
        self,
        pending: PendingPublish,
        lease: Lease,
        model: str,
        warn: Callable[[str], None],
        rebuild_wait_seconds: float,
        make_snapshot: Callable[[], None] = lambda: None,
        if_refused: Callable[[], None] = lambda: None,
    ) -> PublishedFiles:
        """A plugin run's publish: the publish sequence under `lease`. The folder then holds the
        model's output as it is now, so the runs package mode staged for it and nobody published
        are moot (package.publish.supersede_staged_runs)."""
        sequence = PublishSequence(self.publisher, self.leases.fence(lease))
        published = sequence.publish(pending, rebuild_wait_seconds, make_snapshot, if_refused)
        superseded = supersede_staged_runs(self.storage, pending.table_folder, pending.run_id)
        if superseded is not None:
            warn(f"Model '{model}': {superseded}")
        return published

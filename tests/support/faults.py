"""Fail the N-th operation that changes the landing zone, to walk every crash point.

The injector counts the changing operations of one dbt invocation or one `dbt-openmirror`
command (1-based) and fails the N-th: in mode `raise` it raises `InjectedFault` and every later
operation of the process fails too, as after a crash; in mode `kill` the process kills itself
with SIGKILL; in mode `stop` it stops itself with SIGSTOP (a stalled writer: all its threads,
heartbeat included) and, once continued (SIGCONT), does the operation and goes on. With a log
file every changing operation is appended to it as it starts (also with N = 0, which fails
nothing), so a test knows how many crash points a run has. Reads are not counted: failing one
changes nothing in the landing zone.

It reaches the product through three seams: `storage.open_landing_zone`, where the adapter and
the CLI open the landing zone (the storage gets wrapped); the adapter's `rename_relation`, where
the old snapshot is renamed aside before the new output takes its name (a crash point between
Spark's two renames) or to an overlaid snapshot's base; and the statement that replaces an
overlaid snapshot's view. `injected` installs both in this process; tests/support/faulty.py
does it for a `dbt` or `dbt-openmirror` process.
"""

import os
import signal
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import BinaryIO
from unittest import mock

from dbt.adapters.openmirror import storage as landing_zone_storage
from dbt.adapters.openmirror.storage.base import LandingZoneStorage, StoredFile, Versioned

MODES = ("raise", "kill", "stop")
#: dbt's `make_backup_relation` names the relation a snapshot is renamed to while it is replaced.
BACKUP_SUFFIX = "__dbt_backup"
#: The log's name for that crash point.
SNAPSHOT_ASIDE = "rename snapshot aside"
#: A candidate run that overlays its snapshot renames a snapshot table to its base, then replaces
#: `{{ this }}` by the view of base and overlay (planning/overlay.py): crash points too.
BASE_SUFFIX = "__om_base"
SNAPSHOT_TO_BASE = "rename snapshot to base"
OVERLAY_VIEW_MACRO = "openmirror_overlay_view_sql"
OVERLAY_VIEW = "replace the snapshot's view"


class InjectedFault(RuntimeError):
    """Raised in place of a landing-zone operation by the fault injector."""


class FaultInjector:
    def __init__(self, fail_at: int, mode: str = "raise", log_path: str | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"the fault mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.fail_at = fail_at
        self.mode = mode
        self.log_path = log_path
        self.count = 0
        self.crashed = False

    def checkpoint(self, operation: str) -> None:
        """Called before each changing operation; fails it when its turn has come."""
        if self.crashed:
            raise InjectedFault(f"after the injected fault: {operation}")
        self.count += 1
        if self.log_path:
            with open(self.log_path, "a", encoding="utf-8") as log:
                log.write(f"{self.count}\t{operation}\n")
        if self.count == self.fail_at:
            if self.mode == "stop":
                os.kill(os.getpid(), signal.SIGSTOP)
                return
            if self.mode == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            self.crashed = True
            raise InjectedFault(f"injected fault at operation {self.count}: {operation}")


class FaultInjectingStorage(LandingZoneStorage):
    """Passes every call to `inner`, after the injector's checkpoint for changing ones."""

    def __init__(self, inner: LandingZoneStorage, injector: FaultInjector) -> None:
        self.inner = inner
        self.injector = injector
        self.location = inner.location
        self.shared_with_spark = inner.shared_with_spark

    def spark_uri(self, path: str) -> str:
        return self.inner.spark_uri(path)

    def list_names(self, folder: str) -> list[str]:
        return self.inner.list_names(folder)

    def list_files(self, folder: str) -> list[StoredFile]:
        return self.inner.list_files(folder)

    def exists(self, path: str) -> bool:
        return self.inner.exists(path)

    def read_text(self, path: str) -> str | None:
        return self.inner.read_text(path)

    def read_monitoring(self, name: str) -> str | None:
        return self.inner.read_monitoring(name)

    def write_monitoring(self, name: str, text: str) -> bool:
        self.injector.checkpoint(f"write monitoring {name}")
        return self.inner.write_monitoring(name, text)

    def write_text(self, path: str, text: str, create_only: bool) -> None:
        self.injector.checkpoint(f"write {path}")
        self.inner.write_text(path, text, create_only)

    def read_versioned(self, path: str) -> Versioned | None:
        return self.inner.read_versioned(path)

    def write_text_if(self, path: str, text: str, expected: str | None) -> str:
        self.injector.checkpoint(f"write {path}")
        return self.inner.write_text_if(path, text, expected)

    def upload_file(self, local_path: Path, path: str) -> None:
        self.injector.checkpoint(f"upload {path}")
        self.inner.upload_file(local_path, path)

    def rename_create_only(self, source: str, target: str) -> None:
        self.injector.checkpoint(f"rename {source} -> {target}")
        self.inner.rename_create_only(source, target)

    def is_same_file(self, first: str, second: str) -> bool:
        return self.inner.is_same_file(first, second)

    def open_read(self, path: str) -> BinaryIO:
        return self.inner.open_read(path)

    def size(self, path: str) -> int:
        return self.inner.size(path)

    def last_modified(self, path: str) -> float:
        return self.inner.last_modified(path)

    def delete_file(self, path: str) -> None:
        self.injector.checkpoint(f"delete {path}")
        self.inner.delete_file(path)

    def delete_folder(self, folder: str) -> None:
        self.injector.checkpoint(f"delete folder {folder}")
        self.inner.delete_folder(folder)

    def create_folder(self, folder: str) -> None:
        self.injector.checkpoint(f"create folder {folder}")
        self.inner.create_folder(folder)


@contextmanager
def injected(injector: FaultInjector, adapter: bool = True) -> Iterator[FaultInjector]:
    """While the block runs, every landing zone the adapter or the CLI opens is wrapped by
    `injector`, and (with `adapter`) moving a model's snapshot aside is a crash point too."""
    opened_by_product = landing_zone_storage.open_landing_zone

    def open_failing(*args, **kwargs) -> LandingZoneStorage:
        return FaultInjectingStorage(opened_by_product(*args, **kwargs), injector)

    with ExitStack() as patches:
        patches.enter_context(mock.patch.object(landing_zone_storage, "open_landing_zone", open_failing))
        if adapter:
            patches.enter_context(_snapshot_aside_is_a_crash_point(injector))
        yield injector


@contextmanager
def _snapshot_aside_is_a_crash_point(injector: FaultInjector) -> Iterator[None]:
    # Imported here: the adapter brings dbt-spark, which a `dbt-openmirror` process does not need.
    from dbt.adapters.openmirror.impl import OpenMirrorAdapter
    from dbt.adapters.openmirror.run.statements import AdapterStatements

    rename_relation = OpenMirrorAdapter.rename_relation
    execute = AdapterStatements.execute

    def rename_then_checkpoint(self, from_relation, to_relation) -> None:
        rename_relation(self, from_relation, to_relation)
        if to_relation.identifier == f"{from_relation.identifier}{BACKUP_SUFFIX}":
            injector.checkpoint(f"{SNAPSHOT_ASIDE} {from_relation}")
        if to_relation.identifier == f"{from_relation.identifier}{BASE_SUFFIX}":
            injector.checkpoint(f"{SNAPSHOT_TO_BASE} {from_relation}")

    def checkpoint_then_execute(self, macro, **values) -> None:
        if macro == OVERLAY_VIEW_MACRO:
            injector.checkpoint(f"{OVERLAY_VIEW} {values['target']}")
        execute(self, macro, **values)

    with ExitStack() as patches:
        patches.enter_context(mock.patch.object(OpenMirrorAdapter, "rename_relation", rename_then_checkpoint))
        patches.enter_context(mock.patch.object(AdapterStatements, "execute", checkpoint_then_execute))
        yield

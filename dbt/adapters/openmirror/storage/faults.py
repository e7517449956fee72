"""Test tool: fail the N-th operation that changes the landing zone, to walk every crash point.

Off unless `DBT_OPENMIRROR_FAIL_AT` is set (tests only):
- `DBT_OPENMIRROR_FAIL_AT=N`: the N-th changing operation (1-based) does not happen. With
  `DBT_OPENMIRROR_FAIL_MODE=raise` (default) it raises `InjectedFault` and every later operation of
  the process fails too, as after a crash; with `kill` the process kills itself with SIGKILL; with
  `stop` it stops itself with SIGSTOP (a stalled writer: all its threads, heartbeat included) and,
  once continued (SIGCONT), does the operation and goes on.
- `DBT_OPENMIRROR_FAULT_LOG=FILE`: every changing operation is appended to FILE as it starts
  (also with FAIL_AT=0, which fails nothing), so a test knows how many crash points a run has.
Reads are not counted: failing one changes nothing in the landing zone.
"""

import os
import signal
from pathlib import Path
from typing import BinaryIO, List, Optional

from dbt.adapters.openmirror.storage.base import LandingZoneStorage, StoredFile, Versioned

FAIL_AT = "DBT_OPENMIRROR_FAIL_AT"
FAIL_MODE = "DBT_OPENMIRROR_FAIL_MODE"
FAULT_LOG = "DBT_OPENMIRROR_FAULT_LOG"


class InjectedFault(RuntimeError):
    """Raised in place of a landing-zone operation by the fault injector."""


class FaultInjector:
    def __init__(self, fail_at: int, mode: str = "raise", log_path: Optional[str] = None) -> None:
        if mode not in ("raise", "kill", "stop"):
            raise ValueError(f"{FAIL_MODE} must be 'raise', 'kill' or 'stop', got {mode!r}")
        self.fail_at = fail_at
        self.mode = mode
        self.log_path = log_path
        self.count = 0
        self.crashed = False

    @classmethod
    def from_environment(cls) -> Optional["FaultInjector"]:
        if FAIL_AT not in os.environ:
            return None
        return cls(int(os.environ[FAIL_AT]), os.environ.get(FAIL_MODE, "raise"),
                   os.environ.get(FAULT_LOG))

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

    def list_names(self, folder: str) -> List[str]:
        return self.inner.list_names(folder)

    def list_files(self, folder: str) -> List[StoredFile]:
        return self.inner.list_files(folder)

    def exists(self, path: str) -> bool:
        return self.inner.exists(path)

    def read_text(self, path: str) -> Optional[str]:
        return self.inner.read_text(path)

    def read_monitoring(self, name: str) -> Optional[str]:
        return self.inner.read_monitoring(name)

    def write_monitoring(self, name: str, text: str) -> bool:
        self.injector.checkpoint(f"write monitoring {name}")
        return self.inner.write_monitoring(name, text)

    def write_text(self, path: str, text: str, create_only: bool) -> None:
        self.injector.checkpoint(f"write {path}")
        self.inner.write_text(path, text, create_only)

    def read_versioned(self, path: str) -> Optional[Versioned]:
        return self.inner.read_versioned(path)

    def write_text_if(self, path: str, text: str, expected: Optional[str]) -> str:
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

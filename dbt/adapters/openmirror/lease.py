"""One publisher per table folder: a lease in the landing zone, taken with create-only writes.

A lease is a numbered file `_scratchPad/dbt-openmirror/leases/<table folder>/<generation>.json`;
the highest generation is the lease. Taking it means creating the next generation create-only,
which exactly one contender can do, and only when there is none or the current one is stale. The
holder renews its own file while it runs and deletes it when done (so a run leaves no trace); a
killed holder stops renewing and its lease expires. On the same host a holder whose process is
gone is stale at once. The create-only renames of data files stay the last guard: even a holder
that lost its lease cannot overwrite a number.
"""

import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Dict, List, Optional

from dbt.adapters.openmirror.errors import LeaseHeldError, PublishError, TargetExistsError
from dbt.adapters.openmirror.landing_zone import SCRATCH_FOLDER
from dbt.adapters.openmirror.storage.base import LandingZoneStorage

LEASE_FOLDER = f"{SCRATCH_FOLDER}/dbt-openmirror/leases"
_GENERATION_DIGITS = 12

# Runs of this process that hold a lease now; a lease naming this process and another run id is
# left over from an earlier run in this process (one that failed without releasing it).
_ACTIVE_RUNS: Dict[str, str] = {}
_ACTIVE_LOCK = threading.Lock()


@dataclass(frozen=True)
class LeaseHolder:
    run_id: str
    model: str
    host: str
    pid: int
    acquired_at: float
    expires_at: float

    def to_json(self) -> str:
        return json.dumps(
            {"runId": self.run_id, "model": self.model, "host": self.host, "pid": self.pid,
             "acquiredAt": self.acquired_at, "expiresAt": self.expires_at},
            indent=2,
        ) + "\n"

    @classmethod
    def from_json(cls, text: str) -> "LeaseHolder":
        data = json.loads(text)
        return cls(data["runId"], data["model"], data["host"], int(data["pid"]),
                   float(data["acquiredAt"]), float(data["expiresAt"]))

    def describe(self) -> str:
        since = datetime.fromtimestamp(self.acquired_at, timezone.utc).isoformat(timespec="seconds")
        until = datetime.fromtimestamp(self.expires_at, timezone.utc).isoformat(timespec="seconds")
        return (f"run {self.run_id} (model '{self.model}', host {self.host}, pid {self.pid}, "
                f"since {since}, lease until {until})")


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_stale(holder: LeaseHolder, now: float, host: str) -> bool:
    """Whether another run may take over this lease."""
    if holder.expires_at <= now:
        return True
    if holder.host != host:
        return False
    if holder.pid != os.getpid():
        return not _process_alive(holder.pid)
    with _ACTIVE_LOCK:
        return _ACTIVE_RUNS.get(holder.run_id) is None


def generation_name(generation: int) -> str:
    return f"{generation:0{_GENERATION_DIGITS}d}.json"


def _generations(names: List[str]) -> List[int]:
    found = []
    for name in names:
        stem = name[: -len(".json")] if name.endswith(".json") else ""
        if stem.isdigit() and len(stem) == _GENERATION_DIGITS:
            found.append(int(stem))
    return sorted(found)


@dataclass
class Lease:
    table_folder: str
    generation: int
    holder: LeaseHolder
    #: The stale holder this lease was taken over from, if any (its staged files are left over).
    taken_from: Optional[LeaseHolder] = None

    @property
    def path(self) -> str:
        return f"{LEASE_FOLDER}/{self.table_folder}/{generation_name(self.generation)}"


class LeaseManager:
    def __init__(
        self,
        storage: LandingZoneStorage,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.storage = storage
        self.clock = clock
        self.sleep = sleep
        self.host = socket.gethostname()

    def _folder(self, table_folder: str) -> str:
        return f"{LEASE_FOLDER}/{table_folder}"

    def current(self, table_folder: str) -> Optional[Lease]:
        """The highest generation and its holder, or None when nobody ever held the lease."""
        folder = self._folder(table_folder)
        for generation in reversed(_generations(self.storage.list_names(folder))):
            text = self.storage.read_text(f"{folder}/{generation_name(generation)}")
            if text is None:
                continue  # cleaned up between listing and reading
            try:
                return Lease(table_folder, generation, LeaseHolder.from_json(text))
            except (ValueError, KeyError, TypeError) as exc:
                raise PublishError(
                    f"lease file {self.storage.location}/{folder}/{generation_name(generation)} "
                    f"is damaged ({exc}); delete it if no run is publishing {table_folder}"
                ) from exc
        return None

    def acquire(
        self, table_folder: str, run_id: str, model: str, ttl_seconds: float, wait_seconds: float
    ) -> Lease:
        """Take the lease, waiting up to `wait_seconds` for a live holder; else LeaseHeldError."""
        deadline = self.clock() + wait_seconds
        while True:
            now = self.clock()
            current = self.current(table_folder)
            if current is None or is_stale(current.holder, now, self.host):
                holder = LeaseHolder(run_id, model, self.host, os.getpid(), now, now + ttl_seconds)
                stale = current.holder if current else None
                lease = Lease(table_folder, (current.generation if current else 0) + 1, holder, stale)
                try:
                    self.storage.write_text(lease.path, holder.to_json(), create_only=True)
                except TargetExistsError:
                    continue  # another run took it first: look again
                with _ACTIVE_LOCK:
                    _ACTIVE_RUNS[run_id] = table_folder
                self._forget_older(lease)
                return lease
            if now >= deadline:
                raise LeaseHeldError(
                    f"Model '{model}': table {table_folder} is being published by "
                    f"{current.holder.describe()}. Nothing was published; run again when it "
                    "has finished, or set lease_wait_seconds to wait for it."
                )
            self.sleep(min(1.0, max(deadline - now, 0.05)))

    def _forget_older(self, lease: Lease) -> None:
        folder = self._folder(lease.table_folder)
        for generation in _generations(self.storage.list_names(folder)):
            if generation < lease.generation:
                self.storage.delete_file(f"{folder}/{generation_name(generation)}")

    def renew(self, lease: Lease, ttl_seconds: float) -> None:
        now = self.clock()
        lease.holder = LeaseHolder(
            lease.holder.run_id, lease.holder.model, lease.holder.host, lease.holder.pid,
            lease.holder.acquired_at, now + ttl_seconds,
        )
        self.storage.write_text(lease.path, lease.holder.to_json(), create_only=False)

    def check_held(self, lease: Lease) -> None:
        """Raise unless `lease` is still the current, unexpired lease (checked before publishing)."""
        current = self.current(lease.table_folder)
        holder = lease.holder
        if current is None or current.holder.run_id != holder.run_id:
            taker = current.holder.describe() if current else "nobody"
            raise LeaseHeldError(
                f"Model '{holder.model}': run {holder.run_id} lost the lease on "
                f"{lease.table_folder} to {taker}; nothing more is published by this run."
            )
        if current.holder.expires_at <= self.clock():
            raise LeaseHeldError(
                f"Model '{holder.model}': the lease of run {holder.run_id} on {lease.table_folder} "
                "expired before publishing; nothing more is published by this run. Raise "
                "lease_ttl_seconds if runs are slower than the lease."
            )

    def release(self, lease: Lease) -> None:
        """Delete the lease file, so a run that ends leaves the landing zone as it found it."""
        with _ACTIVE_LOCK:
            _ACTIVE_RUNS.pop(lease.holder.run_id, None)
        current = self.current(lease.table_folder)
        if current is not None and current.holder.run_id == lease.holder.run_id:
            self.storage.delete_file(lease.path)


class Heartbeat:
    """Renews a lease every third of its time to live until stopped."""

    def __init__(self, manager: LeaseManager, lease: Lease, ttl_seconds: float, on_error) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(manager, lease, ttl_seconds, on_error),
            name=f"openmirror-lease-{lease.holder.run_id}", daemon=True,
        )
        self._thread.start()

    def _run(self, manager: LeaseManager, lease: Lease, ttl_seconds: float, on_error) -> None:
        while not self._stop.wait(ttl_seconds / 3):
            try:
                manager.renew(lease, ttl_seconds)
            except Exception as exc:  # the check before publishing decides; keep trying
                on_error(exc)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

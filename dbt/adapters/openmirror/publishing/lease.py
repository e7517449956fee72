"""One publisher per table: a lease in the landing zone, taken with create-only writes.

A lease is a numbered file `_scratchPad/dbt-openmirror/leases/<schema>.schema/<table>/<generation>.json`,
named by the table the mirror makes of the folder (`service_name`): folders spelled alike, and a
root folder and dbo's, feed one table, so they share one lease. The highest generation is the
lease. Taking it means creating the next generation create-only, which exactly one contender can
do, and only when the current one is released or stale. The holder renews its own file while it
runs (a conditional write: a file someone replaced is not brought back) and marks it released
when done. Generations only grow: the released file stays until the next lease, and a lease is
numbered above the generation the table's journal was last written under. So a generation fences
writers: the journal refuses one older than its own.

Stale means: released; expired by the storage's clock (the lease file's Last-Modified plus its
time to live against the Last-Modified of a probe written now: hosts' clocks never meet); held by
a run of this process that is no longer active; or, on Linux, held by a process of the same boot
and PID namespace that no longer exists (elsewhere, and across namespaces, only expiry counts).
The holder judges its own lease by its monotonic clock from when it sent its last renewal, less a
margin, so it gives up before any contender can find it expired.
"""

import hashlib
import json
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

from dbt.adapters.openmirror.errors import LeaseHeldError, PublishError, WriteConflictError
from dbt.adapters.openmirror.publishing.publisher import recorded_lease_generation
from dbt.adapters.openmirror.rules.landing_zone import (
    LEASE_FOLDER,
    RUN_ID_PATTERN,
    RUN_ID_RULE,
    SCHEMA_FOLDER_SUFFIX,
    service_name,
)
from dbt.adapters.openmirror.rules.metadata_files import load_json
from dbt.adapters.openmirror.storage.base import LandingZoneStorage

_GENERATION_DIGITS = 12
# The holder stops this much before its lease can expire for others: OneLake's Last-Modified has
# whole seconds, and a clock may run a little fast against the storage's while a lease lasts.
_MARGIN_SECONDS = 1.0
_DRIFT = 0.01

# Runs of this process that hold a lease now; a lease naming this process and another run id is
# left over from an earlier run in this process (one that failed without releasing it).
_ACTIVE_RUNS: dict[str, str] = {}
_ACTIVE_LOCK = threading.Lock()
# One random token per process (keyed by pid, so that a forked child gets its own).
_TOKENS: dict[int, str] = {}


@dataclass(frozen=True)
class ProcessIdentity:
    """The process holding a lease, and what another process needs to tell whether it runs."""

    host: str
    pid: int
    #: Random, one per process: a lease with this token was taken by this very process.
    token: str
    #: Linux: the kernel's boot id and the PID namespace; a pid names the same process only
    #: where both are the same. None elsewhere (no same-host shortcut there).
    boot_id: str | None = None
    pid_namespace: str | None = None

    @classmethod
    def of_this_process(cls) -> "ProcessIdentity":
        pid = os.getpid()
        with _ACTIVE_LOCK:
            token = _TOKENS.setdefault(pid, uuid.uuid4().hex)
        boot_id = pid_namespace = None
        if sys.platform.startswith("linux"):
            try:
                boot_id = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
                pid_namespace = os.readlink("/proc/self/ns/pid")
            except OSError:  # no /proc (a sandbox): only expiry counts
                boot_id = pid_namespace = None
        return cls(socket.gethostname(), pid, token, boot_id, pid_namespace)

    def sees_pids_of(self, other: "ProcessIdentity") -> bool:
        """Whether `other.pid` means the same process here (same boot, same PID namespace)."""
        return None not in (self.boot_id, self.pid_namespace) and (
            (self.boot_id, self.pid_namespace) == (other.boot_id, other.pid_namespace)
        )


@dataclass(frozen=True)
class LeaseHolder:
    run_id: str
    model: str
    process: ProcessIdentity
    #: The holder's own clock, shown only.
    acquired_at: float
    ttl_seconds: float
    released: bool = False
    #: The table folder it publishes (folders the mirror takes for one table share a lease);
    #: None in lease files of earlier versions.
    table_folder: str | None = None

    def to_json(self) -> str:
        process = self.process
        return (
            json.dumps(
                {
                    "runId": self.run_id,
                    "model": self.model,
                    "host": process.host,
                    "pid": process.pid,
                    "token": process.token,
                    "bootId": process.boot_id,
                    "pidNamespace": process.pid_namespace,
                    "acquiredAt": self.acquired_at,
                    "ttlSeconds": self.ttl_seconds,
                    "released": self.released,
                    "tableFolder": self.table_folder,
                },
                indent=2,
            )
            + "\n"
        )

    @classmethod
    def from_json(cls, text: str) -> "LeaseHolder":
        data = load_json(text)
        acquired_at = float(data["acquiredAt"])
        # Lease files of earlier versions carry an absolute expiry instead of a time to live.
        ttl = data["ttlSeconds"] if "ttlSeconds" in data else float(data["expiresAt"]) - acquired_at
        process = ProcessIdentity(
            str(data["host"]),
            int(data["pid"]),
            str(data.get("token") or ""),
            data.get("bootId"),
            data.get("pidNamespace"),
        )
        run_id = data["runId"]
        # The run taking a lease over discards the holder's staged folder, which the id names.
        if not isinstance(run_id, str) or not RUN_ID_PATTERN.fullmatch(run_id):
            raise ValueError(f"runId {run_id!r} is not a run id ({RUN_ID_RULE})")
        folder = data.get("tableFolder")
        return cls(
            run_id,
            str(data["model"]),
            process,
            acquired_at,
            float(ttl),
            bool(data.get("released", False)),
            folder if isinstance(folder, str) else None,
        )

    def describe(self, expires_at: float | None = None) -> str:
        until = f", lease until {_timestamp(expires_at)}" if expires_at is not None else ""
        return (
            f"run {self.run_id} (model '{self.model}', host {self.process.host}, "
            f"pid {self.process.pid}, since {_timestamp(self.acquired_at)}{until})"
        )


def _timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds")


def _process_alive(pid: int) -> bool:
    """Only for a pid of this boot and PID namespace (Linux): elsewhere `os.kill(pid, 0)` is not
    a harmless probe (on Windows it terminates the process)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lease_folder(table_folder: str) -> str:
    """Where the leases of `table_folder`'s table are: one folder per table of the mirror."""
    schema, table = service_name(table_folder)
    schema_folder = _bounded(schema, _MAX_NAME_BYTES - len(SCHEMA_FOLDER_SUFFIX)) + SCHEMA_FOLDER_SUFFIX
    return f"{LEASE_FOLDER}/{schema_folder}/{_bounded(table)}"


_MAX_NAME_BYTES = 255


def _bounded(name: str, limit: int = _MAX_NAME_BYTES) -> str:
    """`name`, or its digest where case folding made it longer than a folder name may be."""
    return name if len(name.encode()) <= limit else hashlib.sha256(name.encode()).hexdigest()


def generation_name(generation: int) -> str:
    return f"{generation:0{_GENERATION_DIGITS}d}.json"


def _generations(names: list[str]) -> list[int]:
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
    #: The stale holder this lease was taken over from, if any (its staged files are left over),
    #: and what showed it stale.
    taken_from: LeaseHolder | None = None
    taken_over_because: str | None = None
    #: The holder's side: the version of its lease file (a renewal or the release replaces only
    #: that), and until when, by its monotonic clock, no contender can find the lease expired.
    version: str | None = None
    valid_until: float = float("-inf")
    #: Where its file is: `lease_folder(table_folder)`, or an earlier version's folder.
    folder: str = ""

    @property
    def path(self) -> str:
        return f"{self.folder or lease_folder(self.table_folder)}/{generation_name(self.generation)}"

    def takeover_notice(self) -> str | None:
        """What a run that took this lease over from a stale holder tells its user (None: the
        lease was free)."""
        if self.taken_from is None:
            return None
        holder = _holder_of(self.taken_from, self.table_folder)
        return f"took over the lease on {self.table_folder} from {holder}, {self.taken_over_because}"

    def stale_staging(self) -> str | None:
        """The run whose staged files the stale holder this lease was taken from left for this
        table folder, to discard; None when there is none, or when it published another folder
        of the same table (whose own next run recovers them)."""
        stale = self.taken_from
        if stale is None or stale.table_folder not in (None, self.table_folder):
            return None
        return stale.run_id


def _holder_of(holder: LeaseHolder, table_folder: str, expires_at: float | None = None) -> str:
    """The holder, with the folder it publishes when that is another spelling of `table_folder`'s table."""
    described = holder.describe(expires_at)
    if holder.table_folder in (None, table_folder):
        return described
    return f"{described}, publishing {holder.table_folder}, which the mirror takes for the same table"


class LeaseManager:
    def __init__(
        self,
        storage: LandingZoneStorage,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        identity: ProcessIdentity | None = None,
    ) -> None:
        """`clock` measures durations only (waiting, the holder's own view of its lease)."""
        self.storage = storage
        self.clock = clock
        self.sleep = sleep
        self.identity = identity or ProcessIdentity.of_this_process()

    def _folder(self, table_folder: str) -> str:
        return lease_folder(table_folder)

    def current(self, table_folder: str, folder: str | None = None) -> Lease | None:
        """The highest generation and its holder (perhaps released), or None when there is none;
        in `folder` rather than the table's lease folder when given."""
        folder = folder or self._folder(table_folder)
        for generation in reversed(_generations(self.storage.list_names(folder))):
            text = self.storage.read_text(f"{folder}/{generation_name(generation)}")
            if text is None:
                continue  # cleaned up between listing and reading
            try:
                return Lease(table_folder, generation, LeaseHolder.from_json(text), folder=folder)
            except (ValueError, KeyError, TypeError) as exc:
                raise PublishError(
                    f"lease file {self.storage.location}/{folder}/{generation_name(generation)} "
                    f"is damaged ({exc}); delete it if no run is publishing {table_folder}"
                ) from exc
        return None

    def describe(self, lease: Lease) -> str:
        """The holder, with when its lease expires by the storage's clock."""
        try:
            expires_at: float | None = self.storage.last_modified(lease.path) + lease.holder.ttl_seconds
        except FileNotFoundError:
            expires_at = None
        return _holder_of(lease.holder, lease.table_folder, expires_at)

    def _earlier_versions_lease(self, table_folder: str) -> Lease | None:
        """A live lease an earlier version took at the table folder's own path (before leases
        were kept per table of the mirror), which this version honours until it ends."""
        folder = f"{LEASE_FOLDER}/{table_folder}"
        if folder == self._folder(table_folder):
            return None
        lease = self.current(table_folder, folder)
        return lease if lease is not None and self._why_stale(lease) is None else None

    def _why_stale(self, lease: Lease) -> str | None:
        """Why another run may take over this lease, as what established it (the end of a
        sentence naming the holder); None while it may not."""
        holder = lease.holder
        if holder.released:
            return "which released it"
        alive = None  # whether the holder's process runs, where this process can tell
        if holder.process.token == self.identity.token:  # this process: is that run still active?
            with _ACTIVE_LOCK:
                if _ACTIVE_RUNS.get(holder.run_id) is None:
                    return "an earlier run of this process that ended without releasing it"
        elif self.identity.sees_pids_of(holder.process):
            alive = _process_alive(holder.process.pid)
            if not alive:
                return f"whose process (pid {holder.process.pid}) is no longer running"
        try:
            written = self.storage.last_modified(lease.path)
        except FileNotFoundError:
            # Gone since it was read: whoever comes next takes the next generation.
            return "whose lease file was removed meanwhile"
        if written + holder.ttl_seconds > self._storage_now(lease.table_folder):
            return None
        # Expired: its heartbeat stopped. A process stalled or stopped by job control may still run,
        # and is fenced off at its next write.
        process = (
            f"its process (pid {holder.process.pid}) still exists but stopped renewing it (stalled or stopped)"
            if alive
            else "it may have stalled, died, or lost the landing zone"
        )
        return (
            f"whose lease expired: not renewed since {_timestamp(written)} (landing zone time), for "
            f"longer than lease_ttl_seconds ({holder.ttl_seconds:g} s); {process}. "
            "If it resumes, it finds its lease lost and publishes nothing more"
        )

    def _storage_now(self, table_folder: str) -> float:
        """The storage's current time: the Last-Modified of a probe file written now."""
        probe = f"{self._folder(table_folder)}/_clock-{uuid.uuid4().hex}.tmp"
        self.storage.write_text(probe, "the storage's time\n", create_only=True)
        try:
            return self.storage.last_modified(probe)
        finally:
            self.storage.delete_file(probe)

    @staticmethod
    def _lifetime(ttl_seconds: float) -> float:
        """How long after sending a write of its lease file the holder may rely on it."""
        return ttl_seconds - min(_MARGIN_SECONDS + ttl_seconds * _DRIFT, ttl_seconds / 2)

    def acquire(
        self,
        table_folder: str,
        run_id: str,
        model: str,
        ttl_seconds: float,
        wait_seconds: float,
        wait_setting: str = "lease_wait_seconds",
    ) -> Lease:
        """Take the lease, waiting up to `wait_seconds` for a live holder; else LeaseHeldError,
        naming `wait_setting` (the model config, or the publish command's option)."""
        deadline = self.clock() + wait_seconds
        floor = recorded_lease_generation(self.storage, table_folder)
        while True:
            current = self.current(table_folder)
            why_stale = None if current is None else self._why_stale(current)
            if current is None or why_stale is not None:
                earlier = self._earlier_versions_lease(table_folder)
                if earlier is None:
                    lease = self._take(table_folder, run_id, model, ttl_seconds, current, why_stale, floor)
                    if lease is not None:
                        return lease
                    continue  # another run took it first: look again
                current = earlier  # waited for as for any live holder
            now = self.clock()
            if now >= deadline:
                raise LeaseHeldError(
                    f"Model '{model}': table {table_folder} is being published by "
                    f"{self.describe(current)}. Nothing was published; run again when it "
                    f"has finished, or set {wait_setting} to wait for it."
                )
            self.sleep(min(1.0, max(deadline - now, 0.05)))

    def _take(
        self,
        table_folder: str,
        run_id: str,
        model: str,
        ttl_seconds: float,
        current: Lease | None,
        why_stale: str | None,
        floor: int,
    ) -> Lease | None:
        """Create the next generation create-only; None when another run created it first."""
        generation = max(current.generation if current else 0, floor) + 1
        stale = current.holder if current is not None and not current.holder.released else None
        holder = LeaseHolder(run_id, model, self.identity, time.time(), ttl_seconds, table_folder=table_folder)
        lease = Lease(table_folder, generation, holder, stale, why_stale if stale is not None else None)
        sent = self.clock()
        try:
            lease.version = self.storage.write_text_if(lease.path, holder.to_json(), None)
        except WriteConflictError:
            return None
        lease.valid_until = sent + self._lifetime(ttl_seconds)
        if stale is not None:
            # Taken over from a run that did not finish: its lease goes now. A released one
            # stays until this run knows whether it writes anything (see release).
            self._forget_older(lease)
        # Only now: a lease whose taking failed half-way is stale for the next run of this process.
        with _ACTIVE_LOCK:
            _ACTIVE_RUNS[run_id] = table_folder
        return lease

    def _forget_older(self, lease: Lease) -> None:
        folder = self._folder(lease.table_folder)
        for generation in _generations(self.storage.list_names(folder)):
            if generation < lease.generation:
                self.storage.delete_file(f"{folder}/{generation_name(generation)}")

    def renew(self, lease: Lease) -> None:
        """Write the lease file again (only the version this holder wrote), so that its
        Last-Modified, and the holder's own view, move on."""
        sent = self.clock()
        try:
            lease.version = self.storage.write_text_if(lease.path, lease.holder.to_json(), lease.version)
        except WriteConflictError:
            lease.valid_until = float("-inf")
            raise self.lost(lease, "its lease file was replaced or removed by another run") from None
        lease.valid_until = sent + self._lifetime(lease.holder.ttl_seconds)

    def lost(self, lease: Lease, why: str) -> LeaseHeldError:
        return LeaseHeldError(
            f"Model '{lease.holder.model}': run {lease.holder.run_id} lost its lease on "
            f"{lease.table_folder} ({why}); nothing more is published by this run."
        )

    def check_held(self, lease: Lease) -> None:
        """Raise unless `lease` is still the current lease and, by this holder's clock, no
        contender can have found it expired (checked before every rename and journal write)."""
        current = self.current(lease.table_folder)
        if current is None or current.generation != lease.generation or current.holder != lease.holder:
            taker = (
                f"{self.describe(current)} took it over"
                if current is not None and not current.holder.released
                else "its lease file was removed or released"
            )
            raise self.lost(lease, taker)
        if self.clock() >= lease.valid_until:
            raise self.lost(
                lease,
                (
                    f"it was not renewed within lease_ttl_seconds ({lease.holder.ttl_seconds:g} s): the run "
                    "stalled or could not reach the landing zone. Raise lease_ttl_seconds if runs are slower"
                ),
            )

    def fence(self, lease: Lease) -> "Fence":
        return Fence(self, lease)

    def release(self, lease: Lease) -> None:
        """Mark the lease file released (only if it is still the one this holder wrote). A run
        that wrote the table's journal leaves its released file, numbered at the journal's
        generation, for the next lease to number itself after; the older files go. A run that
        wrote nothing (bad input, no lease needed after all) removes its own file and leaves the
        leases as it found them: its generation, never shown to the journal, may be taken again."""
        with _ACTIVE_LOCK:
            _ACTIVE_RUNS.pop(lease.holder.run_id, None)
        released = replace(lease.holder, released=True)
        lease.valid_until = float("-inf")
        try:
            lease.version = self.storage.write_text_if(lease.path, released.to_json(), lease.version)
        except WriteConflictError:
            return  # taken over since: the newer lease is not this run's to touch
        if recorded_lease_generation(self.storage, lease.table_folder) < lease.generation:
            self.storage.delete_file(lease.path)
        else:
            self._forget_older(lease)


class Fence:
    """What a writer shows the table's journal and checks before each rename: the generation of
    its lease, and that it still holds it (publisher.py)."""

    def __init__(self, manager: LeaseManager, lease: Lease) -> None:
        self._manager = manager
        self._lease = lease

    @property
    def generation(self) -> int:
        return self._lease.generation

    def check(self) -> None:
        self._manager.check_held(self._lease)

    def lost(self, why: str) -> LeaseHeldError:
        return self._manager.lost(self._lease, why)


class Heartbeat:
    """Renews a lease every third of its time to live until stopped, or until it is lost."""

    def __init__(
        self, manager: LeaseManager, lease: Lease, ttl_seconds: float, on_error: Callable[[Exception], object]
    ) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run,
            args=(manager, lease, ttl_seconds, on_error),
            name=f"openmirror-lease-{lease.holder.run_id}",
            daemon=True,
        )
        self._thread.start()

    def _run(
        self, manager: LeaseManager, lease: Lease, ttl_seconds: float, on_error: Callable[[Exception], object]
    ) -> None:
        while not self._stop.wait(ttl_seconds / 3):
            try:
                manager.renew(lease)
            except LeaseHeldError as exc:  # someone took it over: renewing cannot get it back
                on_error(exc)
                return
            except Exception as exc:  # the check before each write decides; keep trying
                on_error(exc)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

"""`dbt-openmirror replay`: apply a landing zone to local Delta tables the way the service does.

Each poll looks at every table folder (see `table_folder.py` for one table): files are applied in
the table's order, each in one Delta commit that records the file, so a replay killed at any point
resumes without losing or repeating a file; applied files move to `_ProcessedFiles/`. A problem
(metadata, file, type, schema or key change) puts that table in `Error` naming the file and column
while every other table goes on; it is tried again at each poll, so a repair (a replaced file of
the same name, a fixed `_metadata.json`) lets it go on. A deleted folder drops its table at the
next poll; a recreated one rebuilds it. Two folders that name one table stop it until one is
deleted. `watch` polls until stopped, as the service does.
"""

import threading
from collections.abc import Callable
from pathlib import Path

from dbt.adapters.openmirror.errors import LandingZoneConfigError, OpenMirrorError
from dbt.adapters.openmirror.rules.landing_zone import (
    folder_name_problem,
    service_name,
    spelled_alike_problem,
    table_folders,
)
from dbt.adapters.openmirror.storage.base import LandingZoneStorage
from dbt.adapters.openmirror.storage.local import LocalStorage
from dbt.adapters.openmirror.tools.local_mirror.delta_table import MirroredTable, delta_path_problem
from dbt.adapters.openmirror.tools.local_mirror.lock import exclusive
from dbt.adapters.openmirror.tools.local_mirror.status import (
    ERROR,
    NOT_STARTED,
    REPLICATING,
    RUNNING,
    STOPPED,
    WAITING_FOR_FILE,
    StatusFiles,
    TableStatus,
    now,
)
from dbt.adapters.openmirror.tools.local_mirror.table_folder import Progress, TableFolderReplay, TableStopped

LOCK_FILE = ".replay.lock"
#: The landing zone a target mirrors: another one replayed into it would take its tables for
#: deleted folders and drop them. (A leading '.' is no schema's name.)
SOURCE_FILE = ".landing_zone"
INVALID_FOLDER_NAME = "InvalidFolderName"
#: Two table folders name one table (rules/landing_zone.py): the spec says nothing of it, and
#: applying either would lose the other's rows without a word.
FOLDER_CONFLICT = "TableFolderConflict"


class LocalMirror:
    def __init__(self, storage: LandingZoneStorage, target: Path) -> None:
        local_root = storage.root.resolve() if isinstance(storage, LocalStorage) else None
        if local_root is not None and _overlap(local_root, target.resolve()):
            # Its Delta tables and Monitoring/ would become table folders, or the landing zone a table.
            raise LandingZoneConfigError(
                f"the local mirror's target {target} and the landing zone {storage.location} overlap: "
                "give a target outside the landing zone (and not around it)"
            )
        #: The landing zone as the target records it (SOURCE_FILE): one spelling of it.
        self.source = str(local_root) if local_root is not None else storage.location
        self.storage = storage
        self.target = target
        self.status_files = StatusFiles(storage, target)
        #: (schema, table) of the tables the last poll rebuilt (their folder was recreated).
        self.rebuilt: list[tuple[str, str]] = []
        # Per Delta table: (table id, version, names applied up to it), so a poll reads only the
        # commits since the last one (LastUpdateTimeFileDetection's memory of processed paths).
        self._applied: dict[Path, tuple[str, int, set[str]]] = {}

    def read_status(self) -> dict[tuple[str, str], TableStatus]:
        return self.status_files.read()

    def replay(self, as_service: bool = False) -> list[TableStatus]:
        """One poll of the whole landing zone; every table's status, sorted. One replay per target
        at a time, like the one replicator of a mirrored database: a second one waits. Only a
        mirror that goes on polling (`as_service`, `watch`) writes the service's status files
        beside an item's landing zone: a one-off replay would leave a status nothing updates,
        which a publisher's rebuild would wait on."""
        with exclusive(self.target / LOCK_FILE):
            return self._poll(as_service)

    def watch(
        self,
        interval: float,
        stop: threading.Event,
        report: Callable[[list[TableStatus]], None] = lambda statuses: None,
        failed: Callable[[Exception], None] = lambda exc: None,
    ) -> None:
        """Poll every `interval` seconds until `stop` is set. A poll that fails as a whole (the
        landing zone unreachable, say) is reported and tried again at the next one."""
        try:
            while not stop.is_set():
                try:
                    report(self.replay(as_service=True))
                except Exception as exc:
                    failed(exc)
                stop.wait(interval)
        finally:
            self.stopped()

    def stopped(self) -> None:
        """Say in `replicator.json` that no replicator runs any more."""
        with exclusive(self.target / LOCK_FILE):
            self.status_files.write(self.status_files.read(), STOPPED)

    def _poll(self, as_service: bool) -> list[TableStatus]:
        if not self.storage.exists(""):
            # Never read a missing landing zone as one whose folders were all deleted.
            raise LandingZoneConfigError(f"the landing zone {self.storage.location} does not exist")
        self._claim_target()
        self.rebuilt = []
        statuses = self.status_files.read()
        present = set()
        folders = list(table_folders(self.storage))
        feeding: dict[tuple[str, str], list[str]] = {}
        for _, _, folder in folders:
            feeding.setdefault(service_name(folder), []).append(folder)
        for schema, table, folder in folders:
            present.add((schema, table))
            others = [other for other in feeding[service_name(folder)] if other != folder]
            statuses[(schema, table)] = self._replicate(schema, table, folder, statuses.get((schema, table)), others)
            self.status_files.write_target(statuses)
        for schema, table in sorted(set(statuses) - present):
            # The folder was deleted: the service drops the mirrored table.
            try:
                path = self._target_path(schema, table)
            except TableStopped:  # never had a table
                pass
            else:
                MirroredTable.drop(path)
                self._applied.pop(path, None)
            del statuses[(schema, table)]
        if as_service:
            self.status_files.write(statuses, RUNNING)
        else:
            self.status_files.write_target(statuses)
        return [s for _, s in sorted(statuses.items())]

    def _claim_target(self) -> None:
        """Record the landing zone in the target, or refuse one that mirrors another (a target
        written before the record was kept is taken as this landing zone's)."""
        source = self.target / SOURCE_FILE
        recorded = source.read_text(encoding="utf-8") if source.exists() else None
        if recorded is None:
            self.target.mkdir(parents=True, exist_ok=True)
            source.write_text(self.source, encoding="utf-8")
        elif recorded != self.source:
            raise LandingZoneConfigError(
                f"the local mirror {self.target} mirrors the landing zone {recorded}, not {self.source}: "
                "give each landing zone a target of its own (or delete this one to mirror from scratch)"
            )

    def _target_path(self, schema: str, table: str) -> Path:
        """The table's Delta folder, `<target>/<schema>/<table>`; TableStopped when the names cannot
        make a path inside the target that delta-rs reads as it is (checked before anything is written)."""
        for kind, name in (("schema", schema), ("table", table)):
            problem = folder_name_problem(name)
            if problem:
                raise TableStopped(INVALID_FOLDER_NAME, f"{kind} folder name {name!r}: {problem}")
        path = self.target / schema / table
        resolved = path.resolve()
        if resolved.parent.parent != self.target.resolve() or path == self.status_files.path:
            outside = "would leave the target folder or replace the mirror's status file"
            raise TableStopped(INVALID_FOLDER_NAME, f"{schema}/{table} {outside}")
        problem = delta_path_problem(resolved)
        if problem:
            raise TableStopped(INVALID_FOLDER_NAME, f"schema {schema!r}, table {table!r}: {problem}")
        return path

    def _replicate(
        self, schema: str, table: str, folder: str, status: TableStatus | None, others: list[str]
    ) -> TableStatus:
        """Apply what is new in `folder`; `others`: the other folders that name the same table."""
        progress = Progress(applied=None)
        error = None
        try:
            if others:
                problem = spelled_alike_problem(folder, others[0])
                raise TableStopped(FOLDER_CONFLICT, f"{problem}: neither is applied until one of them is deleted")
            TableFolderReplay(self.storage, folder, self._target_path(schema, table)).run(progress, self._names_applied)
        except TableStopped as stop:
            error = (stop.code, str(stop))
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # one table's trouble never stops another
            where = f"{progress.applying}: " if progress.applying else ""
            # Ours say what is wrong in their message; another library's needs its name.
            what = exc.msg if isinstance(exc, OpenMirrorError) else f"{type(exc).__name__}: {exc}"
            error = ("ReplayFailed", f"{where}{what}")
        if progress.rebuilt:
            self.rebuilt.append((schema, table))
        if status is None or progress.rebuilt:
            status = TableStatus(schema, table)
        return _updated(status, progress, error)

    def _names_applied(self, mirrored: MirroredTable) -> set[str]:
        # str(): a table id is a UUID string; deltalake annotates it as int.
        table_id, version = str(mirrored.delta.metadata().id), mirrored.delta.version()
        cached = self._applied.get(mirrored.path)
        if cached is not None and cached[0] == table_id and cached[1] <= version:
            names = cached[2] | mirrored.applied_names(since_version=cached[1])
        else:
            names = mirrored.applied_names()
        self._applied[mirrored.path] = (table_id, version, names)
        return set(names)


def _overlap(first: Path, second: Path) -> bool:
    return first == second or first.is_relative_to(second) or second.is_relative_to(first)


def _updated(status: TableStatus, progress: Progress, error: tuple[str, str] | None) -> TableStatus:
    status.keyColumns = list(progress.key_columns)
    status.metrics["processedRows"] += progress.rows
    status.metrics["processedBytes"] += progress.bytes
    if progress.files:
        status.lastSyncDateTime = now()
    if progress.applied is not None:
        status.lastAppliedFile, status.lastAppliedFileName = progress.applied.number, progress.applied.name
    status.pendingFiles, status.ignoredFiles = list(progress.pending), list(progress.ignored)
    status.errorCode = status.errorMessage = None
    if error is not None:
        status.status, (status.errorCode, status.errorMessage) = ERROR, error
    elif progress.waiting_for:
        status.status = WAITING_FOR_FILE
        status.errorMessage = f"waiting for {progress.waiting_for}: later files wait behind the gap"
    else:
        status.status = REPLICATING if progress.applied is not None else NOT_STARTED
    return status

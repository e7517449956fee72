"""What the mirroring service says about a table, and the restart protocol's waits on it.

Rebuilding a table (spec section 5) is: delete its folder, wait until the service no longer
lists the table, recreate the folder with `_metadata.json` and a full load, and publish
incremental files only once the service lists the table again. Waiting only until the folder is
gone is not enough: a service that still holds the old table reads the new file 1 as one it has
already processed. The service's view is `Files/Monitoring/tables.json` beside the landing zone
(monitoring.py reads it). Where nothing says what the service holds (a plain folder that no
mirror reads: no tables.json, no replicator.json), there is nothing to wait for: that is said
once, and publishing goes on. A tables.json missing where the service has written (its
replicator.json, or a tables.json read earlier in this invocation) is one being replaced, or a
read not caught up, and is looked for again.
"""

import time
from collections.abc import Callable

from dbt.adapters.openmirror.errors import PublishError, ServiceWaitError
from dbt.adapters.openmirror.rules.landing_zone import comparable, service_name, table_identity
from dbt.adapters.openmirror.rules.monitoring import REPLICATOR_FILE, TABLES_FILE, parse_tables, replicator_status
from dbt.adapters.openmirror.storage.base import LandingZoneStorage

#: How long a rebuild waits for the service by default (model config `rebuild_wait_seconds`).
DEFAULT_REBUILD_WAIT_SECONDS = 600
_FIRST_PAUSE_SECONDS = 1.0
_LONGEST_PAUSE_SECONDS = 15.0


class _Unsure(Exception):
    """tables.json exists but could not be read this time (caught while being rewritten)."""


class MirroringService:
    def __init__(
        self,
        storage: LandingZoneStorage,
        log: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.storage = storage
        self.log = log
        self.clock = clock
        self.sleep = sleep
        self._said_unreadable = False
        self._status_seen = False

    def lists(self, table_folder: str) -> bool | None:
        """Whether the service lists the table; None when no status of the service is readable."""
        try:
            text = self.storage.read_monitoring(TABLES_FILE)
            if text is None:
                self._check_no_service()
                return None
            tables = parse_tables(text)
        except (ValueError, PublishError) as exc:  # PublishError: not UTF-8 text
            raise _Unsure(str(exc)) from exc
        self._status_seen = True
        ours = service_name(table_folder)
        return any((comparable(schema), comparable(table)) == ours for schema, table in tables)

    def _check_no_service(self) -> None:
        """No tables.json: no service, unless the service has written beside it."""
        if self._status_seen:
            raise _Unsure(f"{TABLES_FILE} is missing, though it was read earlier in this invocation")
        if self.storage.read_monitoring(REPLICATOR_FILE) is not None:
            raise _Unsure(f"{TABLES_FILE} is missing, though the service's {REPLICATOR_FILE} is there")

    def check_can_drop(self, table_folder: str, model: str) -> None:
        """Before deleting a table folder to rebuild it: a service that lists the table while its
        replication is stopped would never drop it, and the folder would stay deleted until a
        later run. An unreadable status is left to the wait after the delete."""
        try:
            listed = self.lists(table_folder)
        except _Unsure:
            return
        if listed:
            self._check_replicating(table_folder, False, model)

    def wait_until_dropped(self, table_folder: str, timeout_seconds: float, model: str) -> None:
        """Before recreating a table folder: the service must no longer hold the old table."""
        self._wait(table_folder, False, timeout_seconds, model)

    def wait_until_listed(self, table_folder: str, timeout_seconds: float, model: str) -> None:
        """Before the first incremental file after a full load: the service must have taken
        the table on again."""
        self._wait(table_folder, True, timeout_seconds, model)

    def _wait(self, table_folder: str, listed: bool, timeout_seconds: float, model: str) -> None:
        deadline = self.clock() + timeout_seconds
        pause = _FIRST_PAUSE_SECONDS
        unreadable: str | None = None  # why tables.json could not be read, the last time
        while True:
            try:
                found, unreadable = self.lists(table_folder), None
            except _Unsure as exc:
                found, unreadable = not listed, str(exc)  # not known yet: look again
            if found is None:
                self._say_unreadable()
                return
            if found == listed:
                return
            if pause == _FIRST_PAUSE_SECONDS:
                # Only a wait that is needed: a stopped replication then never ends it.
                self._check_replicating(table_folder, listed, model)
                schema, table = table_identity(table_folder)
                state = "lists" if listed else "no longer lists"
                self.log(
                    f"Model '{model}': waiting until the mirroring service {state} table {schema}.{table} "
                    f"(up to {timeout_seconds:g} s)"
                )
            left = deadline - self.clock()
            if left <= 0:
                raise ServiceWaitError(self._gave_up(table_folder, listed, timeout_seconds, model, unreadable))
            self.sleep(min(pause, left))
            pause = min(pause * 2, _LONGEST_PAUSE_SECONDS)

    def _check_replicating(self, table_folder: str, listed: bool, model: str) -> None:
        """A mirrored database whose replication is stopped never drops or lists a table: waiting
        for it would only end at the bound, so say so at once."""
        text = self.storage.read_monitoring(REPLICATOR_FILE)
        if text is None or replicator_status(text) != "Stopped":
            return
        schema, table = table_identity(table_folder)
        raise ServiceWaitError(
            f"Model '{model}': table {schema}.{table} waits for the mirroring service to "
            f"{'list it again' if listed else 'drop it'}, but Files/Monitoring/{REPLICATOR_FILE} says "
            "replication is Stopped. Nothing more was published. Start the mirrored database's "
            "replication (or the local mirror, `dbt-openmirror replay --watch`), or remove "
            "Files/Monitoring if nothing mirrors this landing zone; the next run goes on from here."
        )

    def _say_unreadable(self) -> None:
        if not self._said_unreadable:
            self._said_unreadable = True
            self.log(
                f"{self.storage.location}: no mirroring status is readable (no Files/Monitoring/"
                f"{TABLES_FILE} or {REPLICATOR_FILE} beside the landing zone), so rebuilds do not wait for the service"
            )

    def _gave_up(
        self, table_folder: str, listed: bool, timeout_seconds: float, model: str, unreadable: str | None
    ) -> str:
        schema, table = table_identity(table_folder)
        if unreadable is not None:
            waited_for = (
                f"the mirroring service's {TABLES_FILE} could not be read ({unreadable}), so nothing says "
                f"whether it {'lists' if listed else 'still lists'} table {schema}.{table}"
            )
        elif listed:
            waited_for = (
                f"the mirroring service has not listed table {schema}.{table} again since its "
                "folder was loaded in full, and incremental files are published only after it has"
            )
        else:
            waited_for = (
                f"the mirroring service still lists table {schema}.{table}, whose folder was deleted "
                "(by this rebuild, or before the run), and a full load starts only once the service "
                "has dropped the table"
            )
        return (
            f"Model '{model}': {waited_for} (waited {timeout_seconds:g} s, rebuild_wait_seconds). "
            "Nothing more was published. Check the table's replication status in the mirrored "
            f"database (Files/Monitoring/{TABLES_FILE}, or the Fabric portal); the next run "
            "goes on from here."
        )

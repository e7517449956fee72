"""What the local mirror says about itself, in the service's shapes (spec section 6): per table
`tables.json` (`{"tables": [{sourceSchemaName, sourceTableName, status, errorCode, errorMessage,
lastSyncDateTime, metrics: {processedRows, processedBytes}}]}`, plus fields of ours) and the
database's `replicator.json`. Written into the target (`<target>/Monitoring/`, after every table)
and, when the landing zone is an item's `Files/LandingZone`, beside it in `Files/Monitoring/`
(after every poll), where the service writes its own; `monitoring.parse_tables` reads either. A
table is listed from the poll that first sees its folder until the poll after it is deleted.
"""

import json
import os
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path

from dbt.adapters.openmirror.rules.monitoring import REPLICATOR_FILE, TABLES_FILE
from dbt.adapters.openmirror.storage.base import LandingZoneStorage
from dbt.adapters.openmirror.text import counted

STATUS_FILE = f"Monitoring/{TABLES_FILE}"
NOT_STARTED, REPLICATING, WAITING_FOR_FILE, ERROR = "NotStarted", "Replicating", "WaitingForFile", "Error"
RUNNING, STOPPED = "Running", "Stopped"


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class TableStatus:
    sourceSchemaName: str
    sourceTableName: str
    status: str = NOT_STARTED
    errorCode: str | None = None
    errorMessage: str | None = None
    lastSyncDateTime: str | None = None
    metrics: dict[str, int] = field(default_factory=lambda: {"processedRows": 0, "processedBytes": 0})
    #: The application transaction of the last applied file: its sequence number
    #: (SequentialFileName) or the count of files applied (LastUpdateTimeFileDetection).
    lastAppliedFile: int = 0
    lastAppliedFileName: str | None = None
    pendingFiles: list[str] = field(default_factory=list)
    #: Files at paths already processed (LastUpdateTimeFileDetection never applies them again).
    ignoredFiles: list[str] = field(default_factory=list)
    keyColumns: list[str] | None = None

    def describe(self) -> str:
        """One line for the command's output."""
        name = self.lastAppliedFileName
        if name is None or name.startswith(f"{self.lastAppliedFile:020d}."):  # sequential names
            applied = f"applied through file {self.lastAppliedFile}"
        else:
            applied = f"{counted(self.lastAppliedFile, 'file')} applied (last {name})"
        line = (
            f"{self.sourceSchemaName}.{self.sourceTableName}: {self.status}, {applied}, "
            f"{counted(self.metrics['processedRows'], 'row')} processed"
        )
        if self.errorMessage:
            line += f" ({self.errorCode or 'note'}: {self.errorMessage})"
        if self.ignoredFiles:
            line += f" (files at paths already processed, not applied again: {', '.join(self.ignoredFiles)})"
        return line


class StatusFiles:
    """The mirror's status files in the target, and beside the landing zone when it is an item's."""

    def __init__(self, storage: LandingZoneStorage, target: Path) -> None:
        self.storage = storage
        self.path = target / STATUS_FILE

    def read(self) -> dict[tuple[str, str], TableStatus]:
        if not self.path.exists():
            return {}
        known = {f.name for f in fields(TableStatus)}
        statuses = {}
        for entry in json.loads(self.path.read_text(encoding="utf-8")).get("tables", []):
            status = TableStatus(**{k: v for k, v in entry.items() if k in known})
            statuses[(status.sourceSchemaName, status.sourceTableName)] = status
        return statuses

    def write_target(self, statuses: dict[tuple[str, str], TableStatus]) -> str:
        """The target's `tables.json` (after every table of a poll); its text."""
        tables = json.dumps({"tables": [asdict(s) for _, s in sorted(statuses.items())]}, indent=2) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{self.path.name}.tmp")
        temporary.write_text(tables, encoding="utf-8")
        os.replace(temporary, self.path)
        return tables

    def write(self, statuses: dict[tuple[str, str], TableStatus], replicator: str) -> None:
        """Both places (at the end of a poll: beside a remote landing zone it costs requests)."""
        if self.storage.write_monitoring(TABLES_FILE, self.write_target(statuses)):
            self.storage.write_monitoring(REPLICATOR_FILE, self.replicator_json(replicator))

    @staticmethod
    def replicator_json(state: str) -> str:
        return (
            json.dumps(
                {"status": state, "errorCode": None, "errorMessage": None, "lastUpdateDateTime": now()}, indent=2
            )
            + "\n"
        )

"""What the mirror says about itself: `Monitoring/replicator.json` (the mirrored database) and
`Monitoring/tables.json` (per table: status, errorCode, errorMessage, metrics, lastSyncDateTime).

The service writes them next to the landing zone (`<item>/Files/Monitoring/`, spec section 6);
the local mirror writes documents of the same shape into its target folder, and beside an item's
landing zone as the service does. One reader for both, tolerant of missing fields: the service's
documents are not versioned.
"""

from dataclasses import dataclass
from typing import Any

from dbt.adapters.openmirror.rules.landing_zone import DEFAULT_SCHEMA
from dbt.adapters.openmirror.rules.metadata_files import load_json
from dbt.adapters.openmirror.text import counted

TABLES_FILE = "tables.json"
REPLICATOR_FILE = "replicator.json"


@dataclass(frozen=True)
class MirroredTable:
    status: str
    processed_rows: int | None = None
    last_sync: str | None = None
    error: str | None = None

    def describe(self) -> str:
        text = self.status
        if self.processed_rows is not None:
            text += f", {counted(self.processed_rows, 'row')} processed"
        if self.last_sync:
            text += f", last sync {self.last_sync}"
        if self.error:
            text += f": {self.error}"
        return text


def _error(document: dict[str, Any]) -> str | None:
    code, message = document.get("errorCode"), document.get("errorMessage")
    if code and message:
        return f"{code}: {message}"
    return code or message or None


def _json(text: str, what: str) -> Any:
    try:
        return load_json(text)
    except ValueError as exc:
        raise ValueError(f"{what} is not valid JSON ({exc})") from exc


def parse_tables(text: str, where: str = TABLES_FILE) -> dict[tuple[str, str], MirroredTable]:
    """(schema, table) → its status, from a `tables.json` text."""
    document = _json(text, where)
    entries = document.get("tables", []) if isinstance(document, dict) else None
    if not isinstance(entries, list):  # not the service's document (or not yet): nothing can be told
        raise ValueError(f"{where} does not hold a list of tables")
    tables = {}
    for entry in entries:
        # Names that are not text name no table (the documents are not versioned: skip, not fail).
        if (
            not isinstance(entry, dict)
            or not entry.get("sourceTableName")
            or not isinstance(entry["sourceTableName"], str)
        ):
            continue
        schema = entry.get("sourceSchemaName") or DEFAULT_SCHEMA
        if not isinstance(schema, str):
            continue
        metrics = entry.get("metrics")
        rows = metrics.get("processedRows") if isinstance(metrics, dict) else None
        tables[(schema, entry["sourceTableName"])] = MirroredTable(
            status=str(entry.get("status") or "Unknown"),
            processed_rows=int(rows) if isinstance(rows, (int, float, str)) and str(rows).isdigit() else None,
            last_sync=entry.get("lastSyncDateTime"),
            error=_error(entry),
        )
    return tables


def replicator_status(text: str, where: str = REPLICATOR_FILE) -> str | None:
    """The mirrored database's replication status (`Running`, `Stopped`, ...), if it says one."""
    try:
        document = _json(text, where)
    except ValueError:
        return None  # caught half-written: not known
    status = document.get("status") if isinstance(document, dict) else None
    return str(status) if status else None


def describe_replicator(text: str, where: str = REPLICATOR_FILE) -> str:
    """One line about the mirrored database, from a `replicator.json` text (which may be caught
    half-written: said, not raised)."""
    try:
        document = _json(text, where)
    except ValueError as exc:
        return f"not readable: {exc}"
    if not isinstance(document, dict):
        return "unknown"
    line = str(document.get("status") or "unknown")
    error = _error(document)
    return f"{line}: {error}" if error else line

"""What a run reports: the run line and `run_results.json`'s adapter_response."""

from collections.abc import Sequence
from dataclasses import dataclass, field

from dbt.adapters.contracts.connection import AdapterResponse

from dbt.adapters.openmirror.rules.markers import DELETE, INSERT, UPDATE, UPSERT


@dataclass
class OpenMirrorResponse(AdapterResponse):
    inserts: int = 0
    updates: int = 0
    deletes: int = 0
    upserts: int = 0
    files: list[str] = field(default_factory=list)
    table_folder: str = ""
    mode: str = ""
    #: What the run warned about (a rebuild, a full reload, a recovery, ...).
    warnings: list[str] = field(default_factory=list)


def _file_span(table_folder: str, files: list[str]) -> str:
    if len(files) == 1:
        return f"{table_folder}/{files[0]}"
    return f"{table_folder}/{files[0]} .. {files[-1]} ({len(files)} files)"


def describe_change(counts: dict[int, int], files: list[str], table_folder: str) -> str:
    """E.g. `+3 ~2 -1 -> sales.schema/orders/00000000000000000007.parquet`."""
    inserts, updates = counts.get(INSERT, 0), counts.get(UPDATE, 0)
    deletes, upserts = counts.get(DELETE, 0), counts.get(UPSERT, 0)
    changes = f"+{inserts} ~{updates} -{deletes}" + (f" ^{upserts}" if upserts else "")
    if files:
        return f"{changes} -> {_file_span(table_folder, files)}"
    return f"{changes}: no changes, no file in {table_folder}"


def publish_response(
    counts: dict[int, int],
    files: list[str],
    table_folder: str,
    mode: str,
    warnings: Sequence[str] = (),
) -> OpenMirrorResponse:
    message = describe_change(counts, files, table_folder)
    if mode == "rebuild":
        message = f"rebuilt: {message}"
    return OpenMirrorResponse(
        _message=message,
        code="OPEN_MIRROR",
        rows_affected=sum(counts.values()),
        inserts=counts.get(INSERT, 0),
        updates=counts.get(UPDATE, 0),
        deletes=counts.get(DELETE, 0),
        upserts=counts.get(UPSERT, 0),
        files=files,
        table_folder=table_folder,
        mode=mode,
        warnings=list(warnings),
    )


def empty_output_warning(model: str, table_folder: str) -> str:
    """A run whose empty output deletes every row the mirrored table holds."""
    return (
        f"Model '{model}': its output is empty, so this run deletes every row of {table_folder} (was an "
        "input built with --empty, or emptied?); --warn-error stops such a run before it publishes"
    )

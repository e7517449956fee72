"""The row marker column of a change file and its values (spec section 3).

The SQL that writes them is in macros/sql/ (which spell them literally); Python reads them
back: the publisher checks the column of each staged file, the response counts rows per marker,
and the local mirror and the validator check each file's markers with `marker_problem`.
"""

import pyarrow as pa
import pyarrow.compute as pc

ROW_MARKER = "__rowMarker__"
INSERT, UPDATE, DELETE, UPSERT = 0, 1, 2, 4
KNOWN_MARKERS = (INSERT, UPDATE, DELETE, UPSERT)
MARKER_NAMES = {INSERT: "INSERT", UPDATE: "UPDATE", DELETE: "DELETE", UPSERT: "UPSERT"}


def count_markers(markers: pa.ChunkedArray) -> dict[int, int]:
    """Rows per marker value."""
    return {int(entry["values"].as_py()): int(entry["counts"].as_py()) for entry in pc.value_counts(markers)}


def describe_markers(counts: dict[int, int]) -> str:
    """`1 UPDATE, 2 DELETE`: rows per marker, in marker order, leaving out markers without rows."""
    return ", ".join(f"{counts[m]} {MARKER_NAMES.get(m, m)}" for m in sorted(counts) if counts[m])


def marker_problem(markers: pa.ChunkedArray, keyed: bool) -> tuple[int, str] | None:
    """(row, why) for the first marker the mirror cannot apply: NULL, a value outside 0, 1, 2, 4,
    or, in a table without keyColumns, anything but INSERT (updates and deletes need a key)."""
    unknown = pc.invert(pc.fill_null(pc.is_in(markers, pa.array(KNOWN_MARKERS, markers.type)), False))
    row = pc.index(unknown, True).as_py()
    if row is not None and row >= 0:
        return row, f"{ROW_MARKER} is {markers[row].as_py()}, not 0, 1, 2 or 4"
    if not keyed:
        row = pc.index(pc.not_equal(markers, INSERT), True).as_py()
        if row is not None and row >= 0:
            return row, (
                f"{ROW_MARKER} is {markers[row].as_py()} in a table without keyColumns: only INSERT (0) "
                "applies; declare keyColumns in _metadata.json for updates and deletes"
            )
    return None


def default_marker_problem(upsert_default: bool, keyed: bool) -> str | None:
    """Why the rows of a file without the marker column cannot be applied: under
    isUpsertDefaultRowMarker they are upserts, which need keyColumns."""
    if upsert_default and not keyed:
        return (
            f"has no {ROW_MARKER}, so with isUpsertDefaultRowMarker its rows are upserts, which need "
            "keyColumns in _metadata.json"
        )
    return None

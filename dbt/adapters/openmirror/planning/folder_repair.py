"""What to do with the folders of a model's tables that a run killed inside a statement left out
of step with the catalog (run/folder_repair.py says how they are found)."""

from collections.abc import Sequence
from dataclasses import dataclass

from dbt.adapters.openmirror.errors import PublishError


@dataclass(frozen=True)
class TableFolder:
    """One of a run's table names: whether a managed table of that name is registered, and its
    folder (the table's, or where the catalog would put it)."""

    name: str
    folder: str
    registered: bool
    exists: bool


@dataclass(frozen=True)
class FolderRepair:
    #: The table whose folder a cut-off rename moved, and the name it moved the folder to.
    move_back: tuple[TableFolder, TableFolder] | None
    #: Folders no table uses.
    remove: list[str]


def plan_folder_repair(model: str, tables: Sequence[TableFolder]) -> FolderRepair:
    """What to do with the folders of a model's tables. A registered table without its folder
    lost it to a cut-off rename, whose target folder is then the only one no table uses (a run
    makes one statement at a time and repairs before its first); otherwise which folder is whose
    cannot be told, and nothing is touched."""
    moved = [t for t in tables if t.registered and not t.exists]
    unused = [t for t in tables if not t.registered and t.exists]
    if not moved:
        return FolderRepair(None, [t.folder for t in unused])
    if len(moved) == 1 and len(unused) == 1:
        return FolderRepair((moved[0], unused[0]), [])
    if not unused:  # a folder removed by hand: not a cut-off statement's, and nothing to put back
        return FolderRepair(None, [])
    raise PublishError(
        f"Model '{model}': the tables {', '.join(t.name for t in moved)} have no folder and the folders "
        f"{', '.join(t.folder for t in unused)} belong to no table; which rows are whose cannot be told. "
        "Move each table's folder back by hand (or delete the folders and the tables, then run with "
        "--full-refresh). Nothing was published."
    )

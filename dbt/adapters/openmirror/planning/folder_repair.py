"""What to do with the folders of a model's tables that a run killed inside a statement left out
of step with the catalog (run/folder_repair.py says how they are found)."""

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from dbt.adapters.openmirror.errors import PublishError


@dataclass(frozen=True)
class TableFolder:
    """One of a run's tables out of step with its folder: registered with its folder gone, or a
    folder at its name's place that no table uses."""

    name: str
    folder: str
    registered: bool


@dataclass(frozen=True)
class FolderRepair:
    #: Each registered table whose folder a rename cut off halfway moved, with where it went.
    move_back: list[tuple[TableFolder, TableFolder]]
    #: Folders no table uses.
    remove: list[str]


def plan_folder_repair(model: str, tables: Sequence[TableFolder], renames: Collection[tuple[str, str]]) -> FolderRepair:
    """A registered table without its folder lost it to a rename cut off halfway: the folder goes
    back from the one name the run renames that table to (`renames`) whose folder no table uses.
    Every other folder no table uses is left by a create or a drop cut off halfway, and removed.
    A table whose folder is nowhere was not moved by us (removed by hand): it is left alone."""
    unused = {t.name: t for t in tables if not t.registered}
    move_back = []
    for table in (t for t in tables if t.registered):
        went = [unused[to] for source, to in renames if source == table.name and to in unused]
        if len(went) > 1:
            raise PublishError(
                f"Model '{model}': the folder of table {table.name} is gone and each of "
                f"{', '.join(t.folder for t in went)} may hold its rows; which one cannot be told. Move the "
                "right one back to its folder by hand and delete the others. Nothing was published."
            )
        if went:
            move_back.append((table, unused.pop(went[0].name)))
    return FolderRepair(move_back, [t.folder for t in unused.values()])

"""A model's table folders put back in step with the catalog after a run was killed inside a
statement that changes them.

On the Hive metastore (what a `method: session` profile gets) a managed table's folder and its
catalog entry change in two steps, and a run killed in between (or on a machine lost) leaves
them apart:
- `create table T ... as select` writes T's folder, then registers T; `drop table T` unregisters
  T, then deletes its folder. Either leaves a folder no table uses, and every later create of T,
  or rename to T, fails (LOCATION_ALREADY_EXISTS), `--full-refresh` too.
- `alter table A rename to B` moves A's folder to B's, then renames A's entry. A is still
  registered, with no folder (Spark reads it as empty), and its rows are in B's folder.
So before a run reads or writes its tables (a publishing run under its lease), the folder a
cut-off rename moved goes back to its table, and any other folder of the run's tables that no
table uses is removed: the catalog says which statements happened. Over Thrift the warehouse is
the server's, out of dbt's reach: nothing is repaired there.
"""

from collections.abc import Callable, Sequence
from typing import Any

from dbt.adapters.openmirror.planning.folder_repair import TableFolder, plan_folder_repair
from dbt.adapters.openmirror.run.statements import Catalog
from dbt.adapters.openmirror.spark.table_folders import TableFolders


def survey(folders: TableFolders, catalog: Catalog, relations: Sequence[Any]) -> list[TableFolder]:
    """The folders of `relations` (one schema's). dbt's relation cache (just refreshed) and one
    listing of the schema's folder settle the usual case, where every table has its folder and
    no other folder is there; the catalog itself is asked only about the names that differ."""
    schema = folders.schema_folders(relations[0].schema)
    if schema is None:
        return []
    surveyed = []
    for relation in relations:
        name = relation.identifier.lower()
        default = schema.default(name)
        cached = catalog.find(relation)
        is_table, has_folder = cached is not None and cached.type == "table", name in schema.names
        if is_table == has_folder:
            if is_table:
                surveyed.append(TableFolder(name, default, True, True))
            continue
        table = folders.registered(relation)
        if table is None or table.folder != default:
            if has_folder:  # no table uses the folder of this name
                surveyed.append(TableFolder(name, default, False, True))
            if table is not None and table.managed and not folders.exists(table.folder):
                surveyed.append(TableFolder(name, table.folder, True, False))
        elif table.managed and not has_folder:
            surveyed.append(TableFolder(name, default, True, False))
    return surveyed


def repair_table_folders(
    folders: TableFolders, catalog: Catalog, model: str, relations: Sequence[Any], warn: Callable[[str], None]
) -> None:
    """Put the folders of `relations` (one schema's) back in step with the catalog, saying what
    was done."""
    repair = plan_folder_repair(model, survey(folders, catalog, relations))
    if repair.move_back is not None:
        table, moved_to = repair.move_back
        [relation] = [r for r in relations if r.identifier.lower() == table.name]
        folders.move(moved_to.folder, table.folder, relation)
        warn(
            f"Model '{model}': a run stopped inside a rename of {relation} and left its rows in "
            f"{moved_to.folder}; they are back in its folder"
        )
    for folder in repair.remove:
        folders.remove(folder)
        warn(f"Model '{model}': removed {folder}, which no table uses (left by a run stopped inside a statement)")

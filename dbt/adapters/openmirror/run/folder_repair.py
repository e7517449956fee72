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
the server's, out of dbt's reach, and on stores whose folder renames are not atomic a cut-off
rename leaves both folders partly filled: nothing is repaired there.
"""

from collections.abc import Callable, Sequence
from typing import Any

from dbt.adapters.openmirror.errors import PublishError
from dbt.adapters.openmirror.planning.folder_repair import TableFolder, plan_folder_repair
from dbt.adapters.openmirror.run.relations import RunRelations
from dbt.adapters.openmirror.run.statements import Catalog
from dbt.adapters.openmirror.spark.table_folders import TableFolders


def survey(folders: TableFolders, catalog: Catalog, relations: Sequence[Any]) -> list[TableFolder]:
    """The tables of `relations` (one schema's) out of step with their folders. dbt's relation
    cache (just refreshed) and one listing of the schema's folder settle the usual case, where a
    table has its folder and no other folder is there; the catalog is asked only about a name
    that differs."""
    schema = folders.schema_folders(relations[0].schema)
    if schema is None:
        return []
    surveyed = []
    for relation in relations:
        name, cached = relation.identifier, catalog.find(relation)
        is_table, has_folder = cached is not None and cached.type == "table", name in schema.names
        if is_table == has_folder:  # a table with its folder, or neither
            continue
        default, table = schema.default(name), folders.registered(relation)
        if has_folder and (table is None or table.folder != default):
            surveyed.append(TableFolder(name, default, registered=False))
        if table is not None and table.managed:
            exists = has_folder if table.folder == default else folders.exists(table.folder)
            if not exists:
                surveyed.append(TableFolder(name, table.folder, registered=True))
    return surveyed


def repair_table_folders(
    folders: TableFolders,
    catalog: Catalog,
    model: str,
    relations: RunRelations,
    warn: Callable[[str], None],
    inform: Callable[[str], None],
) -> None:
    """Put the folders of the tables a run writes back in step with the catalog, saying what was
    done: rows moved back to their table are warned about; a folder no table uses is removed
    with a message only (a statement that merely failed leaves one too: Spark does not remove
    what a failed `create table ... as select` wrote)."""
    written, read_only = relations.written(), relations.read_only()
    out_of_step = survey(folders, catalog, [*written, *read_only])
    read_only_names = {r.identifier for r in read_only}
    unreadable = [t.name for t in out_of_step if t.registered and t.name in read_only_names]
    if unreadable:
        raise PublishError(
            f"Model '{model}': table {', '.join(unreadable)} has no folder and reads as empty: a run stopped "
            "inside a rename of it (the next `dbt run` of the model puts the folder back) or the folder was "
            "deleted (then run the model with --full-refresh). A dry run or --empty holds no lease and "
            "repairs only its own tables. Nothing was checked."
        )
    renames = [(source.identifier, to.identifier) for source, to in relations.renamed()]
    own = {r.identifier: r for r in written}
    repair = plan_folder_repair(model, [t for t in out_of_step if t.name in own], renames)
    for table, moved_to in repair.move_back:
        relation = own[table.name]
        folders.move(moved_to.folder, table.folder, relation)
        warn(
            f"Model '{model}': a run stopped inside a rename of {relation} and left its rows in "
            f"{moved_to.folder}; they are back in its folder"
        )
    for folder in repair.remove:
        folders.remove(folder)
        inform(
            f"Model '{model}': removed {folder}, which no table uses (left by a statement that failed or was stopped)"
        )

"""The repair of a model's table folders (run/folder_repair.py) over a metastore and file system
kept in memory: each case leaves the warehouse the way a statement killed halfway leaves it
(tests/support/halfway_statements.py does it on real Spark), and the repair must bring every
table back to its own rows, remove what no table uses and touch nothing else."""

from dataclasses import dataclass, field

import pytest

from dbt.adapters.openmirror.errors import PublishError
from dbt.adapters.openmirror.planning.folder_repair import TableFolder, plan_folder_repair
from dbt.adapters.openmirror.run.folder_repair import repair_table_folders
from dbt.adapters.openmirror.run.relations import RunRelations
from dbt.adapters.openmirror.spark.table_folders import RegisteredTable, SchemaFolders
from tests.support.fake_warehouse import FakeRelation

SCHEMA = "file:/warehouse/analytics.db"


@dataclass
class Metastore:
    """Tables by name (kind 'managed', 'external' or 'view', and folder) and folders with their
    rows, as the Hive metastore and the file system keep them; `TableFolders` and the relation
    cache's `find` over them, recording what the repair asked."""

    tables: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    folders: dict[str, str] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)

    def create(self, name: str, rows: str) -> None:
        self.tables[name] = ("managed", f"{SCHEMA}/{name}")
        self.folders[f"{SCHEMA}/{name}"] = rows

    # -- TableFolders --

    def schema_folders(self, schema: str) -> SchemaFolders:
        names = frozenset(f.rsplit("/", 1)[1] for f in self.folders if f.rsplit("/", 1)[0] == SCHEMA)
        return SchemaFolders(SCHEMA, names)

    def registered(self, relation) -> RegisteredTable | None:
        self.asked.append(relation.identifier)
        kind, folder = self.tables.get(relation.identifier, ("view", None))
        return None if kind == "view" or folder is None else RegisteredTable(folder, kind == "managed")

    def exists(self, folder: str) -> bool:
        return folder in self.folders

    def move(self, folder: str, to: str, relation) -> None:
        assert to not in self.folders
        self.folders[to] = self.folders.pop(folder)

    def remove(self, folder: str) -> None:
        del self.folders[folder]

    # -- the relation cache --

    def find(self, relation):
        kind, _ = self.tables.get(relation.identifier, (None, None))
        if kind is None:
            return None
        return relation.incorporate(type="view" if kind == "view" else "table")


def _repair(metastore: Metastore, publishes: bool = True) -> list[str]:
    said: list[str] = []
    relations = RunRelations.of(FakeRelation("analytics", "orders"), publishes)
    repair_table_folders(metastore, metastore, "orders", relations, lambda m: said.append(f"warning: {m}"), said.append)
    return said


@pytest.fixture
def published() -> Metastore:
    """A published snapshot, its key hashes, and another model's table beside them."""
    metastore = Metastore()
    metastore.create("orders", "snapshot rows")
    metastore.create("orders__om_hashes", "key hashes")
    metastore.create("customers", "another model's rows")
    return metastore


def test_in_step_folders_are_settled_without_asking_the_catalog(published):
    before = (dict(published.tables), dict(published.folders))
    assert _repair(published) == []
    assert (published.tables, published.folders) == before and published.asked == []


@pytest.mark.parametrize("name", ["orders__om_new", "orders__om_changes", "orders__om_overlay_b", "orders__dbt_backup"])
def test_a_folder_left_by_a_create_cut_off_halfway_is_removed(published, name):
    published.folders[f"{SCHEMA}/{name}"] = "_temporary/part-00000"
    [message] = _repair(published)
    assert f"{SCHEMA}/{name}" not in published.folders
    assert message.startswith(f"Model 'orders': removed {SCHEMA}/{name}, which no table uses")


def test_a_folder_left_by_a_drop_cut_off_halfway_is_removed(published):
    published.create("orders__om_base", "old base")
    del published.tables["orders__om_base"]
    _repair(published)
    assert f"{SCHEMA}/orders__om_base" not in published.folders and "orders" in published.tables


@pytest.mark.parametrize(
    "name, to",
    [
        ("orders", "orders__om_base"),
        ("orders", "orders__dbt_backup"),
        ("orders__om_hashes", "orders__om_audit_base_hashes"),
    ],
)
def test_a_folder_a_rename_cut_off_halfway_moved_goes_back_to_its_table(published, name, to):
    rows = published.folders.pop(f"{SCHEMA}/{name}")
    published.folders[f"{SCHEMA}/{to}"] = rows
    [warning] = _repair(published)
    assert published.folders[f"{SCHEMA}/{name}"] == rows and f"{SCHEMA}/{to}" not in published.folders
    assert f"stopped inside a rename of analytics.{name} and left its rows in {SCHEMA}/{to}" in warning
    assert warning.startswith("warning: "), "rows moved back are warned about"


def test_the_folder_of_an_overlaid_snapshots_name_is_no_table_s(published):
    # `orders` is the view of an overlaid snapshot: a folder of that name is no view's.
    rows = published.folders.pop(f"{SCHEMA}/orders")
    published.tables["orders"] = ("view", None)
    published.create("orders__om_base", rows)
    published.folders[f"{SCHEMA}/orders"] = "_temporary/part-00000"
    _repair(published)
    assert f"{SCHEMA}/orders" not in published.folders and published.folders[f"{SCHEMA}/orders__om_base"] == rows


def test_folders_of_other_tables_and_of_other_runs_are_not_touched(published):
    published.folders[f"{SCHEMA}/orders__om_check_new"] = "a dry run's"
    published.folders[f"{SCHEMA}/orders_2"] = "someone's"
    del published.tables["customers"]  # not a table of this model
    before = dict(published.folders)
    assert _repair(published) == [] and published.folders == before
    # A dry run repairs its own tables only.
    _repair(published, publishes=False)
    assert set(before) - set(published.folders) == {f"{SCHEMA}/orders__om_check_new"}


def test_a_run_without_a_lease_refuses_a_snapshot_table_it_may_not_repair(published):
    rows = published.folders.pop(f"{SCHEMA}/orders")
    published.folders[f"{SCHEMA}/orders__om_base"] = rows
    before = dict(published.folders)
    with pytest.raises(
        PublishError,
        match="Model 'orders': table orders has no folder and reads as empty: a run stopped inside a rename",
    ):
        _repair(published, publishes=False)
    assert published.folders == before
    # A folder no table uses at a snapshot table's name does not stop it: the publishing run removes it.
    published.folders[f"{SCHEMA}/orders"] = rows
    published.folders[f"{SCHEMA}/orders__om_base"] = "_temporary/part-00000"
    assert _repair(published, publishes=False) == [] and f"{SCHEMA}/orders__om_base" in published.folders


def test_an_external_table_elsewhere_and_a_folder_removed_by_hand_are_left_alone(published):
    published.tables["orders__om_base"] = ("external", "file:/elsewhere/base")
    published.folders["file:/elsewhere/base"] = "base rows"
    del published.folders[f"{SCHEMA}/orders__om_hashes"]  # no cut-off statement did this
    before = dict(published.folders)
    assert _repair(published) == [] and published.folders == before


def test_a_folder_goes_back_only_from_where_the_run_renames_that_table_to(published):
    # The snapshot's folder removed by hand, and a create of the new output cut off after its
    # commit: those rows are not the snapshot's.
    del published.folders[f"{SCHEMA}/orders"]
    published.folders[f"{SCHEMA}/orders__om_new"] = "the new output's rows"
    [warning] = _repair(published)
    assert "removed" in warning and f"{SCHEMA}/orders" not in published.folders


def test_folders_whose_table_cannot_be_told_are_refused_untouched(published):
    rows = published.folders.pop(f"{SCHEMA}/orders")
    published.folders[f"{SCHEMA}/orders__om_base"] = rows
    published.folders[f"{SCHEMA}/orders__dbt_backup"] = "_temporary/part-00000"
    before = dict(published.folders)
    with pytest.raises(PublishError) as refused:
        _repair(published)
    assert published.folders == before
    message = str(refused.value)
    assert "Model 'orders': the folder of table orders is gone and each of" in message
    assert f"{SCHEMA}/orders__om_base" in message and f"{SCHEMA}/orders__dbt_backup" in message


def test_a_folder_spelled_otherwise_is_not_one_of_the_models(published):
    published.folders[f"{SCHEMA}/Orders__om_new"] = "someone's"
    before = dict(published.folders)
    assert _repair(published) == [] and published.folders == before


@pytest.mark.parametrize(
    "tables, decided",
    [
        ([], ([], [])),
        ([TableFolder("a", "f/a", registered=False)], ([], ["f/a"])),
        ([TableFolder("a", "f/a", registered=True)], ([], [])),
        ([TableFolder("a", "f/a", registered=True), TableFolder("b", "f/b", registered=False)], ([("a", "b")], [])),
        ([TableFolder("b", "f/b", registered=True), TableFolder("a", "f/a", registered=False)], ([], ["f/a"])),
        ([TableFolder("a", "f/a", registered=True), TableFolder("c", "f/c", registered=False)], ([], ["f/c"])),
    ],
)
def test_the_decision(tables, decided):
    repair = plan_folder_repair("m", tables, [("a", "b")])
    assert ([(t.name, to.name) for t, to in repair.move_back], repair.remove) == decided

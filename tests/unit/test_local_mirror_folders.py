"""The local mirror and a table folder's life: clean-up of processed files, deleted and recreated
folders, and repairs as the documentation describes them."""

import shutil

import pytest

from dbt.adapters.openmirror.errors import LandingZoneConfigError
from dbt.adapters.openmirror.storage import LocalStorage
from dbt.adapters.openmirror.tools.local_mirror.replay import LocalMirror
from tests.support.landing_zones import declare, parquet, rows


def two_files(folder):
    declare(folder, ["id"])
    parquet(folder, 1, {"id": [1, 2], "v": ["a", "b"]})
    parquet(folder, 2, {"id": [2], "v": ["b2"]}, [1])


@pytest.mark.parametrize("clean_up", ["to FilesReadyToDelete", "purged", "folder removed with a file left"])
def test_clean_up_of_processed_files_never_changes_the_table(lz, mirror, clean_up):
    folder = lz / "t"
    two_files(folder)
    mirror.replay()
    processed = folder / "_ProcessedFiles"
    if clean_up == "to FilesReadyToDelete":
        processed.rename(folder / "_FilesReadyToDelete")
    elif clean_up == "purged":
        for path in processed.iterdir():
            path.unlink()
    else:  # the service's clean-up keeps the last file in place and removes the folder
        (processed / f"{2:020d}.parquet").rename(folder / "_FilesReadyToDelete")
        shutil.rmtree(processed)
    [status] = mirror.replay()
    assert (status.status, status.lastAppliedFile) == ("Replicating", 2)
    assert rows(mirror.target, "dbo", "t") == [{"id": 1, "v": "a"}, {"id": 2, "v": "b2"}]
    parquet(folder, 3, {"id": [3], "v": ["c"]}, [0])
    [status] = mirror.replay()
    assert status.lastAppliedFile == 3 and len(rows(mirror.target, "dbo", "t")) == 3


def test_a_deleted_folder_drops_the_table_and_its_status(lz, mirror):
    two_files(lz / "s.schema" / "t")
    declare(lz / "other", ["id"])
    parquet(lz / "other", 1, {"id": [1]})
    mirror.replay()
    shutil.rmtree(lz / "s.schema" / "t")
    statuses = mirror.replay()
    assert [(s.sourceSchemaName, s.sourceTableName) for s in statuses] == [("dbo", "other")]
    assert not (mirror.target / "s" / "t").exists()
    assert list(mirror.read_status()) == [("dbo", "other")]


def test_a_recreated_folder_is_rebuilt_from_its_new_files(lz, mirror):
    two_files(lz / "t")
    mirror.replay()
    shutil.rmtree(lz / "t")
    declare(lz / "t", ["id"])
    parquet(lz / "t", 1, {"id": [7], "v": ["new"]})
    [status] = mirror.replay()
    assert rows(mirror.target, "dbo", "t") == [{"id": 7, "v": "new"}]
    assert (status.status, status.lastAppliedFile, status.metrics["processedRows"]) == ("Replicating", 1, 1)
    assert sorted(p.name for p in (lz / "t" / "_ProcessedFiles").iterdir()) == [f"{1:020d}.parquet"]


def test_a_folder_recreated_with_the_same_first_file_number_is_not_taken_for_a_crash(lz, mirror):
    declare(lz / "t", ["id"])
    parquet(lz / "t", 1, {"id": [1], "v": ["old"]})
    mirror.replay()
    shutil.rmtree(lz / "t")
    declare(lz / "t", ["id"])
    parquet(lz / "t", 1, {"id": [1, 2], "v": ["new", "new"]})
    mirror.replay()
    assert rows(mirror.target, "dbo", "t") == [{"id": 1, "v": "new"}, {"id": 2, "v": "new"}]


def test_a_folder_recreated_with_metadata_only_is_rebuilt_when_its_files_come(lz, mirror):
    two_files(lz / "t")
    mirror.replay()
    shutil.rmtree(lz / "t")
    declare(lz / "t", ["id"])
    mirror.replay()
    parquet(lz / "t", 1, {"id": [9], "v": ["z"]})
    mirror.replay()
    assert rows(mirror.target, "dbo", "t") == [{"id": 9, "v": "z"}]


def test_a_number_written_again_into_the_same_folder_stops_the_table(lz, mirror):
    two_files(lz / "t")
    mirror.replay()
    parquet(lz / "t", 2, {"id": [5], "v": ["x"]}, [0])
    [status] = mirror.replay()
    assert status.errorCode == "FileNumberReused" and f"{2:020d}.parquet was written again" in status.errorMessage
    assert rows(mirror.target, "dbo", "t") == [{"id": 1, "v": "a"}, {"id": 2, "v": "b2"}]


@pytest.mark.parametrize("broken", [b"", b"not parquet"])
def test_a_failed_file_replaced_under_the_same_name_lets_the_table_go_on(lz, mirror, broken):
    declare(lz / "t", ["id"])
    parquet(lz / "t", 1, {"id": [1]})
    (lz / "t" / f"{2:020d}.parquet").write_bytes(broken)
    parquet(lz / "t", 3, {"id": [3]}, [0])
    [status] = mirror.replay()
    assert (status.status, status.errorCode, status.lastAppliedFile) == ("Error", "InvalidFile", 1)
    assert status.errorMessage.startswith(f"{2:020d}.parquet ") and "same name" in status.errorMessage
    [status] = mirror.replay()  # still broken: still in error, nothing skipped
    assert status.errorCode == "InvalidFile"
    (lz / "t" / f"{2:020d}.parquet").unlink()
    parquet(lz / "t", 2, {"id": [2]}, [0])
    [status] = mirror.replay()
    assert (status.status, status.lastAppliedFile) == ("Replicating", 3)
    assert rows(mirror.target, "dbo", "t") == [{"id": 1}, {"id": 2}, {"id": 3}]


def test_a_type_change_stops_until_the_file_is_replaced(lz, mirror):
    declare(lz / "t", ["id"])
    parquet(lz / "t", 1, {"id": [1], "v": [1]})
    parquet(lz / "t", 2, {"id": [2], "v": ["two"]}, [0])
    [status] = mirror.replay()
    assert status.errorCode == "ColumnTypeChanged" and "v: long -> string" in status.errorMessage
    parquet(lz / "t", 2, {"id": [2], "v": [2]}, [0])
    [status] = mirror.replay()
    assert status.status == "Replicating" and rows(mirror.target, "dbo", "t") == [{"id": 1, "v": 1}, {"id": 2, "v": 2}]


def test_a_fixed_metadata_file_lets_the_table_go_on(lz, mirror):
    folder = lz / "t"
    folder.mkdir()
    (folder / "_metadata.json").write_text("{keyColumns: ['id']}")
    parquet(folder, 1, {"id": [1]})
    [status] = mirror.replay()
    assert status.errorCode == "InvalidMetadata" and "_metadata.json: not valid JSON" in status.errorMessage
    declare(folder, ["id"])
    [status] = mirror.replay()
    assert (status.status, status.keyColumns) == ("Replicating", ["id"])
    assert rows(mirror.target, "dbo", "t") == [{"id": 1}]


def test_a_table_folder_lists_from_the_first_poll_that_sees_it(lz, mirror):
    declare(lz / "t", ["id"])
    [status] = mirror.replay()
    assert (status.sourceSchemaName, status.sourceTableName, status.status) == ("dbo", "t", "NotStarted")
    parquet(lz / "t", 2, {"id": [2]}, [0])
    [status] = mirror.replay()
    assert status.status == "WaitingForFile" and f"waiting for {1:020d}.parquet" in status.errorMessage
    assert status.pendingFiles == [f"{2:020d}.parquet"]


def test_a_missing_landing_zone_is_refused_and_drops_nothing(lz, tmp_path, mirror):
    two_files(lz / "t")
    mirror.replay()
    lz.rename(tmp_path / "elsewhere")
    with pytest.raises(Exception, match="does not exist"):
        mirror.replay()
    assert rows(mirror.target, "dbo", "t") == [{"id": 1, "v": "a"}, {"id": 2, "v": "b2"}]
    assert list(mirror.read_status()) == [("dbo", "t")]


class DeletedBeforeTheMove(LocalStorage):
    """A landing zone whose table folder a publisher deletes just as the mirror moves a file."""

    def rename_create_only(self, source, target):
        shutil.rmtree(self.root / source.split("/")[0], ignore_errors=True)
        super().rename_create_only(source, target)


def test_a_folder_deleted_during_a_poll_leaves_nothing_that_passes_for_its_past(lz, tmp_path):
    two_files(lz / "t")
    [status] = LocalMirror(DeletedBeforeTheMove(lz), tmp_path / "mirror").replay()
    assert status.errorCode == "TableFolderDeleted"
    assert not (lz / "t" / "_ProcessedFiles").exists()
    mirror = LocalMirror(LocalStorage(lz), tmp_path / "mirror")
    assert mirror.replay() == [] and not (tmp_path / "mirror" / "dbo" / "t").exists()
    declare(lz / "t", ["id"])
    parquet(lz / "t", 1, {"id": [3], "v": ["c"]})
    [status] = mirror.replay()
    assert status.status == "Replicating" and rows(mirror.target, "dbo", "t") == [{"id": 3, "v": "c"}]


# -- folder names and delta-rs: delta-rs takes a local path for a URL ----------------------------


def siblings_and(lz, name):
    """`base` and `a b`, the tables a percent-decoded name could reach, and a folder `name`."""
    for table, ids in (("base", [1, 2]), ("a b", [3]), (name, [100])):
        declare(lz / "s.schema" / table, ["id"])
        parquet(lz / "s.schema" / table, 1, {"id": ids})


def delta_tables(target):
    return sorted(str(log.parent.relative_to(target)) for log in target.rglob("_delta_log"))


@pytest.mark.parametrize(
    "name, refused",
    [
        ("%62ase", "'%'"),  # would be applied to `base`
        ("%2E%2E", "'%'"),  # would read the target's own root
        ("%2F", "'%'"),
        ("%25", "'%'"),
        ("%2525", "'%'"),
        ("a%20b", "'%'"),
        ("%", "'%'"),
        ("#x", "'#'"),  # delta-rs cuts the path there: the table's history reads empty
        ("[z]", "'['"),  # delta-rs panics
        ("a^b", "'^'"),
    ],
)
def test_a_folder_name_delta_rs_would_misread_stops_only_its_table(lz, mirror, name, refused):
    siblings_and(lz, name)
    for _ in range(2):  # a table in error is tried again at the next poll
        statuses = {s.sourceTableName: s for s in mirror.replay()}
        assert (statuses[name].status, statuses[name].errorCode) == ("Error", "InvalidFolderName")
        assert refused in statuses[name].errorMessage and repr(name) in statuses[name].errorMessage
        assert statuses["base"].status == statuses["a b"].status == "Replicating"
        assert rows(mirror.target, "s", "base") == [{"id": 1}, {"id": 2}]
        assert rows(mirror.target, "s", "a b") == [{"id": 3}]
        assert delta_tables(mirror.target) == ["s/a b", "s/base"]


@pytest.mark.parametrize("name", ["x y", "ünï", "{a}", "c;d", "+@&='~`", "naïve-ключ", "a,b(c)"])
def test_any_other_folder_name_is_its_own_table_with_its_history(lz, mirror, name):
    siblings_and(lz, name)
    mirror.replay()
    parquet(lz / "s.schema" / name, 2, {"id": [100]}, [2])  # a delete: applied only after file 1
    statuses = {s.sourceTableName: s for s in mirror.replay()}
    assert (statuses[name].status, statuses[name].lastAppliedFile) == ("Replicating", 2)
    assert rows(mirror.target, "s", name) == [] and rows(mirror.target, "s", "base") == [{"id": 1}, {"id": 2}]
    assert delta_tables(mirror.target) == sorted(["s/a b", "s/base", f"s/{name}"])


def test_a_target_delta_rs_would_misread_stops_every_table_before_writing(lz, tmp_path):
    declare(lz / "t", ["id"])
    parquet(lz / "t", 1, {"id": [1]})
    target = tmp_path / "mirror#1"
    [status] = LocalMirror(LocalStorage(lz), target).replay()
    assert (status.status, status.errorCode) == ("Error", "InvalidFolderName")
    assert str(target) in status.errorMessage and "'#'" in status.errorMessage
    assert delta_tables(target) == [] and (lz / "t" / f"{1:020d}.parquet").exists()


@pytest.mark.parametrize(
    "first, second, tables",
    [
        ("t", "dbo.schema/t", [("dbo", "t")]),  # no schema folder is dbo
        ("Sales.schema/Orders", "sales.schema/orders", [("Sales", "Orders"), ("sales", "orders")]),
        ("s.schema/Caf\u00e9", "s.schema/Cafe\u0301", [("s", "Caf\u00e9"), ("s", "Cafe\u0301")]),  # NFC and NFD
    ],
)
def test_two_folders_that_feed_one_table_stop_it_until_one_is_gone(lz, mirror, first, second, tables):
    declare(lz / first, ["id"])
    parquet(lz / first, 1, {"id": [1, 2], "v": ["a", "b"]})
    [status] = mirror.replay()
    assert status.status == "Replicating"
    declare(lz / second, ["id"])
    parquet(lz / second, 1, {"id": [10], "v": ["other"]})
    parquet(lz / first, 2, {"id": [3], "v": ["c"]}, [0])
    for _ in range(2):  # stopped at every poll while both are there
        statuses = mirror.replay()
        assert [(s.sourceSchemaName, s.sourceTableName) for s in statuses] == sorted(tables)
        for stopped in statuses:
            assert (stopped.status, stopped.errorCode) == ("Error", "TableFolderConflict"), stopped
            assert first in stopped.errorMessage and second in stopped.errorMessage
        # Nothing of either folder applied, nothing moved.
        assert rows(mirror.target, *table_of(first)) == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
        assert (lz / first / f"{2:020d}.parquet").exists() and (lz / second / f"{1:020d}.parquet").exists()
    shutil.rmtree(lz / second)
    [status] = mirror.replay()
    assert (status.status, status.lastAppliedFile) == ("Replicating", 2)
    assert rows(mirror.target, *table_of(first)) == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}, {"id": 3, "v": "c"}]


def table_of(folder):
    schema, _, table = folder.rpartition("/")
    return (schema.removesuffix(".schema") or "dbo"), table


def test_a_file_linked_from_outside_stops_its_table_with_a_plain_message(lz, mirror, tmp_path):
    declare(lz / "t", ["id"])
    parquet(lz / "t", 1, {"id": [1]})
    parquet(tmp_path, "outside.parquet", {"id": [2]}, [0])
    (lz / "t" / f"{2:020d}.parquet").symlink_to(tmp_path / "outside.parquet")
    [status] = mirror.replay()
    assert (status.status, status.errorCode) == ("Error", "ReplayFailed")
    assert status.errorMessage.startswith(f"{lz / 't' / f'{2:020d}.parquet'} leads out of the landing zone"), status
    assert delta_tables(mirror.target) == [] and (lz / "t" / f"{1:020d}.parquet").exists()


def test_a_target_mirrors_one_landing_zone(lz, mirror, tmp_path):
    # Another landing zone replayed into it took its tables for deleted folders and dropped them,
    # and its files, moved to _ProcessedFiles/ by then, could not bring them back.
    two_files(lz / "t")
    mirror.replay()
    other = tmp_path / "other"
    declare(other / "u", ["id"])
    parquet(other / "u", 1, {"id": [7]})
    with pytest.raises(LandingZoneConfigError) as refused:
        LocalMirror(LocalStorage(other), mirror.target).replay()
    assert f"mirrors the landing zone {lz}, not {other}" in refused.value.msg
    assert delta_tables(mirror.target) == ["dbo/t"] and (other / "u" / f"{1:020d}.parquet").exists()
    assert [s.lastAppliedFile for s in mirror.replay()] == [2]


def test_a_target_written_before_it_recorded_its_landing_zone_is_taken_as_this_ones(lz, mirror):
    two_files(lz / "t")
    mirror.replay()
    (mirror.target / ".landing_zone").unlink()
    parquet(lz / "t", 3, {"id": [3], "v": ["c"]}, [0])
    [status] = mirror.replay()
    assert status.lastAppliedFile == 3 and (mirror.target / ".landing_zone").read_text() == str(lz)

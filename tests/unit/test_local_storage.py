"""The local landing-zone backend's listing with times, existence, the status files beside an
item's Files/LandingZone (e.g. a OneLake item mounted as a folder), and folder deletes that are
whole or nothing."""

import errno
import os

import pytest

from dbt.adapters.openmirror.errors import LandingZoneAccessError, LandingZoneConfigError
from dbt.adapters.openmirror.rules.landing_zone import RUN_ID_PATTERN, STAGING_ROOT
from dbt.adapters.openmirror.storage import LocalStorage
from tests.support.killed_midway import Killed, killed_after_unlinks
from tests.support.unwritable import unwritable


def test_listing_with_sizes_and_times(tmp_path):
    (tmp_path / "t" / "sub").mkdir(parents=True)
    (tmp_path / "t" / "a.json").write_text("{}")
    os.utime(tmp_path / "t" / "a.json", (1000.5, 1000.5))
    storage = LocalStorage(tmp_path)
    files = storage.list_files("t")
    assert [(f.name, f.is_folder) for f in files] == [("a.json", False), ("sub", True)]
    assert (files[0].size, files[0].last_modified) == (2, 1000.5)
    assert storage.list_files("missing") == [] and storage.list_files("t/a.json") == []
    assert storage.exists("") and storage.exists("t/a.json") and not storage.exists("missing")
    assert not LocalStorage(tmp_path / "missing").exists("")


def test_monitoring_files_only_beside_an_items_landing_zone(tmp_path):
    item = LocalStorage(tmp_path / "item" / "Files" / "LandingZone")
    assert item.write_monitoring("tables.json", '{"tables": []}\n')
    assert item.write_monitoring("tables.json", '{"tables": [1]}\n')
    assert sorted(p.name for p in (tmp_path / "item" / "Files" / "Monitoring").iterdir()) == ["tables.json"]
    assert item.read_monitoring("tables.json") == '{"tables": [1]}\n'
    assert not LocalStorage(tmp_path / "plain").write_monitoring("tables.json", "{}")
    assert not (tmp_path / "Monitoring").exists()


def test_a_folder_the_user_cannot_write_is_named_with_the_fix(tmp_path):
    storage = LocalStorage(tmp_path)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "_metadata.json").write_text("{}")
    with unwritable(tmp_path / "t"):
        for attempt in (
            lambda: storage.write_text("t/1.json", "{}", create_only=True),
            lambda: storage.write_text_if("t/_metadata.json", "[]", expected=None),
            lambda: storage.delete_file("t/_metadata.json"),
            lambda: storage.create_folder("t/sub"),
        ):
            with pytest.raises(LandingZoneAccessError) as refused:
                attempt()
            message = str(refused.value)
            assert str(tmp_path / "t") in message and "write access" in message
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["_metadata.json"]


def _files(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_a_folder_delete_killed_midway_leaves_the_folder_whole_or_gone(tmp_path, monkeypatch):
    table = tmp_path / "s.schema" / "t"
    table.mkdir(parents=True)
    names = ["_dbt_openmirror.json", "_metadata.json", *(f"{n:020d}.parquet" for n in range(1, 7))]
    for name in names:
        (table / name).write_text(name)
    (tmp_path / "s.schema" / "other").mkdir()
    (tmp_path / "s.schema" / "other" / "_metadata.json").write_text("{}")
    storage = LocalStorage(tmp_path)

    killed_after_unlinks(monkeypatch, 3)
    with pytest.raises(Killed):
        storage.delete_folder("s.schema/t")
    monkeypatch.undo()

    # Never some of the table's files without its journal and metadata: the rest of what is left
    # lies in _scratchPad/, which the mirror ignores...
    other = ["s.schema/other/_metadata.json"]
    outside_scratch_pad = [f for f in _files(tmp_path) if not f.startswith("_scratchPad/")]
    assert outside_scratch_pad in (sorted(other + [f"s.schema/t/{name}" for name in names]), other)
    # ...and under a name no run id can take (discarding or publishing that run would touch it).
    assert not any(RUN_ID_PATTERN.fullmatch(name) for name in storage.list_names(STAGING_ROOT))
    # The next delete (here of a folder that is already gone) sweeps what the killed one left.
    storage.delete_folder("s.schema/gone")
    assert _files(tmp_path) == other


def test_deleting_an_empty_folder_creates_nothing_elsewhere(tmp_path):
    """`dbt debug`'s write probe and the local mirror's emptied processed folders leave no trace."""
    storage = LocalStorage(tmp_path)
    storage.check_writable("_dbt-openmirror-debug-1")
    (tmp_path / "t" / "_ProcessedFiles").mkdir(parents=True)
    storage.delete_folder("t/_ProcessedFiles")
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["t"]


def test_a_folder_that_cannot_be_renamed_aside_is_deleted_file_by_file(tmp_path, monkeypatch):
    """The staging folder on another device (a symlink or mount), or a share that refuses folder
    renames: the delete goes on as before."""
    storage = LocalStorage(tmp_path)
    storage.write_text("s.schema/t/00000000000000000001.parquet", "x", create_only=True)

    def refuse(source, target):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "rename", refuse)
    storage.delete_folder("s.schema/t")
    assert not (tmp_path / "s.schema" / "t").exists()


def test_nothing_is_read_written_or_moved_through_a_symbolic_link_out_of_the_landing_zone(tmp_path):
    """The local mirror moves processed files: through a linked table folder, it moved files
    outside the landing zone. A link that stays inside is followed as before."""
    outside = tmp_path / "outside"
    (outside / "t").mkdir(parents=True)
    (outside / "t" / "00000000000000000001.parquet").write_bytes(b"theirs")
    root = tmp_path / "lz"
    (root / "s.schema").mkdir(parents=True)
    (root / "s.schema" / "t").symlink_to(outside / "t")
    (root / "elsewhere.schema").symlink_to(root / "s.schema")
    storage = LocalStorage(root)
    for operation in (
        lambda: storage.list_names("s.schema/t"),
        lambda: storage.read_text("s.schema/t/_metadata.json"),
        lambda: storage.write_text("s.schema/t/_metadata.json", "{}", create_only=True),
        lambda: storage.rename_create_only("s.schema/t/00000000000000000001.parquet", "s.schema/u/x.parquet"),
    ):
        with pytest.raises(LandingZoneConfigError, match="leads out of the landing zone .* through a symbolic link"):
            operation()
    assert sorted(p.name for p in (outside / "t").iterdir()) == ["00000000000000000001.parquet"]
    assert storage.list_names("elsewhere.schema") == ["t"]


@pytest.mark.parametrize("link_to", ["outside/x.parquet", "outside/missing.parquet", "lz/t/missing.parquet"])
def test_a_listed_file_that_is_a_link_out_or_to_nothing_is_named(tmp_path, link_to):
    # A link to nothing was left out of the listing as a file deleted since: its number went unseen.
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "x.parquet").write_bytes(b"theirs")
    (tmp_path / "lz" / "t").mkdir(parents=True)
    (tmp_path / "lz" / "t" / "00000000000000000001.parquet").write_bytes(b"ours")
    link = tmp_path / "lz" / "t" / "00000000000000000002.parquet"
    link.symlink_to(tmp_path / link_to)
    with pytest.raises(LandingZoneConfigError, match="00000000000000000002.parquet") as refused:
        LocalStorage(tmp_path / "lz").list_files("t")
    assert "symbolic link" in refused.value.msg


def test_text_is_read_with_its_line_ends_as_newlines(tmp_path):
    """Files written in text mode on Windows end their lines with CRLF: `dbt debug`'s probe must
    read back as written."""
    (tmp_path / "probe.txt").write_bytes(b"dbt-openmirror write check\r\n")
    assert LocalStorage(tmp_path).read_text("probe.txt") == "dbt-openmirror write check\n"


def test_a_loop_of_symbolic_links_is_named(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(LandingZoneConfigError, match="cannot be resolved"):
        LocalStorage(tmp_path).read_text("a/_metadata.json")

"""The local landing-zone backend's listing with times, existence and the status files beside an
item's Files/LandingZone (e.g. a OneLake item mounted as a folder)."""

import os

import pytest

from dbt.adapters.openmirror.errors import LandingZoneAccessError
from dbt.adapters.openmirror.storage import LocalStorage
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

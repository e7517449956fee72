"""The local landing-zone backend's listing with times, existence and the status files beside an
item's Files/LandingZone (e.g. a OneLake item mounted as a folder)."""

import os

from dbt.adapters.openmirror.storage import LocalStorage


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

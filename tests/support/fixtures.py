"""Fixtures of the local mirror's tests (unit and process tests): an empty landing zone folder and a mirror of it."""

import pytest

from dbt.adapters.openmirror.storage import LocalStorage
from dbt.adapters.openmirror.tools.local_mirror.replay import LocalMirror


@pytest.fixture
def lz(tmp_path):
    (tmp_path / "lz").mkdir()
    return tmp_path / "lz"


@pytest.fixture
def mirror(lz, tmp_path):
    return LocalMirror(LocalStorage(lz), tmp_path / "mirror")

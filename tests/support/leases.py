"""The lease tests' landing zone, clocks and fixtures (a pytest plugin of tests/conftest.py): storage
time passes by making the lease files older (their Last-Modified is the storage's clock); the holder's own clock is a
controllable monotonic clock."""

import os

import pytest

from dbt.adapters.openmirror.publishing.lease import LeaseManager, lease_folder
from dbt.adapters.openmirror.storage import LocalStorage

TABLE = "s.schema/t"


class Clock:
    def __init__(self):
        self.now = 1_000.0

    def __call__(self):
        return self.now


@pytest.fixture
def no_runs_in_this_process(monkeypatch):
    from dbt.adapters.openmirror.publishing import lease as lease_module

    monkeypatch.setattr(lease_module, "_ACTIVE_RUNS", {})


@pytest.fixture
def clock():
    return Clock()


def age(tmp_path, seconds, table_folder=TABLE):
    """The storage's time moves on: every lease file was written `seconds` earlier."""
    for path in (tmp_path / lease_folder(table_folder)).iterdir():
        written = path.stat().st_mtime - seconds
        os.utime(path, (written, written))


@pytest.fixture
def manager(tmp_path, clock):
    def sleep(seconds):
        clock.now += seconds
        age(tmp_path, seconds)

    return LeaseManager(LocalStorage(tmp_path), clock=clock, sleep=sleep)


def generations(tmp_path):
    return sorted(p.name for p in (tmp_path / lease_folder(TABLE)).iterdir())


def lease_file(tmp_path, lease):
    return tmp_path / lease.path

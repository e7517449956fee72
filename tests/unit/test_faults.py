"""The fault injector fails exactly the N-th changing operation, and everything after it."""

import pytest

from dbt.adapters.openmirror.storage import LocalStorage
from dbt.adapters.openmirror.storage.faults import (
    FAIL_AT,
    FAULT_LOG,
    FaultInjectingStorage,
    FaultInjector,
    InjectedFault,
)


def test_the_nth_change_fails_and_later_ones_too_while_reads_go_on(tmp_path):
    storage = FaultInjectingStorage(LocalStorage(tmp_path), FaultInjector(fail_at=2))
    storage.write_text("a.txt", "1", create_only=True)
    with pytest.raises(InjectedFault, match="operation 2: write b.txt"):
        storage.write_text("b.txt", "2", create_only=True)
    with pytest.raises(InjectedFault, match="after the injected fault"):
        storage.delete_file("a.txt")
    assert storage.read_text("a.txt") == "1" and storage.read_text("b.txt") is None


def test_the_environment_turns_it_on_and_the_log_lists_operations(tmp_path, monkeypatch):
    log = tmp_path / "ops.log"
    monkeypatch.setenv(FAIL_AT, "0")
    monkeypatch.setenv(FAULT_LOG, str(log))
    injector = FaultInjector.from_environment()
    storage = FaultInjectingStorage(LocalStorage(tmp_path / "lz"), injector)
    storage.write_text("x/a.txt", "1", create_only=True)
    storage.rename_create_only("x/a.txt", "x/b.txt")
    storage.delete_folder("x")
    assert log.read_text().splitlines() == [
        "1\twrite x/a.txt", "2\trename x/a.txt -> x/b.txt", "3\tdelete folder x",
    ]


def test_off_without_the_environment(monkeypatch):
    monkeypatch.delenv(FAIL_AT, raising=False)
    assert FaultInjector.from_environment() is None

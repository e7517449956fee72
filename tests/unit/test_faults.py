"""The fault injector (tests/support/faults.py) fails exactly the N-th changing operation, and
everything after it; it reaches the product only through the storage factory."""

import pytest

from dbt.adapters.openmirror import storage
from dbt.adapters.openmirror.storage import LocalStorage
from tests.support.faults import FaultInjectingStorage, FaultInjector, InjectedFault, injected
from tests.support.faulty import _parser


def test_the_nth_change_fails_and_later_ones_too_while_reads_go_on(tmp_path):
    storage = FaultInjectingStorage(LocalStorage(tmp_path), FaultInjector(fail_at=2))
    storage.write_text("a.txt", "1", create_only=True)
    with pytest.raises(InjectedFault, match="operation 2: write b.txt"):
        storage.write_text("b.txt", "2", create_only=True)
    with pytest.raises(InjectedFault, match="after the injected fault"):
        storage.delete_file("a.txt")
    assert storage.read_text("a.txt") == "1" and storage.read_text("b.txt") is None


def test_the_log_lists_operations_and_zero_fails_none(tmp_path):
    log = tmp_path / "ops.log"
    storage = FaultInjectingStorage(LocalStorage(tmp_path / "lz"), FaultInjector(0, log_path=str(log)))
    storage.write_text("x/a.txt", "1", create_only=True)
    storage.rename_create_only("x/a.txt", "x/b.txt")
    storage.delete_folder("x")
    assert log.read_text().splitlines() == [
        "1\twrite x/a.txt",
        "2\trename x/a.txt -> x/b.txt",
        "3\tdelete folder x",
    ]


def test_injected_wraps_the_landing_zones_the_product_opens_and_only_while_it_lasts(tmp_path):
    product = storage.open_landing_zone
    with injected(FaultInjector(1), adapter=False):
        with pytest.raises(InjectedFault, match="operation 1: create folder"):
            storage.open_landing_zone(str(tmp_path)).create_folder("x")
    assert storage.open_landing_zone is product
    storage.open_landing_zone(str(tmp_path)).create_folder("x")
    assert (tmp_path / "x").is_dir()


def test_the_wrapper_takes_its_faults_from_its_arguments():
    args = _parser().parse_args(["--fail-at", "3", "--mode", "kill", "dbt", "run", "--vars", "{a: 1}"])
    assert (args.fail_at, args.mode, args.program, args.arguments) == (3, "kill", "dbt", ["run", "--vars", "{a: 1}"])
    with pytest.raises(SystemExit):
        _parser().parse_args(["--fail-at", "1", "--mode", "explode", "dbt", "run"])

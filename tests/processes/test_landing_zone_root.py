"""The landing zone root must exist (a mistyped path is an error, not a new landing zone), unless
the profile asks for it to be created: local folders, and OneLake on the DFS stand-in."""

import threading

import pytest

from dbt.adapters.openmirror.errors import LandingZoneConfigError
from dbt.adapters.openmirror.storage import LocalStorage, local_root
from dbt.adapters.openmirror.storage.location import parse_location
from dbt.adapters.openmirror.storage.onelake import OneLakeStorage
from dbt.adapters.openmirror.storage.retry import RetrySettings
from dbt.adapters.openmirror.storage.root import check_root
from tests.support.dfs_emulator import DfsEmulator, FixedTokenCredential


@pytest.fixture(scope="module")
def dfs(tmp_path_factory):
    with DfsEmulator(tmp_path_factory.mktemp("dfs"), filesystems=["ws"]) as emulator:
        yield emulator


@pytest.fixture(params=["local", "onelake"])
def backend(request, tmp_path, monkeypatch):
    """(open a landing zone at a relative root, the folder that root is on disk)."""
    if request.param == "local":
        return lambda root: LocalStorage(local_root(str(tmp_path / root))), lambda root: tmp_path / root
    dfs = request.getfixturevalue("dfs")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", dfs.ca_path)
    item = f"{request.node.name.replace('[', '_').replace(']', '')}"
    return (
        lambda root: OneLakeStorage(
            parse_location(f"{dfs.url}/ws/{item}/{root}"),
            FixedTokenCredential(),
            retry=RetrySettings(attempts=2, backoff_seconds=0.05),
        ),
        lambda root: dfs.root / "ws" / item / root,
    )


def test_a_missing_root_fails_naming_it_and_both_ways_out(backend):
    open_storage, on_disk = backend
    storage = open_storage("Files/LandingZne")
    with pytest.raises(LandingZoneConfigError) as raised:
        check_root(storage, create=False, log=pytest.fail)
    message = str(raised.value)
    assert f"landing zone {storage.location} does not exist" in message
    assert "fix `landing_zone` in the profile" in message
    assert "set `create_landing_zone: true`" in message
    assert not on_disk("Files/LandingZne").exists()


def test_an_existing_root_passes_silently(backend):
    open_storage, on_disk = backend
    storage = open_storage("Files/LandingZone")
    storage.create_folder("")
    check_root(storage, create=False, log=pytest.fail)
    assert on_disk("Files/LandingZone").is_dir()


def test_create_landing_zone_creates_it_and_says_so_once(backend):
    open_storage, on_disk = backend
    storage = open_storage("Files/LandingZone")
    said = []
    check_root(storage, create=True, log=said.append)
    check_root(storage, create=True, log=said.append)
    assert on_disk("Files/LandingZone").is_dir()
    assert said == [f"Created the landing zone {storage.location} (create_landing_zone: true)"]


class _RacingStorage(LocalStorage):
    """A local landing zone whose first existence checks wait for each other, so that every
    thread sees the root missing before any creates it."""

    def __init__(self, root, threads):
        super().__init__(root)
        self._barrier = threading.Barrier(threads)
        self._first = threading.local()

    def exists(self, path):
        found = super().exists(path)
        if not getattr(self._first, "seen", False):
            self._first.seen = True
            self._barrier.wait(timeout=10)
        return found


def test_models_starting_together_create_it_once(tmp_path):
    storage = _RacingStorage(tmp_path / "landing_zone", threads=4)
    said = []
    threads = [threading.Thread(target=check_root, args=(storage, True, said.append)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (tmp_path / "landing_zone").is_dir()
    assert len(said) == 1


def test_a_local_root_under_a_file_is_missing_not_created(tmp_path):
    (tmp_path / "file.txt").write_text("x")
    storage = LocalStorage(local_root(str(tmp_path / "file.txt" / "landing_zone")))
    with pytest.raises(LandingZoneConfigError, match="does not exist"):
        check_root(storage, create=False, log=pytest.fail)

import os

import pytest

from dbt.adapters.openmirror.credentials import OpenMirrorCredentials
from dbt.adapters.openmirror.errors import LandingZoneConfigError
from dbt.adapters.openmirror.storage import LocalStorage, local_root


def test_paths_and_file_urls(tmp_path):
    assert local_root(str(tmp_path)) == tmp_path
    assert local_root(f"file://{tmp_path}/a%20b") == tmp_path / "a b"
    assert local_root("file:///x/../y") == local_root("/y")
    assert local_root(f"file://{tmp_path}/%41b") == tmp_path / "Ab"


@pytest.mark.parametrize(
    "value, message",
    [
        ("s3://bucket/x", "unknown scheme"),
        ("file://server/share", "must name a local path"),
    ],
)
def test_unusable_locations(value, message):
    with pytest.raises(LandingZoneConfigError, match=message):
        local_root(value)


@pytest.mark.parametrize(
    "value, message",
    [
        ("file:///data/a%2Fb", "encodes a path separator"),
        ("file:///data/a%2f..%2fb", "encodes a path separator"),
        ("file:///data/a%5Cb", "encodes a path separator"),
        ("file:///data/%2E%2E/etc", "encodes '.' or '..'"),
        ("file:///data/a%252Fb", "percent-encoded twice"),
        ("file:///data/a%FFb", "not percent-encoded UTF-8"),
        ("file:///data/a%00b", "control character"),
        ("file:///data/lz?x=1", "no query string or fragment"),
        ("file:///data/lz#x", "no query string or fragment"),
    ],
)
def test_file_urls_are_decoded_once_and_checked(value, message):
    with pytest.raises(LandingZoneConfigError, match=message):
        local_root(value)


def _credentials(**fields):
    return OpenMirrorCredentials.from_dict({"method": "session", "host": "localhost", "schema": "s", **fields})


def test_credentials_type_and_resolved_landing_zone(tmp_path):
    credentials = _credentials(landing_zone=str(tmp_path))
    assert credentials.type == "openmirror"
    assert credentials.landing_zone == str(tmp_path)
    assert "landing_zone" in credentials._connection_keys()


def test_credentials_require_a_landing_zone():
    with pytest.raises(LandingZoneConfigError, match="Must specify `landing_zone`"):
        _credentials()


def test_local_last_modified_is_the_files_mtime(tmp_path):
    storage = LocalStorage(tmp_path)
    storage.write_text("t/a.json", "{}", create_only=True)
    os.utime(tmp_path / "t" / "a.json", (1_700_000_000, 1_700_000_000))
    assert storage.last_modified("t/a.json") == 1_700_000_000
    with pytest.raises(FileNotFoundError):
        storage.last_modified("t/missing.json")

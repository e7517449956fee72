"""OneLake / ADLS Gen2 landing zone URLs: every accepted form, and what is refused with why."""

from pathlib import Path

import pytest

from dbt.adapters.openmirror.errors import LandingZoneConfigError
from dbt.adapters.openmirror.storage import canonical_landing_zone
from dbt.adapters.openmirror.storage.location import DfsLocation, parse_location

WS, ITEM = "4f5c9d2e-1b7a-4c3e-9a8d-2f6b1c0e7a91", "0a7e3c1d-9f4b-4d2a-8c6e-5b1f2a3d4e5f"


@pytest.mark.parametrize(
    "url, expected",
    [
        (
            f"https://onelake.dfs.fabric.microsoft.com/{WS}/{ITEM}/Files/LandingZone",
            DfsLocation("https://onelake.dfs.fabric.microsoft.com", WS, f"{ITEM}/Files/LandingZone", True),
        ),
        (
            "https://onelake.dfs.fabric.microsoft.com/Sales/Orders.MirroredDatabase/Files/LandingZone/",
            DfsLocation(
                "https://onelake.dfs.fabric.microsoft.com", "Sales", "Orders.MirroredDatabase/Files/LandingZone", True
            ),
        ),
        (
            f"https://westeurope-onelake.dfs.fabric.microsoft.com/{WS}/{ITEM}/Files/LandingZone",
            DfsLocation("https://westeurope-onelake.dfs.fabric.microsoft.com", WS, f"{ITEM}/Files/LandingZone", True),
        ),
        (
            f"abfss://{WS}@onelake.dfs.fabric.microsoft.com/{ITEM}/Files/LandingZone",
            DfsLocation("https://onelake.dfs.fabric.microsoft.com", WS, f"{ITEM}/Files/LandingZone", True),
        ),
        (
            "https://onelake.dfs.fabric.microsoft.com/My%20Space/Orders.MirroredDatabase/Files/LandingZone",
            DfsLocation(
                "https://onelake.dfs.fabric.microsoft.com",
                "My Space",
                "Orders.MirroredDatabase/Files/LandingZone",
                True,
            ),
        ),
        (
            "https://myaccount.dfs.core.windows.net/mirror/landing/zone",
            DfsLocation("https://myaccount.dfs.core.windows.net", "mirror", "landing/zone", False),
        ),
        (
            "https://127.0.0.1:8443/ws/item/Files/LandingZone",
            DfsLocation("https://127.0.0.1:8443", "ws", "item/Files/LandingZone", False),
        ),
        (
            "https://[::1]:8443/ws/item/Files/LandingZone",
            DfsLocation("https://[::1]:8443", "ws", "item/Files/LandingZone", False),
        ),
    ],
)
def test_accepted_forms(url, expected):
    assert parse_location(url) == expected


def test_one_spelling_for_the_profile_and_urls_for_spark_and_monitoring():
    abfss = f"abfss://{WS}@onelake.dfs.fabric.microsoft.com/{ITEM}/Files/LandingZone"
    https = f"https://onelake.dfs.fabric.microsoft.com/{WS}/{ITEM}/Files/LandingZone"
    assert canonical_landing_zone(abfss) == canonical_landing_zone(https + "/") == https
    location = parse_location(https)
    assert location.abfss_uri("_scratchPad/dbt-openmirror/r1") == f"{abfss}/_scratchPad/dbt-openmirror/r1"
    assert location.monitoring_root == f"{ITEM}/Files/Monitoring"
    assert parse_location("https://a.dfs.core.windows.net/c/lz").monitoring_root is None
    assert parse_location("https://onelake.dfs.fabric.microsoft.com/My%20Space/d/Files/LandingZone").url == (
        "https://onelake.dfs.fabric.microsoft.com/My%20Space/d/Files/LandingZone"
    )


@pytest.mark.parametrize(
    "url, message",
    [
        ("http://onelake.dfs.fabric.microsoft.com/ws/db/Files/LandingZone", "use https:// or abfss://"),
        ("abfs://ws@onelake.dfs.fabric.microsoft.com/db/Files/LandingZone", "use https:// or abfss://"),
        ("https://onelake.dfs.fabric.microsoft.com/ws/db/Files", "a OneLake landing zone is"),
        ("https://onelake.dfs.fabric.microsoft.com/ws/db/Tables/LandingZone", "a OneLake landing zone is"),
        ("https://onelake.blob.fabric.microsoft.com/ws/db/Files/LandingZone", "use the DFS host onelake.dfs"),
        ("https://a.dfs.core.windows.net/c/lz?sv=2024&sig=secret", "no query string"),
        ("https://user:pw@a.dfs.core.windows.net/c/lz", "no query string"),
        ("abfss://onelake.dfs.fabric.microsoft.com/db/Files/LandingZone", "name the filesystem"),
        ("https://a.dfs.core.windows.net/", "names no filesystem"),
        ("https://a.dfs.core.windows.net/c/x/../y", "cannot be part of a landing zone path"),
        ("https://a.dfs.core.windows.net/c/a%0Ab", "cannot be part of a landing zone path"),
    ],
)
def test_refused_with_the_reason(url, message):
    with pytest.raises(LandingZoneConfigError, match=message):
        parse_location(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://a.dfs.core.windows.net/c/lz?sv=2024&sig=SECRET-SIG",
        "https://a.dfs.core.windows.net/c/lz#SECRET-SIG",
        "https://user:SECRET-SIG@a.dfs.core.windows.net/c/lz",
        "https://SECRET-SIG@a.dfs.core.windows.net/c/lz",
        "abfss://ws:SECRET-SIG@onelake.dfs.fabric.microsoft.com/db/Files/LandingZone",
        "http://a.dfs.core.windows.net/c/lz?sig=SECRET-SIG",
        "https://a.dfs.core.windows.net/c/x/../y?sig=SECRET-SIG",
        "wasbs://c@a.blob.core.windows.net/lz?sv=2024&sig=SECRET-SIG",
        "adl://u:SECRET-SIG@a.azuredatalakestore.net/lz",
        "//user:SECRET-SIG@a.dfs.core.windows.net/c/lz",
        "file://user:SECRET-SIG@host/lz",
        "file:///x?sig=SECRET-SIG",
    ],
)
def test_a_refused_url_is_not_repeated_with_what_may_be_a_secret(url):
    """A SAS signature or a password in the URL would otherwise reach dbt's output and logs."""
    with pytest.raises(LandingZoneConfigError) as refused:
        canonical_landing_zone(url)
    assert "SECRET-SIG" not in str(refused.value) and "***a." not in str(refused.value)


@pytest.mark.parametrize(
    "landing_zone, message",
    [
        ("https://127.0.0.1:99999/ws/lz", "port"),
        ("https://127.0.0.1:port/ws/lz", "port"),
        ("//127.0.0.1:8443/ws/item/Files/LandingZone", "names a storage service but no scheme"),
        ("//onelake.dfs.fabric.microsoft.com/ws/db/Files/LandingZone", "names a storage service but no scheme"),
        ("https://[::1/ws/lz", "not a valid URL"),
    ],
)
def test_a_malformed_url_is_a_configuration_error(landing_zone, message):
    with pytest.raises(LandingZoneConfigError, match=message):
        canonical_landing_zone(landing_zone)


def test_a_share_written_with_forward_slashes_is_a_folder():
    """`//server/share/...` is a Windows share (on POSIX, a path with a doubled slash)."""
    assert canonical_landing_zone("//server/share/LandingZone") == str(Path("//server/share/LandingZone").resolve())


ONELAKE = "onelake.dfs.fabric.microsoft.com"


@pytest.mark.parametrize(
    "url, segment, message",
    [
        # An encoded separator inside the item segment would reach another item of the workspace.
        (f"https://{ONELAKE}/{WS}/x%2F..%2F{ITEM}/Files/LandingZone", f"x%2F..%2F{ITEM}", "encodes a path separator"),
        (f"https://{ONELAKE}/{WS}/x%2f..%2f{ITEM}/Files/LandingZone", f"x%2f..%2f{ITEM}", "encodes a path separator"),
        (f"https://{ONELAKE}/{WS}/x%5C{ITEM}/Files/LandingZone", f"x%5C{ITEM}", "encodes a path separator"),
        (f"https://{ONELAKE}/{WS}/x%5c{ITEM}/Files/LandingZone", f"x%5c{ITEM}", "encodes a path separator"),
        # ... or inside the workspace, in either form.
        (
            f"https://{ONELAKE}/{WS}%2F..%2Fother/{ITEM}/Files/LandingZone",
            f"{WS}%2F..%2Fother",
            "encodes a path separator",
        ),
        (
            f"abfss://{WS}%2F..%2Fother@{ONELAKE}/{ITEM}/Files/LandingZone",
            f"{WS}%2F..%2Fother",
            "encodes a path separator",
        ),
        (f"abfss://{WS}@{ONELAKE}/x%2F{ITEM}/Files/LandingZone", f"x%2F{ITEM}", "encodes a path separator"),
        ("https://a.dfs.core.windows.net/c/lz%2F..%2F..%2Fother", "lz%2F..%2F..%2Fother", "encodes a path separator"),
        (f"https://{ONELAKE}/{WS}/%2E%2E/Files/LandingZone", "%2E%2E", "encodes '.' or '..'"),
        ("https://a.dfs.core.windows.net/c/x/%2e/y", "%2e", "encodes '.' or '..'"),
        ("https://a.dfs.core.windows.net/c/x/.%2E/y", ".%2E", "encodes '.' or '..'"),
        (f"abfss://%2E%2E@{ONELAKE}/{ITEM}/Files/LandingZone", "%2E%2E", "encodes '.' or '..'"),
        # Decoded once, these still hold an escape: whoever decodes again would see a separator.
        (f"https://{ONELAKE}/{WS}/x%252F{ITEM}/Files/LandingZone", f"x%252F{ITEM}", "percent-encoded twice"),
        ("https://a.dfs.core.windows.net/c/%252E%252E", "%252E%252E", "percent-encoded twice"),
        (f"abfss://{WS}%255C@{ONELAKE}/{ITEM}/Files/LandingZone", f"{WS}%255C", "percent-encoded twice"),
        ("https://a.dfs.core.windows.net/c/x%FFy", "x%FFy", "not percent-encoded UTF-8"),
    ],
)
def test_encoded_separators_and_dot_segments_are_refused_naming_the_segment(url, segment, message):
    with pytest.raises(LandingZoneConfigError, match=message) as refused:
        parse_location(url)
    assert repr(segment) in str(refused.value)


def test_the_last_segment_is_not_cut_at_a_semicolon():
    # urlparse would take ";v=1" for parameters and silently drop it.
    assert parse_location("https://a.dfs.core.windows.net/c/lz;v=1").root == "lz;v=1"
    assert parse_location("https://a.dfs.core.windows.net/c/%41b").root == "Ab"

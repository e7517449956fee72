"""Choose the storage backend once, from the profile's `landing_zone`."""

from pathlib import Path
from typing import TYPE_CHECKING

from dbt.adapters.openmirror.errors import LandingZoneConfigError
from dbt.adapters.openmirror.storage.azure_auth import AzureAuth
from dbt.adapters.openmirror.storage.base import LandingZoneStorage
from dbt.adapters.openmirror.storage.local import LocalStorage
from dbt.adapters.openmirror.storage.location import (
    decode_segment,
    is_remote,
    looks_like_a_service,
    parse_location,
    shown_url,
    split_url,
)

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential

__all__ = ["LandingZoneStorage", "LocalStorage", "canonical_landing_zone", "local_root", "open_landing_zone"]


def local_root(landing_zone: str) -> Path:
    """The absolute folder of a local landing zone (a path or a file:// URL, whose segments are
    decoded and checked as a remote URL's)."""
    if not landing_zone.strip():  # not the working directory
        raise LandingZoneConfigError("the landing zone is empty: name a folder or a URL")
    parsed = split_url(landing_zone)
    # What messages show of a URL: no credentials, query or fragment (a folder path is shown whole).
    shown = shown_url(parsed) if parsed.scheme or parsed.netloc else landing_zone
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise LandingZoneConfigError(f"landing_zone {shown!r}: file:// URLs must name a local path (file:///...)")
        if "?" in landing_zone or "#" in landing_zone:
            raise LandingZoneConfigError(
                f"landing_zone {shown!r}: no query string or fragment in a file:// URL "
                "(a '?' or '#' in a folder name is written %3F or %23)"
            )
        path = Path("/".join(decode_segment(s, shown) for s in parsed.path.split("/")))
    elif not parsed.scheme and looks_like_a_service(parsed):
        raise LandingZoneConfigError(
            f"landing_zone {shown!r} names a storage service but no scheme: write https:// (or abfss://) before it"
        )
    elif parsed.scheme and len(parsed.scheme) > 1:  # "C:\\..." parses as scheme "c"
        raise LandingZoneConfigError(
            f"landing_zone {shown!r}: unknown scheme '{parsed.scheme}://' (expected a local "
            "folder, a file:// URL, a OneLake or ADLS Gen2 https:// URL, or its abfss:// form)"
        )
    else:
        path = Path(landing_zone).expanduser()
    root = path.resolve()
    if root.exists() and not root.is_dir():
        raise LandingZoneConfigError(f"landing_zone {shown!r} is a file, not a folder")
    return root


def canonical_landing_zone(landing_zone: str) -> str:
    """The landing zone in one spelling (checked): an absolute folder, or a https:// DFS URL."""
    if is_remote(landing_zone):
        return parse_location(landing_zone).url
    return str(local_root(landing_zone))


def open_landing_zone(
    landing_zone: str, auth: AzureAuth | None = None, credential: "TokenCredential | None" = None
) -> LandingZoneStorage:
    """The landing zone's backend. The adapter and the CLI open every landing zone here, looking
    the function up on this module, so code that embeds them can replace it (the tests wrap the
    storage to fail at a chosen operation, or sign in to a local DFS stand-in).

    `credential`: an azure-core TokenCredential that signs OneLake's requests instead of the
    azure-identity credential `auth` names."""
    if not is_remote(landing_zone):
        return LocalStorage(local_root(landing_zone))
    # Imported here: the Azure SDKs are only needed for remote landing zones.
    from dbt.adapters.openmirror.storage.azure_auth import token_credential
    from dbt.adapters.openmirror.storage.onelake import OneLakeStorage

    auth = auth or AzureAuth()
    if credential is None:
        credential = token_credential(auth)
    return OneLakeStorage(parse_location(landing_zone), credential, auth)

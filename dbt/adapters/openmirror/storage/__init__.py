"""Choose the storage backend once, from the profile's `landing_zone`."""

from pathlib import Path
from urllib.parse import unquote, urlparse

from dbt.adapters.openmirror.errors import LandingZoneConfigError
from dbt.adapters.openmirror.storage.base import LandingZoneStorage
from dbt.adapters.openmirror.storage.local import LocalStorage

__all__ = ["LandingZoneStorage", "LocalStorage", "local_root", "open_landing_zone"]

_REMOTE_SCHEMES = ("https", "http", "abfss", "abfs")


def local_root(landing_zone: str) -> Path:
    """The absolute folder of a local landing zone (a path or a file:// URL)."""
    parsed = urlparse(landing_zone)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise LandingZoneConfigError(
                f"landing_zone {landing_zone!r}: file:// URLs must name a local path (file:///...)"
            )
        path = Path(unquote(parsed.path))
    elif parsed.scheme in _REMOTE_SCHEMES:
        raise LandingZoneConfigError(
            f"landing_zone {landing_zone!r}: OneLake / ADLS landing zones are not supported by this "
            "version yet; use a local folder or a file:// URL"
        )
    elif parsed.scheme and len(parsed.scheme) > 1:  # "C:\\..." parses as scheme "c"
        raise LandingZoneConfigError(
            f"landing_zone {landing_zone!r}: unknown scheme '{parsed.scheme}://' "
            "(expected a local folder or a file:// URL)"
        )
    else:
        path = Path(landing_zone).expanduser()
    root = path.resolve()
    if root.exists() and not root.is_dir():
        raise LandingZoneConfigError(f"landing_zone {landing_zone!r} is a file, not a folder")
    return root


def open_landing_zone(landing_zone: str) -> LandingZoneStorage:
    return LocalStorage(local_root(landing_zone))

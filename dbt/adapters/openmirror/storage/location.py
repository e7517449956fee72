"""Where a remote landing zone is: a OneLake or ADLS Gen2 URL split into what the DFS API needs.

Accepted forms (spec section 1):
- `https://onelake.dfs.fabric.microsoft.com/<workspace>/<item>/Files/LandingZone`, also on a
  regional host `<region>-onelake.dfs.fabric.microsoft.com`; workspace and item as GUIDs or names
  (`<name>.MirroredDatabase`);
- the same in ABFS form: `abfss://<workspace>@onelake.dfs.fabric.microsoft.com/<item>/Files/LandingZone`;
- any other DFS endpoint, e.g. ADLS Gen2 `https://<account>.dfs.core.windows.net/<filesystem>/<path>`
  (or a local stand-in `https://127.0.0.1:<port>/<filesystem>/<path>`).

Each path segment (and the `<workspace>@` of the ABFS form) is percent-decoded exactly once, before
it is checked.
"""

import re
from dataclasses import dataclass
from urllib.parse import SplitResult, quote, unquote, urlparse, urlsplit, urlunsplit

from dbt.adapters.openmirror.errors import LandingZoneConfigError

REMOTE_SCHEMES = ("https", "http", "abfss", "abfs")
ONELAKE_HOST = re.compile(r"^([a-z0-9-]+-)?onelake\.dfs\.fabric\.microsoft\.com$")
_ONELAKE_BLOB_HOST = re.compile(r"^([a-z0-9-]+-)?onelake\.blob\.fabric\.microsoft\.com$")
_AZURE_STORAGE_HOST = re.compile(r"^[a-z0-9]+\.(dfs|blob)\.core\.windows\.net$")
LANDING_ZONE_PATH = ("Files", "LandingZone")
MONITORING_PATH = ("Files", "Monitoring")
_BAD_SEGMENT = re.compile(r'[\\*?"<>|]')
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ENCODED_SEPARATOR = re.compile(r"%(2f|5c)", re.IGNORECASE)
_ESCAPE = re.compile(r"%[0-9a-f]{2}", re.IGNORECASE)


@dataclass(frozen=True)
class DfsLocation:
    """A landing zone root on a DFS endpoint: `<account_url>/<filesystem>/<root>`."""

    account_url: str
    filesystem: str
    #: Path of the landing zone root inside the filesystem, without leading or trailing '/'.
    root: str
    onelake: bool

    @property
    def host(self) -> str:
        return urlparse(self.account_url).netloc

    @property
    def url(self) -> str:
        return f"{self.account_url}/{quote(self.filesystem)}/{quote(self.root)}".rstrip("/")

    def abfss_uri(self, path: str) -> str:
        """What Spark (hadoop-azure) writes to; not percent-encoded, as Hadoop reads it."""
        full = "/".join(p for p in (self.root, path) if p)
        return f"abfss://{self.filesystem}@{self.host}/{full}"

    @property
    def monitoring_root(self) -> str | None:
        """`<item>/Files/Monitoring`, the service's status files next to `Files/LandingZone`."""
        parts = self.root.split("/")
        if tuple(p.lower() for p in parts[-2:]) != tuple(p.lower() for p in LANDING_ZONE_PATH):
            return None
        return "/".join([*parts[:-2], *MONITORING_PATH])


def split_url(landing_zone: str) -> SplitResult:
    """urlsplit, with a malformed URL (an unclosed IPv6 bracket) as a configuration error. Not
    urlparse: it would cut `;...` off the last segment as "parameters"."""
    try:
        return urlsplit(landing_zone)
    except ValueError as exc:
        raise LandingZoneConfigError(f"landing_zone is not a valid URL: {exc}") from None


def is_remote(landing_zone: str) -> bool:
    return split_url(landing_zone).scheme.lower() in REMOTE_SCHEMES


def looks_like_a_service(parsed: SplitResult) -> bool:
    """`//host:port/...`, `//user@host/...` or `//<a DFS host>/...`: a URL without its scheme, not
    a folder (`//server/share/...` is a Windows share written with forward slashes)."""
    host = (parsed.hostname or "").lower()
    services = (ONELAKE_HOST, _ONELAKE_BLOB_HOST, _AZURE_STORAGE_HOST)
    return "@" in parsed.netloc or ":" in parsed.netloc.strip("[]") or any(p.match(host) for p in services)


def decode_segment(segment: str, landing_zone: str) -> str:
    """One segment of a landing zone URL's path, percent-decoded once.

    Decoded before anything checks the name, and refused when an escape would make it anything but
    one folder's name: an encoded separator (`%2F`, `%5C`) splits it into two (another workspace
    or item), an encoded `.` or `..` climbs, and an escape still there after decoding (`%252F`)
    becomes a separator for whoever decodes again."""

    def refused(why: str) -> LandingZoneConfigError:
        return LandingZoneConfigError(f"landing_zone {landing_zone!r}: the path segment {segment!r} {why}")

    try:
        name = unquote(segment, errors="strict")
    except UnicodeDecodeError:
        raise refused("is not percent-encoded UTF-8") from None
    if _ENCODED_SEPARATOR.search(segment):
        raise refused("encodes a path separator; write each folder as a segment of its own")
    if name in (".", "..") and name != segment:
        raise refused("encodes '.' or '..'")
    if _ESCAPE.search(name):
        raise refused(f"is percent-encoded twice ({name!r} after decoding); encode it once")
    if _CONTROL.search(name):
        raise refused("holds a control character: it cannot be part of a landing zone path")
    return name


def _segments(path: str, landing_zone: str) -> list[str]:
    segments = [decode_segment(s, landing_zone) for s in path.split("/") if s]
    for segment in segments:
        if segment in (".", "..") or _BAD_SEGMENT.search(segment):
            raise LandingZoneConfigError(
                f"landing_zone {landing_zone!r}: the path segment {segment!r} cannot be part of a landing zone path"
            )
    return segments


def shown_url(parsed: SplitResult) -> str:
    """The URL as messages show it: without user information other than an abfss:// filesystem,
    a query or a fragment, where passwords and SAS signatures would be (the URL is refused then)."""
    userinfo, at, host = parsed.netloc.rpartition("@")
    filesystem = parsed.scheme.lower() in ("abfss", "abfs") and parsed.password is None
    shown_userinfo = (userinfo if filesystem else "***") + at if at else ""
    return urlunsplit(
        (
            parsed.scheme,
            shown_userinfo + host,
            parsed.path,
            "***" if parsed.query else "",
            "***" if parsed.fragment else "",
        )
    )


def parse_location(url: str) -> DfsLocation:
    """Split a OneLake / ADLS Gen2 landing zone URL, or say what is wrong with it."""
    parsed = split_url(url)
    landing_zone = shown_url(parsed)
    scheme = parsed.scheme.lower()
    if scheme in ("http", "abfs"):
        raise LandingZoneConfigError(
            f"landing_zone {landing_zone!r}: use https:// or abfss:// (tokens are only sent over TLS)"
        )
    if parsed.query or parsed.fragment or parsed.password or (scheme == "https" and parsed.username):
        raise LandingZoneConfigError(
            f"landing_zone {landing_zone!r}: no query string, fragment or credentials in the URL; "
            "the profile's `auth` fields say how to sign in"
        )
    host = (parsed.hostname or "").lower()
    if not host:
        raise LandingZoneConfigError(f"landing_zone {landing_zone!r}: the URL names no host")
    try:
        port = parsed.port
    except ValueError:
        raise LandingZoneConfigError(
            f"landing_zone {landing_zone!r}: the port is not a number from 0 to 65535"
        ) from None
    netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
    if _ONELAKE_BLOB_HOST.match(host):
        raise LandingZoneConfigError(
            f"landing_zone {landing_zone!r}: that is OneLake's Blob endpoint; use the DFS host "
            f"{host.replace('.blob.', '.dfs.')}"
        )
    segments = _segments(parsed.path, landing_zone)
    if scheme == "abfss":
        if not parsed.username:
            raise LandingZoneConfigError(
                f"landing_zone {landing_zone!r}: abfss:// URLs name the filesystem (workspace) "
                "before the host: abfss://<workspace>@<host>/<path>"
            )
        segments = [*_segments(parsed.username, landing_zone), *segments]
    if not segments:
        raise LandingZoneConfigError(
            f"landing_zone {landing_zone!r}: the URL names no filesystem (workspace or container)"
        )
    onelake = bool(ONELAKE_HOST.match(host))
    if onelake and (len(segments) != 4 or [s.lower() for s in segments[2:]] != ["files", "landingzone"]):
        raise LandingZoneConfigError(
            f"landing_zone {landing_zone!r}: a OneLake landing zone is "
            "https://onelake.dfs.fabric.microsoft.com/<workspace>/<item>/Files/LandingZone"
        )
    return DfsLocation(f"https://{netloc}", segments[0], "/".join(segments[1:]), onelake)

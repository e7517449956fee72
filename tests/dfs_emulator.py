"""A local stand-in of the ADLS Gen2 (DFS) REST API that behaves like OneLake for what we use.

No DFS emulator runs offline (Azurite has no DFS endpoint), so the tests serve this one on
loopback, over HTTPS with a self-signed certificate made at start (azure-core refuses bearer
tokens over plain http), and drive it with the real `azure-storage-file-datalake` SDK.

Usage::

    from tests.dfs_emulator import DfsEmulator, FixedTokenCredential

    with DfsEmulator(tmp_path, filesystems=["workspace"]) as dfs:
        credential = FixedTokenCredential()
        service = DataLakeServiceClient(dfs.url, credential=credential,
                                        connection_verify=dfs.ca_path)
        fs = service.get_file_system_client("workspace")
        fs.get_file_client("item/Files/LandingZone/T/_x").upload_data(b"...", overwrite=True)
        assert (dfs.root / "workspace/item/Files/LandingZone/T/_x").read_bytes() == b"..."
        assert credential.scopes == ["https://storage.azure.com/.default"]

- `dfs.url` is `https://127.0.0.1:PORT`; paths are `/<filesystem>/<path>` as on OneLake, whose
  filesystem is the workspace and landing zone `<workspace>/<item>/Files/LandingZone`.
  `dfs.root / <filesystem> / <path>` holds the committed bytes, so tests can read and seed them.
- Trusting the certificate: pass `connection_verify=dfs.ca_path` to any SDK client (azure-core
  hands it to requests as `verify=`), or set `REQUESTS_CA_BUNDLE=dfs.ca_path` in the environment
  (requests reads it because azure-core's transport keeps `trust_env`). Both are tested.
- Raw DFS requests through the SDK's authenticated pipeline (the create-only rename that the SDK
  does not offer): build an `azure.core.rest.HttpRequest` and send it with the generated client's
  `_send_request`, the codegen's documented entry point (https://aka.ms/azsdk/dpcodegen/python/send_request)::

      request = HttpRequest("PUT", dest_client.url + "?mode=legacy", headers={
          "x-ms-rename-source": "/workspace/" + quote(source_path),
          "If-None-Match": "*", "x-ms-version": "2021-06-08"})
      response = dest_client._client._send_request(request)   # azure.core.rest.HttpResponse
      if response.status_code >= 300: ...  # no error mapping: check it yourself

  It runs the client's whole pipeline: bearer token, x-ms-date, request id, retries, logging.
- SDK behaviour this emulator shows (tests/unit/test_dfs_emulator.py): the storage retry policy
  retries 408, 5xx and dropped connections but NOT 429 and never reads Retry-After, and
  azure-core's `RetryPolicy` cannot replace it (the storage pipeline leaks a `hosts` option to
  the transport: TypeError); tests pass `retry_policy=ExponentialRetry(initial_backoff=0,
  increment_base=0, random_jitter_range=0)` to retry without waiting. `upload_data` without
  `overwrite=True` appends to an existing file (404 PathNotFound when missing, 412 when present);
  a create-only create is `create_file(match_condition=MatchConditions.IfMissing)` (no `etag=`).
- Faults: `dfs.inject(status=503, times=2, operation="flush")` answers the next two matching
  requests with a canned error in the real format (`code` defaults by status: 429/503 ServerBusy,
  500 InternalError, 401 InvalidAuthenticationInfo, 403 AuthorizationPermissionMismatch);
  `drop=True` closes the connection unanswered, `delay=s` stalls first, `after_operation=True`
  performs the operation and then loses the answer (the "it happened, but did it?" case).
  `dfs.defer_delete(path, requests=N)` makes the next delete of `path` succeed while the path
  stays visible for N more requests, as an eventually-consistent delete would.
- Records: `dfs.requests` (method, path, query, headers with the Authorization value redacted,
  operation, status) and `dfs.tokens` (bearer tokens seen). `required_token=` answers 401
  InvalidAuthenticationInfo to requests without that bearer token; a request without any
  Authorization header always gets 401, as OneLake does.

Implemented (DFS, plus the few Blob-endpoint calls the DataLake SDK makes for reads and
properties, since on 127.0.0.1 it sends both to the same host): filesystem create / properties /
delete; path create (file, directory, parents implicit) with If-Match / If-None-Match; append
(parallel chunks at any position; positions are checked at flush) and flush (committed only if the
appended data is contiguous up to `position`, else 400 InvalidFlushPosition; readers see the old
content until then); rename via `x-ms-rename-source` with destination and source conditions;
list paths (recursive or not, `maxResults` with `x-ms-continuation`); read with Range /
x-ms-range (206, 416 InvalidRange); HEAD properties with ETag, Content-Length,
x-ms-resource-type; delete (recursive, or 409 DirectoryNotEmpty).

Not implemented: leases, ACLs and owners (fixed `$superuser`), metadata and content settings
(accepted, not stored), SAS, Blob-endpoint uploads and listings, account-level listing,
soft delete, encryption headers, checksums (ignored).

Differences from OneLake, where known: OneLake workspaces cannot be created through the storage
API (here `PUT ?resource=filesystem` creates one so tests can set up; pass `filesystems=` instead);
rename `mode=legacy` and `posix` behave the same; a rename onto an existing directory is refused
(409 PathAlreadyExists); a rename whose destination parent is missing fails 404
RenameDestinationParentPathNotFound as ADLS does; ETags are `"0x<hex>"` like the service's but
not derived from time; one lock serialises all operations, so nothing is concurrent inside.
"""

from __future__ import annotations

import base64
import datetime
import fnmatch
import ipaddress
import json
import shutil
import socket
import ssl
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Optional
from urllib.parse import parse_qs, unquote, urlsplit

from azure.core.credentials import AccessToken

STORAGE_SCOPE = "https://storage.azure.com/.default"
API_VERSION = "2023-11-03"

DEFAULT_ERROR_CODES = {
    400: "InvalidInput",
    401: "InvalidAuthenticationInfo",
    403: "AuthorizationPermissionMismatch",
    404: "PathNotFound",
    409: "PathConflict",
    412: "ConditionNotMet",
    429: "ServerBusy",
    500: "InternalError",
    503: "ServerBusy",
}


class FixedTokenCredential:
    """A TokenCredential that hands out one fixed token and records the scopes asked for."""

    def __init__(self, token: str = "test-token"):
        self.token = token
        self.scopes: list[str] = []

    def get_token(self, *scopes, **kwargs) -> AccessToken:
        self.scopes.extend(scopes)
        return AccessToken(self.token, int(time.time()) + 3600)


class DfsError(Exception):
    """An error answer in the service's format: status, `x-ms-error-code`, JSON body."""

    def __init__(self, status: int, code: str, message: str = ""):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message or code


@dataclass
class RecordedRequest:
    method: str
    path: str  # decoded, "/<filesystem>/<path>"
    query: dict[str, str]
    headers: dict[str, str]  # Authorization value redacted
    operation: str
    status: Optional[int] = None  # None while running or when the connection was dropped

    def header(self, name: str) -> Optional[str]:
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)


@dataclass
class Fault:
    status: int = 503
    code: Optional[str] = None
    message: str = "Injected fault."
    headers: dict[str, str] = field(default_factory=dict)
    times: int = 1
    method: Optional[str] = None
    path: Optional[str] = None  # fnmatch pattern on the decoded "/<filesystem>/<path>"
    operation: Optional[str] = None
    match: Optional[Callable[[RecordedRequest], bool]] = None
    drop: bool = False
    delay: float = 0.0
    after_operation: bool = False

    def matches(self, request: RecordedRequest) -> bool:
        return (
            self.times > 0
            and (self.method is None or self.method.upper() == request.method)
            and (self.path is None or fnmatch.fnmatchcase(request.path, self.path))
            and (self.operation is None or self.operation == request.operation)
            and (self.match is None or self.match(request))
        )


def _self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost that is its own CA, so clients can trust it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dfs-emulator")])
    now = datetime.datetime.now(datetime.timezone.utc)
    public_key = key.public_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, False, False, False), critical=True
        )
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(public_key), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "dfs-emulator.pem", folder / "dfs-emulator.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def _http_date(timestamp: float) -> str:
    return formatdate(timestamp, usegmt=True)


def _parent(path: str) -> str:
    return path.rpartition("/")[0]


def _within(path: str, folder: str) -> bool:
    return folder == "" or path == folder or path.startswith(folder + "/")


class _Store:
    """The filesystems in a folder: committed bytes on disk, ETags and staged appends in memory."""

    def __init__(self, root: Path):
        self.root = root
        self.lock = threading.RLock()
        self._etags: dict[tuple[str, str], str] = {}
        self._created: dict[tuple[str, str], float] = {}
        self._staged: dict[tuple[str, str], dict[int, bytes]] = {}
        self._last_etag = 0

    # -- bookkeeping -------------------------------------------------------------------------

    def disk(self, fs: str, path: str = "") -> Path:
        return self.root / fs / path if path else self.root / fs

    def require_filesystem(self, fs: str) -> None:
        if not fs or not self.disk(fs).is_dir():
            raise DfsError(404, "FilesystemNotFound", "The specified filesystem does not exist.")

    def _touch(self, fs: str, path: str) -> None:
        self._last_etag = max(time.time_ns(), self._last_etag + 1)
        self._etags[(fs, path)] = f'"0x{self._last_etag:X}"'
        self._created.setdefault((fs, path), time.time())

    def _forget(self, fs: str, folder: str) -> None:
        for table in (self._etags, self._created, self._staged):
            for key in [k for k in table if k[0] == fs and _within(k[1], folder)]:
                del table[key]

    def info(self, fs: str, path: str) -> Optional[dict]:
        """Properties of a path, or None when it does not exist."""
        target = self.disk(fs, path)
        if not path or not target.exists():
            return None
        stat = target.stat()
        if (fs, path) not in self._etags:  # seeded on disk by a test
            self._touch(fs, path)
        is_dir = target.is_dir()
        return {
            "name": path,
            "is_dir": is_dir,
            "length": 0 if is_dir else stat.st_size,
            "etag": self._etags[(fs, path)],
            "last_modified": stat.st_mtime,
            "created": self._created[(fs, path)],
        }

    def existing(self, fs: str, path: str) -> dict:
        found = self.info(fs, path)
        if found is None:
            raise DfsError(404, "PathNotFound", "The specified path does not exist.")
        return found

    # -- operations ----------------------------------------------------------------------------

    def create_filesystem(self, fs: str) -> None:
        if self.disk(fs).is_dir():
            raise DfsError(409, "FilesystemAlreadyExists", "The specified filesystem already exists.")
        self.disk(fs).mkdir(parents=True)

    def delete_filesystem(self, fs: str) -> None:
        self.require_filesystem(fs)
        shutil.rmtree(self.disk(fs))
        self._forget(fs, "")

    def _make_parents(self, fs: str, path: str) -> None:
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            parent = "/".join(parts[:depth])
            target = self.disk(fs, parent)
            if target.is_file():
                raise DfsError(409, "PathConflict", f"The parent path '{parent}' is a file.")
            if not target.exists():
                target.mkdir()
                self._touch(fs, parent)

    def create(self, fs: str, path: str, resource: str, headers) -> dict:
        current = self.info(fs, path)
        check_conditions(headers, current, exists_status=409)
        if current is not None and current["is_dir"] != (resource == "directory"):
            raise DfsError(409, "PathConflict", "The path exists with another resource type.")
        self._make_parents(fs, path)
        target = self.disk(fs, path)
        if resource == "directory":
            target.mkdir(exist_ok=True)
        else:
            target.write_bytes(b"")
            self._staged.pop((fs, path), None)
        self._touch(fs, path)
        return self.info(fs, path)

    def append(self, fs: str, path: str, position: int, data: bytes, headers) -> None:
        current = self.existing(fs, path)
        check_conditions(headers, current)
        if current["is_dir"]:
            raise DfsError(400, "InvalidInput", "Cannot append to a directory.")
        if position < 0:
            raise DfsError(400, "MissingRequiredQueryParameter", "The position query parameter is required.")
        # Positions are checked when flushing, as the service does.
        self._staged.setdefault((fs, path), {})[position] = data

    def flush(self, fs: str, path: str, position: int, retain: bool, headers) -> dict:
        current = self.existing(fs, path)
        check_conditions(headers, current)
        staged = self._staged.get((fs, path), {})
        cursor, pieces = current["length"], []
        while cursor < position and cursor in staged:
            pieces.append(staged[cursor])
            cursor += len(staged[cursor])
        if cursor != position:
            raise DfsError(400, "InvalidFlushPosition", _FLUSH_POSITION_MESSAGE)
        with self.disk(fs, path).open("ab") as out:
            for piece in pieces:
                out.write(piece)
        remaining = {p: d for p, d in staged.items() if p >= position} if retain else {}
        self._staged[(fs, path)] = remaining
        self._touch(fs, path)
        return self.info(fs, path)

    def rename(self, fs: str, path: str, source_fs: str, source: str, headers) -> dict:
        self.require_filesystem(source_fs)
        found = self.info(source_fs, source)
        if found is None:
            raise DfsError(404, "SourcePathNotFound", "The source path for a rename operation does not exist.")
        check_source_conditions(headers, found)
        current = self.info(fs, path)
        check_conditions(headers, current, exists_status=409)
        if source_fs == fs and _within(path, source):
            raise DfsError(400, "InvalidDestinationPath", "The destination is inside the source.")
        if current is not None and current["is_dir"]:
            raise DfsError(409, "PathAlreadyExists", "The destination path is an existing directory.")
        if _parent(path) and not self.disk(fs, _parent(path)).is_dir():
            raise DfsError(
                404,
                "RenameDestinationParentPathNotFound",
                "The parent directory of the destination path does not exist.",
            )
        self.disk(source_fs, source).replace(self.disk(fs, path))
        for table in (self._etags, self._created, self._staged):
            for key in [k for k in table if k[0] == source_fs and _within(k[1], source)]:
                table[(fs, path + key[1][len(source):])] = table.pop(key)
        return self.info(fs, path)

    def read(self, fs: str, path: str) -> tuple[dict, bytes]:
        current = self.existing(fs, path)
        data = b"" if current["is_dir"] else self.disk(fs, path).read_bytes()
        return current, data

    def delete(self, fs: str, path: str, recursive: bool, headers) -> None:
        current = self.existing(fs, path)
        check_conditions(headers, current)
        target = self.disk(fs, path)
        if current["is_dir"]:
            if any(target.iterdir()) and not recursive:
                raise DfsError(409, "DirectoryNotEmpty", "The recursive query parameter value must be true to delete a non-empty directory.")
            shutil.rmtree(target)
        else:
            target.unlink()
        self._forget(fs, path)

    def list(self, fs: str, directory: str, recursive: bool) -> list[dict]:
        if directory:
            folder = self.existing(fs, directory)
            if not folder["is_dir"]:
                return [folder]
        base = self.disk(fs, directory)
        found = base.rglob("*") if recursive else base.iterdir()
        names = sorted(p.relative_to(self.disk(fs)).as_posix() for p in found)
        return [self.info(fs, name) for name in names]


_FLUSH_POSITION_MESSAGE = (
    "The uploaded data is not contiguous or the position query parameter value is not equal "
    "to the length of the file after appending the uploaded data."
)


def _etag_matches(condition: str, etag: str) -> bool:
    return any(c.strip() in ("*", etag) for c in condition.split(","))


def check_conditions(headers, current: Optional[dict], exists_status: int = 412) -> None:
    """If-Match / If-None-Match against the destination; create and rename answer 409 for `*`."""
    if_match, if_none_match = headers.get("If-Match"), headers.get("If-None-Match")
    if if_none_match is not None and current is not None:
        if if_none_match.strip() == "*" and exists_status == 409:
            raise DfsError(409, "PathAlreadyExists", "The specified path already exists.")
        if _etag_matches(if_none_match, current["etag"]):
            raise DfsError(412, "ConditionNotMet", "The condition specified using HTTP conditional header(s) is not met.")
    if if_match is not None and (current is None or not _etag_matches(if_match, current["etag"])):
        raise DfsError(412, "ConditionNotMet", "The condition specified using HTTP conditional header(s) is not met.")


def check_source_conditions(headers, source: dict) -> None:
    if_match = headers.get("x-ms-source-if-match")
    if_none_match = headers.get("x-ms-source-if-none-match")
    if (if_match is not None and not _etag_matches(if_match, source["etag"])) or (
        if_none_match is not None and _etag_matches(if_none_match, source["etag"])
    ):
        raise DfsError(412, "SourceConditionNotMet", "The source condition specified using HTTP conditional header(s) is not met.")


def _windows_file_time(timestamp: float) -> str:
    return str(int((timestamp + 11644473600) * 10**7))


def _version_headers(found: dict) -> dict[str, str]:
    return {"ETag": found["etag"], "Last-Modified": _http_date(found["last_modified"])}


def _path_headers(found: dict) -> dict[str, str]:
    headers = _version_headers(found) | {
        "x-ms-creation-time": _http_date(found["created"]),
        "x-ms-resource-type": "directory" if found["is_dir"] else "file",
        # Blob-endpoint properties the DataLake SDK reads from the same HEAD/GET.
        "x-ms-blob-type": "BlockBlob",
        "Content-Type": "application/octet-stream",
        "Accept-Ranges": "bytes",
        "x-ms-lease-state": "available",
        "x-ms-lease-status": "unlocked",
    }
    if found["is_dir"]:
        headers["x-ms-meta-hdi_isfolder"] = "true"
    return headers


def _list_entry(found: dict) -> dict[str, str]:
    entry = {
        "name": found["name"],
        "contentLength": str(found["length"]),
        "lastModified": _http_date(found["last_modified"]),
        "etag": found["etag"].strip('"'),
        "creationTime": _windows_file_time(found["created"]),
        "owner": "$superuser",
        "group": "$superuser",
        "permissions": "rwxr-x---",
    }
    if found["is_dir"]:
        entry["isDirectory"] = "true"
    return entry


def _byte_range(headers) -> Optional[tuple[int, Optional[int]]]:
    spec = headers.get("x-ms-range") or headers.get("Range")
    if not spec:
        return None
    start, _, end = spec.strip().removeprefix("bytes=").partition("-")
    return int(start), int(end) if end else None


def operation_of(method: str, path: str, query: dict[str, str], headers) -> str:
    """The DFS operation a request asks for, by the REST API's method, query and headers."""
    if not path:
        if method == "GET" and query.get("resource") == "filesystem":
            return "list_paths"
        return {
            "PUT": "create_filesystem",
            "DELETE": "delete_filesystem",
            "HEAD": "get_filesystem_properties",
            "GET": "get_filesystem_properties",
        }.get(method, "unsupported")
    if method == "PUT":
        if headers.get("x-ms-rename-source"):
            return "rename"
        return {"file": "create_file", "directory": "create_directory"}.get(
            query.get("resource", ""), "unsupported"
        )
    if method == "PATCH":
        return {"append": "append", "flush": "flush"}.get(query.get("action", ""), "set_properties")
    return {"GET": "read", "HEAD": "get_properties", "DELETE": "delete"}.get(method, "unsupported")


class DfsEmulator:
    """The DFS endpoint on https://127.0.0.1:<free port>, storing under `root` (see module doc)."""

    def __init__(
        self,
        root: Optional[Path] = None,
        filesystems=("workspace",),
        required_token: Optional[str] = None,
    ):
        self._workdir = Path(tempfile.mkdtemp(prefix="dfs-emulator-"))
        self.root = Path(root) if root is not None else self._workdir / "data"
        self.root.mkdir(parents=True, exist_ok=True)
        for name in filesystems:
            (self.root / name).mkdir(exist_ok=True)
        self.required_token = required_token
        self.store = _Store(self.root)
        self.requests: list[RecordedRequest] = []
        self.tokens: list[str] = []
        self.faults: list[Fault] = []
        self._delete_lags: dict[tuple[str, str], int] = {}
        self._pending_deletes: dict[tuple[str, str], int] = {}
        self._state = threading.Lock()
        self._server: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None
        self.ca_path: Optional[str] = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> "DfsEmulator":
        cert_path, key_path = _self_signed_certificate(self._workdir)
        self.ca_path = str(cert_path)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_path, key_path)
        server = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        server.socket = context.wrap_socket(
            server.socket, server_side=True, do_handshake_on_connect=False
        )
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.05,), name="dfs-emulator", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)
            self._server = None
        shutil.rmtree(self._workdir, ignore_errors=True)

    def __enter__(self) -> "DfsEmulator":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def filesystem_url(self, filesystem: str) -> str:
        return f"{self.url}/{filesystem}"

    # -- test controls -----------------------------------------------------------------------

    def inject(self, **settings) -> Fault:
        """Answer the next matching requests with a fault; see `Fault` for the settings."""
        fault = Fault(**settings)
        with self._state:
            self.faults.append(fault)
        return fault

    def defer_delete(self, path: str, requests: int) -> None:
        """The next delete of "/<filesystem>/<path>" succeeds, but the path stays for N requests."""
        fs, _, rest = path.strip("/").partition("/")
        with self._state:
            self._delete_lags[(fs, rest)] = requests

    def recorded(self, operation: Optional[str] = None, path: Optional[str] = None) -> list[RecordedRequest]:
        """Requests seen so far, optionally only one operation and/or a path pattern."""
        with self._state:
            return [
                r
                for r in self.requests
                if (operation is None or r.operation == operation)
                and (path is None or fnmatch.fnmatchcase(r.path, path))
            ]

    def clear_records(self) -> None:
        with self._state:
            self.requests.clear()
            self.tokens.clear()

    # -- request handling (called from the server's threads) ------------------------------------

    def _take_fault(self, request: RecordedRequest) -> Optional[Fault]:
        with self._state:
            for fault in self.faults:
                if fault.matches(request):
                    fault.times -= 1
                    return fault
        return None

    def _advance_pending_deletes(self) -> None:
        due = []
        with self._state:
            for key in list(self._pending_deletes):
                self._pending_deletes[key] -= 1
                if self._pending_deletes[key] <= 0:
                    due.append(key)
                    del self._pending_deletes[key]
        with self.store.lock:  # never while holding _state: execute() takes them the other way
            for fs, path in due:
                if self.store.info(fs, path) is not None:
                    self.store.delete(fs, path, recursive=True, headers={})

    def _deferred_delete(self, fs: str, path: str) -> bool:
        with self._state:
            if (fs, path) in self._pending_deletes:
                return True
            lag = self._delete_lags.pop((fs, path), None)
            if lag is None:
                return False
            self._pending_deletes[(fs, path)] = lag + 1  # counted down before each request
            return True

    def execute(self, operation, fs, path, query, headers, body) -> tuple[int, dict, bytes]:
        """Run one operation; returns status, headers and body, or raises DfsError."""
        store = self.store
        with store.lock:
            if operation == "create_filesystem":
                store.create_filesystem(fs)
                return 201, {"x-ms-namespace-enabled": "true"}, b""
            store.require_filesystem(fs)
            if operation == "get_filesystem_properties":
                stat = store.disk(fs).stat()
                etag = f'"0x{stat.st_mtime_ns:X}"'
                return 200, {"ETag": etag, "Last-Modified": _http_date(stat.st_mtime),
                             "x-ms-namespace-enabled": "true"}, b""
            if operation == "delete_filesystem":
                store.delete_filesystem(fs)
                return 202, {}, b""
            if operation == "list_paths":
                return self._list(fs, query)
            if operation in ("create_file", "create_directory"):
                found = store.create(fs, path, query["resource"], headers)
                return 201, _path_headers(found) | {"Content-Length": "0"}, b""
            if operation == "rename":
                source = unquote(headers["x-ms-rename-source"].partition("?")[0]).lstrip("/")
                source_fs, _, source_path = source.partition("/")
                if not source_path:
                    raise DfsError(400, "InvalidSourceUri", "The source URI is invalid.")
                found = store.rename(fs, path, source_fs, source_path.strip("/"), headers)
                return 201, _version_headers(found), b""
            if operation == "append":
                store.append(fs, path, int(query.get("position", -1)), body, headers)
                if query.get("flush") == "true":
                    store.flush(fs, path, int(query["position"]) + len(body), False, {})
                return 202, {"x-ms-request-server-encrypted": "true"}, b""
            if operation == "flush":
                retain = query.get("retainUncommittedData") == "true"
                found = store.flush(fs, path, int(query.get("position", -1)), retain, headers)
                return 200, _version_headers(found), b""
            if operation == "set_properties":
                found = store.existing(fs, path)
                return 200, _version_headers(found), b""
            if operation == "get_properties":
                found = store.existing(fs, path)
                return 200, _path_headers(found) | {"Content-Length": str(found["length"])}, b""
            if operation == "read":
                return self._read(fs, path, headers)
            if operation == "delete":
                found = store.existing(fs, path)
                check_conditions(headers, found)
                if not self._deferred_delete(fs, path):
                    store.delete(fs, path, query.get("recursive") == "true", headers)
                return 200, {}, b""
        raise DfsError(400, "UnsupportedOperation", f"The emulator does not implement {operation}.")

    def _list(self, fs: str, query: dict) -> tuple[int, dict, bytes]:
        directory = query.get("directory", "").strip("/")
        entries = self.store.list(fs, directory, query.get("recursive") == "true")
        after = query.get("continuation")
        if after:
            last = base64.urlsafe_b64decode(after.encode()).decode()
            entries = [e for e in entries if e["name"] > last]
        page = entries[: int(query.get("maxResults", 5000))]
        headers = {"Content-Type": "application/json;charset=utf-8"}
        if len(page) < len(entries):
            headers["x-ms-continuation"] = base64.urlsafe_b64encode(page[-1]["name"].encode()).decode()
        body = json.dumps({"paths": [_list_entry(e) for e in page]}).encode()
        return 200, headers, body

    def _read(self, fs: str, path: str, headers) -> tuple[int, dict, bytes]:
        found, data = self.store.read(fs, path)
        response_headers = _path_headers(found)
        wanted = _byte_range(headers)
        if wanted is None:
            return 200, response_headers, data
        start, end = wanted
        if start >= len(data):
            error = DfsError(416, "InvalidRange", "The range specified is invalid for the current size of the resource.")
            error.headers = {"Content-Range": f"bytes */{len(data)}"}
            raise error
        end = len(data) - 1 if end is None else min(end, len(data) - 1)
        response_headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
        return 206, response_headers, data[start : end + 1]


def _error_body(error: DfsError, request_id: str) -> bytes:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f0Z")
    message = f"{error.message}\nRequestId:{request_id}\nTime:{now}"
    return json.dumps({"error": {"code": error.code, "message": message}}).encode()


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # Clients that give up (timeouts, dropped faults) close their end mid-answer.
        pass


def _handler_for(emulator: DfsEmulator):
    class Handler(_DfsRequestHandler):
        pass

    Handler.emulator = emulator
    return Handler


class _DfsRequestHandler(BaseHTTPRequestHandler):
    emulator: DfsEmulator
    protocol_version = "HTTP/1.1"
    server_version = "Windows-Azure-HDFS/1.0"
    sys_version = "Microsoft-HTTPAPI/2.0"
    timeout = 30  # idle keep-alive connections close after this

    def setup(self):
        super().setup()
        try:
            self.request.do_handshake()
        except (ssl.SSLError, OSError):
            self.close_connection = True
            self.rfile = self.wfile = _Closed()

    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass

    def do_GET(self):
        self._handle()

    do_PUT = do_PATCH = do_DELETE = do_HEAD = do_POST = do_GET

    def _handle(self):
        emulator = self.emulator
        url = urlsplit(self.path)
        fs, _, path = unquote(url.path).lstrip("/").partition("/")
        path = path.strip("/")
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        record = RecordedRequest(
            method=self.command,
            path=f"/{fs}/{path}" if path else f"/{fs}",
            query=query,
            headers={
                k: ("Bearer <redacted>" if k.lower() == "authorization" else v)
                for k, v in self.headers.items()
            },
            operation=operation_of(self.command, path, query, self.headers),
        )
        with emulator._state:
            emulator.requests.append(record)
        emulator._advance_pending_deletes()
        self.request_id = str(uuid.uuid4())

        error = self._authentication_error()
        fault = None if error else emulator._take_fault(record)
        if fault is not None and not fault.after_operation and self._apply(fault, record):
            return
        if error is None:
            try:
                status, headers, payload = emulator.execute(
                    record.operation, fs, path, query, self.headers, body
                )
            except DfsError as failure:
                error = failure
        if fault is not None and fault.after_operation and self._apply(fault, record):
            return
        if error is not None:
            status, headers = error.status, {
                "x-ms-error-code": error.code,
                "Content-Type": "application/json;charset=utf-8",
                **getattr(error, "headers", {}),
            }
            payload = _error_body(error, self.request_id)
        self._respond(record, status, headers, payload)

    def _authentication_error(self) -> Optional[DfsError]:
        authorization = self.headers.get("Authorization", "")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token:
            return DfsError(401, "InvalidAuthenticationInfo", "Authentication information is not given in the correct format.")
        with self.emulator._state:
            self.emulator.tokens.append(token)
        required = self.emulator.required_token
        if required is not None and token != required:
            return DfsError(401, "InvalidAuthenticationInfo", "Server failed to authenticate the request.")
        return None

    def _apply(self, fault: Fault, record: RecordedRequest) -> bool:
        """Sleep, drop or answer as the fault says; True when the request is answered (or dropped)."""
        if fault.delay:
            time.sleep(fault.delay)
        if fault.drop:
            self.close_connection = True
            try:
                self.request.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return True
        if fault.status < 400:  # a pure delay
            return False
        error = DfsError(fault.status, fault.code or DEFAULT_ERROR_CODES.get(fault.status, "InternalError"), fault.message)
        headers = {
            "x-ms-error-code": error.code,
            "Content-Type": "application/json;charset=utf-8",
            **fault.headers,
        }
        self._respond(record, error.status, headers, _error_body(error, self.request_id))
        return True

    def _respond(self, record: RecordedRequest, status: int, headers: dict, payload: bytes) -> None:
        record.status = status  # before answering, so a test reading it after the call sees it
        self.send_response(status)
        version = self.headers.get("x-ms-version") or API_VERSION
        common = {"x-ms-request-id": self.request_id, "x-ms-version": version}
        client_request_id = self.headers.get("x-ms-client-request-id")
        if client_request_id:
            common["x-ms-client-request-id"] = client_request_id
        headers = common | headers
        headers.setdefault("Content-Length", str(len(payload)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)


class _Closed:
    """Stands in for the streams of a connection whose TLS handshake failed."""

    def readline(self, *args):
        return b""

    def read(self, *args):
        return b""

    def write(self, data):
        return len(data)

    def flush(self):
        pass

    def close(self):
        pass

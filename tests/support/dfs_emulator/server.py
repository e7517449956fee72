"""The emulator's HTTPS server: authentication, records, faults, and dispatch to the store."""

from __future__ import annotations

import fnmatch
import shutil
import socket
import ssl
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from .faults import Fault, RecordedRequest
from .store import DfsError, PathStore, check_conditions
from .tls import self_signed_certificate
from .wire import (
    API_VERSION,
    DEFAULT_ERROR_CODES,
    byte_range,
    error_body,
    http_date,
    list_page,
    operation_of,
    path_headers,
    version_headers,
)

_BEARER_NEEDS_VERSION_MESSAGE = (
    "Server failed to authenticate the request. Make sure the value of Authorization header is "
    "formed correctly including the signature. "
    "Authentication scheme Bearer is not supported in this version."
)


class DfsEmulator:
    """The DFS endpoint on https://127.0.0.1:<free port> (see the package doc). Stores under
    `root`, or in a temporary folder removed at stop; `filesystems` exist from the start."""

    def __init__(
        self,
        root: Path | None = None,
        filesystems=("workspace",),
        required_token: str | None = None,
    ):
        self._workdir = Path(tempfile.mkdtemp(prefix="dfs-emulator-"))
        self.root = Path(root) if root is not None else self._workdir / "data"
        self.root.mkdir(parents=True, exist_ok=True)
        for name in filesystems:
            (self.root / name).mkdir(exist_ok=True)
        self.required_token = required_token
        self.store = PathStore(self.root)
        self.requests: list[RecordedRequest] = []
        self.tokens: list[str] = []
        self.faults: list[Fault] = []
        self._delete_lags: dict[tuple[str, str], int] = {}
        self._pending_deletes: dict[tuple[str, str], int] = {}
        self._state = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.ca_path: str | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> DfsEmulator:
        cert_path, key_path = self_signed_certificate(self._workdir)
        self.ca_path = str(cert_path)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_path, key_path)
        server = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="dfs-emulator", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)
            self._server = None
        shutil.rmtree(self._workdir, ignore_errors=True)

    def __enter__(self) -> DfsEmulator:
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

    def recorded(self, operation: str | None = None, path: str | None = None) -> list[RecordedRequest]:
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

    def _take_fault(self, request: RecordedRequest) -> Fault | None:
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
                return (
                    200,
                    {"ETag": etag, "Last-Modified": http_date(stat.st_mtime), "x-ms-namespace-enabled": "true"},
                    b"",
                )
            if operation == "delete_filesystem":
                store.delete_filesystem(fs)
                return 202, {}, b""
            if operation == "list_paths":
                return self._list(fs, query)
            if operation in ("create_file", "create_directory"):
                found = store.create(fs, path, query["resource"], headers)
                return 201, path_headers(found) | {"Content-Length": "0"}, b""
            if operation == "rename":
                source = unquote(headers["x-ms-rename-source"].partition("?")[0]).lstrip("/")
                source_fs, _, source_path = source.partition("/")
                if not source_path:
                    raise DfsError(400, "InvalidSourceUri", "The source URI is invalid.")
                found = store.rename(fs, path, source_fs, source_path.strip("/"), headers)
                return 201, version_headers(found), b""
            if operation == "append":
                store.append(fs, path, int(query.get("position", -1)), body, headers)
                if query.get("flush") == "true":
                    store.flush(fs, path, int(query["position"]) + len(body), False, {})
                return 202, {"x-ms-request-server-encrypted": "true"}, b""
            if operation == "flush":
                retain = query.get("retainUncommittedData") == "true"
                found = store.flush(fs, path, int(query.get("position", -1)), retain, headers)
                return 200, version_headers(found), b""
            if operation == "set_properties":
                found = store.existing(fs, path)
                return 200, version_headers(found), b""
            if operation == "get_properties":
                found = store.existing(fs, path)
                return 200, path_headers(found) | {"Content-Length": str(found["length"])}, b""
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
        max_results = int(query.get("maxResults", 5000))
        return (200, *list_page(entries, query.get("continuation"), max_results))

    def _read(self, fs: str, path: str, headers) -> tuple[int, dict, bytes]:
        found, data = self.store.read(fs, path)
        response_headers = path_headers(found)
        wanted = byte_range(headers)
        if wanted is None:
            return 200, response_headers, data
        start, end = wanted
        if start >= len(data):
            raise DfsError(
                416,
                "InvalidRange",
                "The range specified is invalid for the current size of the resource.",
                headers={"Content-Range": f"bytes */{len(data)}"},
            )
        end = len(data) - 1 if end is None else min(end, len(data) - 1)
        response_headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
        return 206, response_headers, data[start : end + 1]


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
            headers={k: ("Bearer <redacted>" if k.lower() == "authorization" else v) for k, v in self.headers.items()},
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
                status, headers, payload = emulator.execute(record.operation, fs, path, query, self.headers, body)
            except DfsError as failure:
                error = failure
        if fault is not None and fault.after_operation and self._apply(fault, record):
            return
        if fault is not None and fault.truncate and error is None:
            self._respond(record, status, headers | {"Content-Length": str(len(payload))}, payload[: len(payload) // 2])
            self._hang_up()
            return
        if error is not None:
            self._respond_error(record, error)
        else:
            self._respond(record, status, headers, payload)

    def _authentication_error(self) -> DfsError | None:
        authorization = self.headers.get("Authorization", "")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token:
            return DfsError(
                401,
                "InvalidAuthenticationInfo",
                "Authentication information is not given in the correct format.",
            )
        with self.emulator._state:
            self.emulator.tokens.append(token)
        if (self.headers.get("x-ms-version") or "") < "2017-11-09":
            # Azure Storage takes bearer tokens only from API versions that know them, and the
            # SDK pipeline adds no x-ms-version to a raw request.
            return DfsError(403, "AuthenticationFailed", _BEARER_NEEDS_VERSION_MESSAGE)
        required = self.emulator.required_token
        if required is not None and token != required:
            return DfsError(401, "InvalidAuthenticationInfo", "Server failed to authenticate the request.")
        return None

    def _apply(self, fault: Fault, record: RecordedRequest) -> bool:
        """Sleep, drop or answer as the fault says; True when the request is answered (or dropped)."""
        if fault.delay:
            time.sleep(fault.delay)
        if fault.drop:
            self._hang_up()
            return True
        if fault.truncate:  # answered once carried out
            return False
        if fault.status < 400:  # a pure delay
            return False
        code = fault.code or DEFAULT_ERROR_CODES.get(fault.status, "InternalError")
        self._respond_error(record, DfsError(fault.status, code, fault.message, fault.headers))
        return True

    def _hang_up(self) -> None:
        self.close_connection = True
        try:
            self.request.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _respond_error(self, record: RecordedRequest, error: DfsError) -> None:
        headers = {
            "x-ms-error-code": error.code,
            "Content-Type": "application/json;charset=utf-8",
            **error.headers,
        }
        self._respond(record, error.status, headers, error_body(error, self.request_id))

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

"""The DFS REST API's wire format: operations, response headers, listings and error bodies."""

from __future__ import annotations

import base64
import datetime
import json
from email.utils import formatdate

from .store import DfsError

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


def http_date(timestamp: float) -> str:
    return formatdate(timestamp, usegmt=True)


def windows_file_time(timestamp: float) -> str:
    return str(int((timestamp + 11644473600) * 10**7))


def version_headers(found: dict) -> dict[str, str]:
    return {"ETag": found["etag"], "Last-Modified": http_date(found["last_modified"])}


def path_headers(found: dict) -> dict[str, str]:
    headers = version_headers(found) | {
        "x-ms-creation-time": http_date(found["created"]),
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


def list_entry(found: dict) -> dict[str, str]:
    entry = {
        "name": found["name"],
        "contentLength": str(found["length"]),
        "lastModified": http_date(found["last_modified"]),
        "etag": found["etag"].strip('"'),
        "creationTime": windows_file_time(found["created"]),
        "owner": "$superuser",
        "group": "$superuser",
        "permissions": "rwxr-x---",
    }
    if found["is_dir"]:
        entry["isDirectory"] = "true"
    return entry


def list_page(entries: list[dict], continuation: str | None, max_results: int) -> tuple[dict, bytes]:
    """One page of a path listing: headers (with `x-ms-continuation` when more follow) and body."""
    if continuation:
        last = base64.urlsafe_b64decode(continuation.encode()).decode()
        entries = [e for e in entries if e["name"] > last]
    page = entries[:max_results]
    headers = {"Content-Type": "application/json;charset=utf-8"}
    if len(page) < len(entries):
        headers["x-ms-continuation"] = base64.urlsafe_b64encode(page[-1]["name"].encode()).decode()
    return headers, json.dumps({"paths": [list_entry(e) for e in page]}).encode()


def byte_range(headers) -> tuple[int, int | None] | None:
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
        return {"file": "create_file", "directory": "create_directory"}.get(query.get("resource", ""), "unsupported")
    if method == "PATCH":
        return {"append": "append", "flush": "flush"}.get(query.get("action", ""), "set_properties")
    return {"GET": "read", "HEAD": "get_properties", "DELETE": "delete"}.get(method, "unsupported")


def error_body(error: DfsError, request_id: str) -> bytes:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f0Z")
    message = f"{error.message}\nRequestId:{request_id}\nTime:{now}"
    return json.dumps({"error": {"code": error.code, "message": message}}).encode()

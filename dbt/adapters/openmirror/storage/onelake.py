"""A landing zone in OneLake (or any ADLS Gen2 DFS endpoint), through azure-storage-file-datalake.

- Renames are issued as the DFS REST call itself (`PUT <target>` with `x-ms-rename-source`) through
  the SDK's authenticated pipeline: the SDK's own rename has failed against OneLake (spec section 6).
  Create-only renames add `If-None-Match: *`, so the service refuses to replace an existing number.
- Small files are uploaded under an `_`-prefixed temporary name beside the target, then renamed.
- Reads are ranged: a Parquet footer costs two small requests, not a download of the file.
- Throttling and transient faults are retried (retry.py); 401/403 fail at once with the likely cause.
"""

import contextlib
import io
import time
import uuid
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, TypeVar
from urllib.parse import quote

from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    HttpResponseError,
    ResourceExistsError,
    ResourceNotFoundError,
)
from azure.core.rest import HttpRequest
from azure.storage.filedatalake import DataLakeServiceClient

from dbt.adapters.openmirror.errors import (
    LandingZoneAccessError,
    LandingZoneConfigError,
    LandingZoneServiceError,
    PublishError,
    TargetExistsError,
    WriteConflictError,
)
from dbt.adapters.openmirror.storage.azure_auth import STORAGE_SCOPE, AzureAuth
from dbt.adapters.openmirror.storage.base import LandingZoneStorage, StoredFile, Versioned, deletable, text_of
from dbt.adapters.openmirror.storage.location import DfsLocation
from dbt.adapters.openmirror.storage.retry import RetrySettings, TransientFaultRetry

T = TypeVar("T")

#: Upload chunk size and parallel appends for staged change files (streamed from disk).
UPLOAD_CHUNK_BYTES = 8 * 1024 * 1024
UPLOAD_CONCURRENCY = 4
#: How long a rebuild waits for the service to let go of a deleted table folder.
FOLDER_DELETE_TIMEOUT_SECONDS = 300.0
_READ_BUFFER_BYTES = 1024 * 1024
_CREATE_ONLY = {"If-None-Match": "*"}
# Status codes with which the service refuses a delete while it still works on the folder.
_FOLDER_BUSY = (409, 423)


class OneLakeStorage(LandingZoneStorage):
    def __init__(
        self,
        location: DfsLocation,
        credential: Any,
        auth: AzureAuth | None = None,
        retry: RetrySettings = RetrySettings(),
        upload_chunk_bytes: int = UPLOAD_CHUNK_BYTES,
        upload_concurrency: int = UPLOAD_CONCURRENCY,
        folder_delete_timeout: float = FOLDER_DELETE_TIMEOUT_SECONDS,
    ) -> None:
        self.where = location
        self.location = location.url
        self.auth = auth or AzureAuth()
        self.upload_chunk_bytes = upload_chunk_bytes
        self.upload_concurrency = upload_concurrency
        self.folder_delete_timeout = folder_delete_timeout
        self._retry = retry
        service = DataLakeServiceClient(
            location.account_url,
            credential=credential,
            retry_policy=TransientFaultRetry(retry),
            connection_timeout=retry.connection_timeout_seconds,
            read_timeout=retry.read_timeout_seconds,
        )
        self._filesystem = service.get_file_system_client(location.filesystem)

    # -- paths ----------------------------------------------------------------------------------

    def _full(self, path: str) -> str:
        relative = PurePosixPath(path)
        # Some Azure endpoints read a backslash as a separator.
        if relative.is_absolute() or ".." in relative.parts or "\\" in path:
            raise LandingZoneConfigError(f"path {path!r} would leave the landing zone {self.location}")
        inside = "" if relative == PurePosixPath(".") else relative.as_posix()
        return "/".join(p for p in (self.where.root, inside) if p)

    def spark_uri(self, path: str) -> str:
        return self.where.abfss_uri(path)

    # -- errors ---------------------------------------------------------------------------------

    def _call(self, what: str, action: Callable[[], T]) -> T:
        """Run one SDK call; turn what the service said into errors a dbt user can act on."""
        try:
            return action()
        except (ResourceNotFoundError, ResourceExistsError):
            raise
        except ClientAuthenticationError as exc:
            raise self._access_error(what, getattr(exc, "status_code", None), exc) from None
        except HttpResponseError as exc:
            if exc.status_code in (401, 403):
                raise self._access_error(what, exc.status_code, exc) from None
            raise LandingZoneServiceError(
                self.auth.mask(f"{what} in {self.location} failed: {_describe(exc)}"), exc.status_code
            ) from None
        except AzureError as exc:
            raise LandingZoneServiceError(
                self.auth.mask(f"{what} in {self.location} failed after retries: {exc}")
            ) from None

    def _access_error(self, what: str, status: int | None, exc: HttpResponseError) -> LandingZoneAccessError:
        if status == 401:
            cause = (
                "the service rejected the token. Likely cause: a token for the wrong audience "
                f"(it must be {STORAGE_SCOPE}) or tenant, or an expired secret"
            )
        elif status == 403:
            cause = (
                "the identity is signed in but not allowed to do this. Likely cause: it has no write "
                "permission on the mirrored database item (give it the Contributor role, or higher, "
                "on the workspace)"
            )
        else:
            cause = (
                f"no token could be obtained with auth: {self.auth.method}. Check the sign-in settings "
                "(the profile's tenant_id, client_id and client_secret; for the dbt-openmirror command "
                "--tenant-id, --client-id and AZURE_CLIENT_SECRET) or sign in (az login)"
            )
        detail = _describe(exc) if status else (str(exc).splitlines() or [type(exc).__name__])[0]
        return LandingZoneAccessError(self.auth.mask(f"{what} in {self.location}: {cause}. ({detail})"))

    # -- reading --------------------------------------------------------------------------------

    def list_names(self, folder: str) -> list[str]:
        full = self._full(folder)

        def names() -> list[str]:
            paths = self._filesystem.get_paths(path=full or None, recursive=False)
            return sorted(p.name.rsplit("/", 1)[-1] for p in paths if p.name.strip("/") != full)

        try:
            return self._call(f"listing {folder or '/'}", names)
        except ResourceNotFoundError:
            return []
        except LandingZoneServiceError:
            if self._is_file(full):  # listing a file is refused; it is not a folder
                return []
            raise

    def list_files(self, folder: str) -> list[StoredFile]:
        full = self._full(folder)

        def files() -> list[StoredFile]:
            paths = self._filesystem.get_paths(path=full or None, recursive=False)
            return sorted(
                (
                    StoredFile(
                        p.name.rsplit("/", 1)[-1],
                        bool(p.is_directory),
                        p.content_length or 0,
                        p.last_modified.timestamp(),
                    )
                    for p in paths
                    if p.name.strip("/") != full
                ),
                key=lambda f: f.name,
            )

        try:
            return self._call(f"listing {folder or '/'}", files)
        except ResourceNotFoundError:
            return []
        except LandingZoneServiceError:
            if self._is_file(full):
                return []
            raise

    def _is_file(self, full: str) -> bool:
        try:
            properties = self._filesystem.get_file_client(full).get_file_properties()
        except (ResourceNotFoundError, HttpResponseError):
            return False
        return not (properties.metadata or {}).get("hdi_isfolder")

    def read_text(self, path: str) -> str | None:
        return self._read_whole(self._full(path), path)

    def read_monitoring(self, name: str) -> str | None:
        folder = self.where.monitoring_root
        return None if folder is None else self._read_whole(f"{folder}/{name}", f"../Monitoring/{name}")

    def write_monitoring(self, name: str, text: str) -> bool:
        folder = self.where.monitoring_root
        if folder is None:
            return False
        self._write_via_temporary(f"{folder}/{name}", f"../Monitoring/{name}", text, {})
        return True

    def _read_whole(self, full: str, shown: str) -> str | None:
        client = self._filesystem.get_file_client(full)
        try:
            data = self._call(f"reading {shown}", lambda: client.download_file().readall())
        except ResourceNotFoundError:
            return None
        return text_of(data, f"{self.location}/{shown}")

    def read_versioned(self, path: str) -> Versioned | None:
        client = self._filesystem.get_file_client(self._full(path))
        try:
            download = self._call(f"reading {path}", client.download_file)
            data = self._call(f"reading {path}", download.readall)
        except ResourceNotFoundError:
            return None
        return Versioned(text_of(data, f"{self.location}/{path}"), download.properties.etag)

    def _properties(self, path: str) -> Any:
        client = self._filesystem.get_file_client(self._full(path))
        try:
            return self._call(f"reading the properties of {path}", client.get_file_properties)
        except ResourceNotFoundError:
            raise FileNotFoundError(f"{self.location}/{path}") from None

    def size(self, path: str) -> int:
        return self._properties(path).size

    def last_modified(self, path: str) -> float:
        return self._properties(path).last_modified.timestamp()

    def is_same_file(self, first: str, second: str) -> bool:
        return False  # a rename is one atomic move: it never leaves the file under both names

    def open_read(self, path: str) -> BinaryIO:
        client = self._filesystem.get_file_client(self._full(path))
        size = self.size(path)
        return io.BufferedReader(_RangedReader(self, path, client, size), buffer_size=_READ_BUFFER_BYTES)

    def exists(self, path: str) -> bool:
        return self._exists_full(self._full(path), path or "/")

    def _exists_full(self, full: str, shown: str) -> bool:
        return self._call(f"looking for {shown}", lambda: self._filesystem.get_directory_client(full).exists())

    def create_folder(self, folder: str) -> None:
        directory = self._filesystem.get_directory_client(self._full(folder))
        self._call(f"creating {folder or 'the landing zone'}", directory.create_directory)

    # -- writing --------------------------------------------------------------------------------

    def write_text(self, path: str, text: str, create_only: bool) -> None:
        self._write_small(path, text, _CREATE_ONLY if create_only else {})

    def write_text_if(self, path: str, text: str, expected: str | None) -> str:
        """The rename into place carries `If-Match: <ETag>` (or `If-None-Match: *`), so the
        service itself refuses to replace a version someone else wrote."""
        try:
            etag = self._write_small(path, text, _CREATE_ONLY if expected is None else {"If-Match": expected})
        except TargetExistsError:
            raise WriteConflictError(f"{path} was changed by someone else since it was read") from None
        return etag or self._properties(path).etag

    def _write_small(self, path: str, text: str, conditions: dict[str, str]) -> str | None:
        return self._write_via_temporary(self._full(path), path, text, conditions)

    def _write_via_temporary(self, target_full: str, shown: str, text: str, conditions: dict[str, str]) -> str | None:
        """Upload under a temporary name beside the target, then rename it into place under the
        conditions; the temporary file is deleted if anything fails. Its name starts with '_' so
        the mirror never picks it up."""
        target = PurePosixPath(target_full)
        temporary_full = str(target.with_name(f"_{target.name}.{uuid.uuid4().hex}.tmp"))
        shown_temporary = f"{shown} (temporary)"
        client = self._filesystem.get_file_client(temporary_full)
        data = text.encode("utf-8")
        try:
            self._upload(f"writing {shown_temporary}", client, lambda: contextlib.nullcontext(data), len(data))
            return self._move(temporary_full, target_full, conditions, shown_temporary, shown)
        except BaseException:
            # The failure that matters is the one being raised, not the clean-up's.
            with contextlib.suppress(Exception):
                self._call(f"deleting {shown_temporary}", client.delete_file)
            raise

    def upload_file(self, local_path: Path, path: str) -> None:
        client = self._filesystem.get_file_client(self._full(path))
        length = local_path.stat().st_size
        # Streamed chunk by chunk, never read whole.
        self._upload(
            f"uploading {path}",
            client,
            lambda: open(local_path, "rb"),
            length,
            chunk_size=self.upload_chunk_bytes,
            max_concurrency=self.upload_concurrency,
        )

    def _upload(
        self,
        what: str,
        client: Any,
        open_data: Callable[[], contextlib.AbstractContextManager[Any]],
        length: int,
        **options: Any,
    ) -> None:
        """Upload to a name only this run writes (a staged or temporary one). The SDK flushes with
        `If-Match` of the file it created, so a flush whose answer was lost, sent again, is refused
        (412) because of its own first attempt: the file is then uploaded again whole, which
        replaces nothing of anyone else's. Once: a 412 again is not a lost answer."""

        def send() -> None:
            with open_data() as data:
                self._call(what, lambda: client.upload_data(data, length=length, overwrite=True, **options))

        try:
            send()
        except LandingZoneServiceError as exc:
            if exc.status_code != 412:
                raise
            send()

    def rename_create_only(self, source: str, target: str) -> None:
        self._rename(source, target, _CREATE_ONLY)

    def _rename(self, source: str, target: str, conditions: dict[str, str]) -> str | None:
        return self._move(self._full(source), self._full(target), conditions, source, target)

    def _move(
        self, source_full: str, target_full: str, conditions: dict[str, str], source: str, target: str
    ) -> str | None:
        """Rename by full paths inside the filesystem under the conditions on the target
        (`source` and `target` are shown in messages); the target's new ETag when the answer
        said it."""
        response = self._send_rename(source_full, target_full, conditions, source, target)
        if response.status_code == 404 and _error_code(response) == "RenameDestinationParentPathNotFound":
            parent = str(PurePosixPath(target).parent)
            directory = self._filesystem.get_directory_client(str(PurePosixPath(target_full).parent))
            self._call(f"creating {parent}", directory.create_directory)
            response = self._send_rename(source_full, target_full, conditions, source, target)
        if response.status_code in (200, 201):
            return response.headers.get("ETag")
        code = _error_code(response)
        # A retried rename whose first attempt went through but lost its answer finds its source
        # gone and its target there (or no longer matching its condition). Staged and temporary
        # names belong to one run (run id, random suffix), so nobody else moved the source.
        if response.status_code == 404 and code == "SourcePathNotFound" and self._exists_full(target_full, target):
            return None
        if response.status_code in (409, 412) and (code in ("PathAlreadyExists", "ConditionNotMet") or not code):
            if not self._exists_full(source_full, source):
                return None
            raise TargetExistsError(f"{target} already exists in the landing zone")
        if response.status_code == 404:
            raise FileNotFoundError(f"{self.location}/{source} ({code or 'not found'}): nothing to rename")
        self._call(f"renaming {source} to {target}", lambda: _raise_for(response))
        return None

    def _send_rename(
        self, source_full: str, target_full: str, conditions: dict[str, str], source: str, target: str
    ) -> Any:
        """`PUT <target>` with `x-ms-rename-source`, through the SDK's whole pipeline (bearer
        token, retries, logging with the Authorization header redacted)."""
        client = self._filesystem.get_file_client(target_full)
        headers = {
            "x-ms-rename-source": f"/{quote(self.where.filesystem)}/{quote(source_full)}",
            "x-ms-version": client.api_version,
            "Content-Length": "0",
            **conditions,
        }
        request = HttpRequest("PUT", client.url, headers=headers)
        # The generated client's documented entry point for raw requests; the SDK has no public one.
        generated = client._client
        return self._call(f"renaming {source} to {target}", lambda: generated._send_request(request))

    def delete_file(self, path: str) -> None:
        client = self._filesystem.get_file_client(self._full(deletable(path, self.location).as_posix()))
        try:
            self._call(f"deleting {path}", client.delete_file)
        except ResourceNotFoundError:
            pass

    def delete_folder(self, folder: str) -> None:
        """Delete the folder and wait until it is gone; while the service still holds it (a
        conflict), try again with growing pauses, up to `folder_delete_timeout` seconds."""
        directory = self._filesystem.get_directory_client(self._full(deletable(folder, self.location).as_posix()))
        deadline = time.monotonic() + self.folder_delete_timeout
        pause = self._retry.backoff_seconds
        while True:
            try:
                self._call(f"deleting {folder}", directory.delete_directory)
            except ResourceNotFoundError:
                pass
            except ResourceExistsError:  # 409: the service still holds the folder
                pass
            except LandingZoneServiceError as exc:
                if exc.status_code not in _FOLDER_BUSY:
                    raise
            if not self.exists(folder):
                return
            if time.monotonic() + pause > deadline:
                raise PublishError(
                    f"{self.location}/{folder} is still there {self.folder_delete_timeout:.0f} s after "
                    "deleting it: the mirroring service may still be using it (a table being dropped "
                    "or replicated). Try again in a few minutes."
                )
            time.sleep(pause)
            pause = min(pause * 2, self._retry.max_backoff_seconds)


class _RangedReader(io.RawIOBase):
    """A seekable read-only file whose reads are ranged downloads."""

    def __init__(self, storage: OneLakeStorage, path: str, client: Any, size: int) -> None:
        super().__init__()
        self._storage = storage
        self._path = path
        self._client = client
        self._size = size
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer: Any) -> int:
        length = min(len(buffer), self._size - self._position)
        if length <= 0:
            return 0
        offset = self._position
        data = self._storage._call(
            f"reading {self._path}",
            lambda: self._client.download_file(offset=offset, length=length).readall(),
        )
        buffer[: len(data)] = data
        self._position += len(data)
        return len(data)


def _error_code(response: Any) -> str | None:
    code = response.headers.get("x-ms-error-code")
    if code:
        return code
    try:
        return response.json().get("error", {}).get("code")
    except Exception:  # not JSON: the status says enough
        return None


def _describe(exc: HttpResponseError) -> str:
    if exc.status_code is None:  # no answer, or one cut short
        return f"no complete answer ({(str(exc).splitlines() or [type(exc).__name__])[0]})"
    code = getattr(exc, "error_code", None) or (exc.response and _error_code(exc.response))
    return f"HTTP {exc.status_code} {getattr(code, 'value', code) or exc.reason or ''}".strip()


def _raise_for(response: Any) -> None:
    raise HttpResponseError(response=response)

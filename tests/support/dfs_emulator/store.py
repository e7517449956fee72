"""The emulator's filesystems: committed bytes in a folder; ETags and unflushed appends in memory."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path


class DfsError(Exception):
    """An error answer in the service's format: status, `x-ms-error-code`, JSON body."""

    def __init__(self, status: int, code: str, message: str = "", headers: dict | None = None):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message or code
        self.headers = headers or {}


def _parent(path: str) -> str:
    return path.rpartition("/")[0]


def _within(path: str, folder: str) -> bool:
    return folder == "" or path == folder or path.startswith(folder + "/")


class PathStore:
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

    def info(self, fs: str, path: str) -> dict | None:
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
            raise DfsError(400, "MissingRequiredQueryParameter", "The position parameter is required.")
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
                table[(fs, path + key[1][len(source) :])] = table.pop(key)
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
                raise DfsError(409, "DirectoryNotEmpty", _DIRECTORY_NOT_EMPTY_MESSAGE)
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
_CONDITION_MESSAGE = "The condition specified using HTTP conditional header(s) is not met."
_SOURCE_CONDITION_MESSAGE = "The source condition specified using HTTP conditional header(s) is not met."
_DIRECTORY_NOT_EMPTY_MESSAGE = "The recursive query parameter value must be true to delete a non-empty directory."


def _etag_matches(condition: str, etag: str) -> bool:
    return any(c.strip() in ("*", etag) for c in condition.split(","))


def check_conditions(headers, current: dict | None, exists_status: int = 412) -> None:
    """If-Match / If-None-Match against the destination; create and rename answer 409 for `*`."""
    if_match, if_none_match = headers.get("If-Match"), headers.get("If-None-Match")
    if if_none_match is not None and current is not None:
        if if_none_match.strip() == "*" and exists_status == 409:
            raise DfsError(409, "PathAlreadyExists", "The specified path already exists.")
        if _etag_matches(if_none_match, current["etag"]):
            raise DfsError(412, "ConditionNotMet", _CONDITION_MESSAGE)
    if if_match is not None and (current is None or not _etag_matches(if_match, current["etag"])):
        raise DfsError(412, "ConditionNotMet", _CONDITION_MESSAGE)


def check_source_conditions(headers, source: dict) -> None:
    if_match = headers.get("x-ms-source-if-match")
    if_none_match = headers.get("x-ms-source-if-none-match")
    if (if_match is not None and not _etag_matches(if_match, source["etag"])) or (
        if_none_match is not None and _etag_matches(if_none_match, source["etag"])
    ):
        raise DfsError(412, "SourceConditionNotMet", _SOURCE_CONDITION_MESSAGE)

"""A landing zone in a local (or mounted) folder."""

import errno
import functools
import hashlib
import inspect
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, TypeVar

from dbt.adapters.openmirror.errors import (
    LandingZoneAccessError,
    LandingZoneConfigError,
    PublishError,
    TargetExistsError,
    WriteConflictError,
)
from dbt.adapters.openmirror.rules.landing_zone import STAGING_ROOT
from dbt.adapters.openmirror.storage.base import LandingZoneStorage, StoredFile, Versioned, deletable, text_of

# Deleting a folder's files one by one is not atomic (on OneLake one call deletes a folder): a
# process killed midway would leave a table folder with some data files and no journal or
# metadata. So a folder holding anything is first renamed to `_deleted-<random>` beside the runs'
# staged folders (whole or gone, in one step), then deleted; a kill midway leaves files there that the mirror and
# our tools ignore, and the next delete sweeps them. The '_' keeps the name from being a run id.
DELETED_PREFIX = "_deleted-"


def _version(data: bytes) -> str:
    # Content, not inode or time: an inode number is reused once freed, and every journal
    # carries its writer's lease generation, so a later writer never writes an earlier text.
    return hashlib.sha256(data).hexdigest()


@contextmanager
def _locked_content(target: Path) -> Iterator[bytes | None]:
    """The bytes of the file at `target` (None when there is none), read under an exclusive
    `flock` held until the block ends; a file replaced while we waited for the lock is locked
    again as it is now. Without flock (Windows) the read and the caller's replace are two steps."""
    try:
        import fcntl
    except ImportError:
        yield target.read_bytes() if target.exists() else None
        return
    while True:
        try:
            handle = open(target, "rb")
        except FileNotFoundError:
            yield None
            return
        with handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            locked = os.fstat(handle.fileno())
            try:
                current = os.stat(target)
            except FileNotFoundError:
                current = None
            if current is not None and (current.st_dev, current.st_ino) == (locked.st_dev, locked.st_ino):
                yield handle.read()
                return


def _local_text(path: Path) -> str:
    """A local file's text, its line ends read as newlines as `Path.read_text` reads them (a file
    written in text mode on Windows ends its lines with CRLF)."""
    return text_of(path.read_bytes(), str(path)).replace("\r\n", "\n").replace("\r", "\n")


_REFUSED = {errno.EACCES, errno.EPERM, errno.EROFS}
_Storage = TypeVar("_Storage", bound=type[LandingZoneStorage])


def _access_refusals_named(storage_class: _Storage) -> _Storage:
    """Every public operation fails with a `LandingZoneAccessError` naming the path and the fix
    when the operating system refuses it (not a bare errno, which dbt shows as an "Unhandled
    error")."""

    def named(operation: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(operation)
        def refused_named(self: "LocalStorage", *args: Any, **kwargs: Any) -> Any:
            try:
                return operation(self, *args, **kwargs)
            except OSError as exc:
                if exc.errno not in _REFUSED:
                    raise
                raise LandingZoneAccessError(
                    f"{exc.filename or self.location}: {exc.strerror}. Give the user running dbt-openmirror write "
                    f"access to the landing zone {self.location} and every folder in it (or set landing_zone to a "
                    "folder it can write), then run again: the next run goes on where this one stopped."
                ) from exc

        return refused_named

    for name, member in list(vars(storage_class).items()):
        if inspect.isfunction(member) and not name.startswith("_"):
            setattr(storage_class, name, named(member))
    return storage_class


@_access_refusals_named
class LocalStorage(LandingZoneStorage):
    shared_with_spark = True

    def __init__(self, root: Path) -> None:
        self.root = root
        self.location = str(root)
        self._real_root = root.resolve()

    def _resolve(self, path: str) -> Path:
        relative = PurePosixPath(path)
        # A backslash would be a separator on Windows, where joining it could climb out.
        if relative.is_absolute() or ".." in relative.parts or "\\" in path:
            raise LandingZoneConfigError(f"path {path!r} would leave the landing zone {self.root}")
        joined = self.root.joinpath(*relative.parts)
        # A symbolic link inside the landing zone may point anywhere: nothing is read, written or
        # moved through one that leads out (the local mirror moves processed files).
        try:
            real = joined.resolve()
        except (RuntimeError, OSError) as exc:  # a loop of links (RuntimeError before Python 3.13)
            raise LandingZoneConfigError(f"{joined} cannot be resolved ({exc}): a loop of symbolic links?") from None
        if not real.is_relative_to(self._real_root):
            raise LandingZoneConfigError(
                f"{joined} leads out of the landing zone {self.root} through a symbolic link: "
                "dbt-openmirror reads and writes only inside the landing zone"
            )
        return joined

    def spark_uri(self, path: str) -> str:
        # Hadoop reads the text after file:// as a plain path: no percent-encoding.
        return f"file://{self._resolve(path).as_posix()}"

    def list_names(self, folder: str) -> list[str]:
        try:
            return sorted(os.listdir(self._resolve(folder)))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def list_files(self, folder: str) -> list[StoredFile]:
        try:
            entries = list(os.scandir(self._resolve(folder)))
        except (FileNotFoundError, NotADirectoryError):
            return []
        files = []
        for entry in entries:
            if entry.is_symlink():
                self._resolve(f"{folder}/{entry.name}")  # one leading out is named
            try:
                stat = entry.stat()
            except FileNotFoundError:  # deleted since the listing, or a link to nothing
                if entry.is_symlink():
                    raise LandingZoneConfigError(
                        f"{entry.path} is a symbolic link to {os.readlink(entry.path)}, which does not exist"
                    ) from None
                continue
            files.append(StoredFile(entry.name, entry.is_dir(), stat.st_size, stat.st_mtime))
        return sorted(files, key=lambda f: f.name)

    def exists(self, path: str) -> bool:
        return self._resolve(path).exists()

    def read_text(self, path: str) -> str | None:
        resolved = self._resolve(path)
        try:
            return _local_text(resolved)
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise PublishError(f"{resolved} is a folder where a file is expected; delete it") from None

    def _monitoring_folder(self) -> Path | None:
        # A OneLake item mounted locally (e.g. OneLake file explorer): Files/Monitoring is a sibling.
        if [part.lower() for part in self.root.parts[-2:]] != ["files", "landingzone"]:
            return None
        return self.root.parent / "Monitoring"

    def read_monitoring(self, name: str) -> str | None:
        folder = self._monitoring_folder()
        try:
            return None if folder is None else _local_text(folder / name)
        except FileNotFoundError:
            return None

    def write_monitoring(self, name: str, text: str) -> bool:
        folder = self._monitoring_folder()
        if folder is None:
            return False
        folder.mkdir(parents=True, exist_ok=True)
        os.replace(self._written(folder / name, text), folder / name)
        return True

    @staticmethod
    def _written(target: Path, text: str) -> Path:
        """`text` in a complete temporary file beside `target` (its name starts with '_' so the
        mirror never picks it up)."""
        temporary = target.with_name(f"_{target.name}.{uuid.uuid4().hex}.tmp")
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        return temporary

    def write_text(self, path: str, text: str, create_only: bool) -> None:
        target = self._resolve(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = self._written(target, text)
        if not create_only:
            os.replace(temporary, target)
            return
        try:
            self._link_then_unlink(temporary, target, path)
        finally:
            temporary.unlink(missing_ok=True)

    def read_versioned(self, path: str) -> Versioned | None:
        try:
            data = self._resolve(path).read_bytes()
        except FileNotFoundError:
            return None
        return Versioned(text_of(data, f"{self.location}/{path}"), _version(data))

    def write_text_if(self, path: str, text: str, expected: str | None) -> str:
        if expected is None:
            try:
                self.write_text(path, text, create_only=True)
            except TargetExistsError:
                raise WriteConflictError(f"{path} was written by someone else meanwhile") from None
        else:
            # Readers need no lock: the replace is atomic. Conditional writers queue on the lock.
            with _locked_content(self._resolve(path)) as current:
                if current is None or _version(current) != expected:
                    raise WriteConflictError(f"{path} was changed by someone else since it was read")
                self.write_text(path, text, create_only=False)
        return _version(text.encode("utf-8"))

    def upload_file(self, local_path: Path, path: str) -> None:
        target = self._resolve(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(local_path, target)

    def rename_create_only(self, source: str, target: str) -> None:
        source_path, target_path = self._resolve(source), self._resolve(target)
        target_path.parent.mkdir(parents=True, exist_ok=True)
        self._link_then_unlink(source_path, target_path, target)

    @staticmethod
    def _link_then_unlink(source: Path, target: Path, shown_as: str) -> None:
        # link() is atomic and refuses an existing target, unlike rename() which replaces it.
        try:
            os.link(source, target)
        except FileExistsError:
            raise TargetExistsError(f"{shown_as} already exists in the landing zone") from None
        source.unlink()

    def is_same_file(self, first: str, second: str) -> bool:
        try:
            return os.path.samefile(self._resolve(first), self._resolve(second))
        except FileNotFoundError:
            return False

    def open_read(self, path: str) -> BinaryIO:
        return open(self._resolve(path), "rb")

    def size(self, path: str) -> int:
        return self._resolve(path).stat().st_size

    def last_modified(self, path: str) -> float:
        return self._resolve(path).stat().st_mtime

    def delete_file(self, path: str) -> None:
        self._resolve(deletable(path, self.location).as_posix()).unlink(missing_ok=True)

    def delete_folder(self, folder: str) -> None:
        resolved = self._resolve(deletable(folder, self.location).as_posix())
        try:
            os.rmdir(resolved)  # an empty folder goes in one step, creating nothing elsewhere
        except FileNotFoundError:
            pass
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            staging_root = self._resolve(STAGING_ROOT)
            staging_root.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(resolved, staging_root / f"{DELETED_PREFIX}{uuid.uuid4().hex}")
            except FileNotFoundError:
                pass  # deleted by someone else meanwhile
            except OSError:
                # Not renamed (another device, a share refusing folder renames): file by file.
                shutil.rmtree(resolved)
        self._sweep_deleted()

    def _sweep_deleted(self) -> None:
        """Delete every folder renamed for deletion: the one just renamed, those deletes killed
        midway left, and any another process is deleting right now (both finish it). Each is
        already gone from where it was, so what cannot be deleted now waits for the next sweep."""
        for name in self.list_names(STAGING_ROOT):
            if name.startswith(DELETED_PREFIX):
                shutil.rmtree(self._resolve(f"{STAGING_ROOT}/{name}"), ignore_errors=True)

    def create_folder(self, folder: str) -> None:
        self._resolve(folder).mkdir(parents=True, exist_ok=True)

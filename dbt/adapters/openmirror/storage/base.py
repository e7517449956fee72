"""The one storage interface the publisher talks to. Paths are relative to the landing zone root."""

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO, NamedTuple

from dbt.adapters.openmirror.errors import PublishError, UnsafePathError
from dbt.adapters.openmirror.rules.landing_zone import SCRATCH_FOLDER


def text_of(data: bytes, where: str) -> str:
    """A small file's bytes as text: every file dbt-openmirror reads as text is UTF-8 JSON, and
    one that is not names itself rather than failing as a bare decoding error."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PublishError(f"{where} is not UTF-8 text ({exc}); fix or delete it") from None


def deletable(path: str, location: str) -> PurePosixPath:
    """`path` when it lies strictly inside the landing zone and is not `_scratchPad` itself;
    otherwise UnsafePathError. Every backend's deletes go through this."""
    relative = PurePosixPath(path)
    parts = relative.parts
    if (
        relative.is_absolute()
        or not parts
        or ".." in parts
        or "\\" in path
        or (len(parts) == 1 and parts[0].lower() == SCRATCH_FOLDER.lower())
    ):
        raise UnsafePathError(
            f"refusing to delete {path!r} in the landing zone {location}: only folders and files "
            f"inside it (and not {SCRATCH_FOLDER} itself) are ever deleted"
        )
    return relative


class Versioned(NamedTuple):
    """A small file's text and its version: a token that changes with every write."""

    text: str
    version: str


@dataclass(frozen=True)
class StoredFile:
    """One entry of a folder listing, with the storage's own size and time."""

    name: str
    is_folder: bool
    size: int
    #: Seconds since the epoch, by the storage's clock (as `last_modified`).
    last_modified: float


class LandingZoneStorage(ABC):
    """A landing zone root: a local folder, or OneLake / ADLS Gen2. Nothing else knows which."""

    #: What users see in messages (never a secret).
    location: str
    #: Spark writes where the adapter reads (a local folder): staging needs no upload.
    shared_with_spark: bool = False

    @abstractmethod
    def spark_uri(self, path: str) -> str:
        """A URI under which Spark can write `path` directly."""

    @abstractmethod
    def list_names(self, folder: str) -> list[str]:
        """Names of the files and folders directly in `folder`; empty when it does not exist."""

    @abstractmethod
    def list_files(self, folder: str) -> list[StoredFile]:
        """The entries directly in `folder` with their sizes and times, in name order (one
        listing call, not one per file); empty when it does not exist."""

    @abstractmethod
    def exists(self, path: str) -> bool:
        """Whether a file or folder is at `path` ("" is the landing zone root)."""

    @abstractmethod
    def read_text(self, path: str) -> str | None:
        """A small file's text, or None when it does not exist."""

    @abstractmethod
    def read_monitoring(self, name: str) -> str | None:
        """The mirror's status file `name` beside the landing zone (`<item>/Files/Monitoring/`),
        or None when there is none (or the landing zone is not an item's `Files/LandingZone`)."""

    @abstractmethod
    def write_monitoring(self, name: str, text: str) -> bool:
        """Replace the status file `name` beside the landing zone (`<item>/Files/Monitoring/`) so
        that readers see the whole old or the whole new content; False (nothing written) when the
        landing zone is not an item's `Files/LandingZone`. Only the local mirror writes these."""

    @abstractmethod
    def write_text(self, path: str, text: str, create_only: bool) -> None:
        """Write a small file so that readers see the whole old or the whole new content.

        With create_only, raise TargetExistsError if the file already exists.
        """

    @abstractmethod
    def read_versioned(self, path: str) -> Versioned | None:
        """A small file's text and version, or None when it does not exist."""

    @abstractmethod
    def write_text_if(self, path: str, text: str, expected: str | None) -> str:
        """Replace a small file only if it is still at version `expected` (None: only if there is
        none), atomically with respect to other conditional writes; return the new version.
        Otherwise raise WriteConflictError and change nothing."""

    @abstractmethod
    def upload_file(self, local_path: Path, path: str) -> None:
        """Copy a local file (of any size, streamed) to `path`, replacing what is there."""

    @abstractmethod
    def rename_create_only(self, source: str, target: str) -> None:
        """Move a complete file into place; raise TargetExistsError if `target` exists."""

    @abstractmethod
    def is_same_file(self, first: str, second: str) -> bool:
        """Whether two paths name one file: what a create-only rename stopped between linking
        the target and unlinking the source leaves. Never where renames are atomic moves."""

    @abstractmethod
    def open_read(self, path: str) -> BinaryIO:
        """A seekable binary reader (Parquet footers are read through it)."""

    @abstractmethod
    def size(self, path: str) -> int: ...

    @abstractmethod
    def last_modified(self, path: str) -> float:
        """When `path` was last written, in seconds since the epoch, by the storage's own clock
        (FileNotFoundError when it does not exist)."""

    @abstractmethod
    def delete_file(self, path: str) -> None:
        """Delete one file; nothing happens when it does not exist. Paths that are not
        `deletable` are refused."""

    @abstractmethod
    def delete_folder(self, folder: str) -> None:
        """Delete a folder and everything in it; nothing happens when it does not exist. Paths
        that are not `deletable` are refused."""

    @abstractmethod
    def create_folder(self, folder: str) -> None:
        """Create a folder and its missing parents; nothing happens when it exists."""

    def check_writable(self, probe_folder: str) -> None:
        """Write, read back and delete a probe file; raise with the reason if that fails."""
        probe = f"{probe_folder}/probe.txt"
        self.write_text(probe, "dbt-openmirror write check\n", create_only=True)
        try:
            if self.read_text(probe) != "dbt-openmirror write check\n":
                raise OSError(f"{self.location}: a probe file read back differently")
        finally:
            # The file first: a folder left empty is deleted in place, in one step.
            self.delete_file(probe)
            self.delete_folder(probe_folder)

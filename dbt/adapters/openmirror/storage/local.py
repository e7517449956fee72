"""A landing zone in a local (or mounted) folder."""

import os
import shutil
import uuid
from pathlib import Path, PurePosixPath
from typing import BinaryIO, List, Optional

from dbt.adapters.openmirror.errors import LandingZoneConfigError, TargetExistsError
from dbt.adapters.openmirror.storage.base import LandingZoneStorage


class LocalStorage(LandingZoneStorage):
    shared_with_spark = True

    def __init__(self, root: Path) -> None:
        self.root = root
        self.location = str(root)

    def _resolve(self, path: str) -> Path:
        relative = PurePosixPath(path)
        if relative.is_absolute() or ".." in relative.parts:
            raise LandingZoneConfigError(f"path {path!r} would leave the landing zone {self.root}")
        return self.root.joinpath(*relative.parts)

    def spark_uri(self, path: str) -> str:
        # Hadoop reads the text after file:// as a plain path: no percent-encoding.
        return f"file://{self._resolve(path).as_posix()}"

    def list_names(self, folder: str) -> List[str]:
        try:
            return sorted(os.listdir(self._resolve(folder)))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def read_text(self, path: str) -> Optional[str]:
        try:
            return self._resolve(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def read_monitoring(self, name: str) -> Optional[str]:
        # A OneLake item mounted locally (e.g. OneLake file explorer): Files/Monitoring is a sibling.
        if [part.lower() for part in self.root.parts[-2:]] != ["files", "landingzone"]:
            return None
        try:
            return (self.root.parent / "Monitoring" / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def write_text(self, path: str, text: str, create_only: bool) -> None:
        target = self._resolve(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        # The temporary name starts with '_' so the mirror never picks it up.
        temporary = target.with_name(f"_{target.name}.{uuid.uuid4().hex}.tmp")
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if not create_only:
            os.replace(temporary, target)
            return
        try:
            self._link_then_unlink(temporary, target, path)
        finally:
            temporary.unlink(missing_ok=True)

    def upload_file(self, local_path: Path, path: str) -> None:
        target = self._resolve(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(local_path, target)

    def rename_create_only(self, source: str, target: str) -> None:
        target_path = self._resolve(target)
        target_path.parent.mkdir(parents=True, exist_ok=True)
        self._link_then_unlink(self._resolve(source), target_path, target)

    @staticmethod
    def _link_then_unlink(source: Path, target: Path, shown_as: str) -> None:
        # link() is atomic and refuses an existing target, unlike rename() which replaces it.
        try:
            os.link(source, target)
        except FileExistsError:
            raise TargetExistsError(f"{shown_as} already exists in the landing zone") from None
        source.unlink()

    def open_read(self, path: str) -> BinaryIO:
        return open(self._resolve(path), "rb")

    def size(self, path: str) -> int:
        return self._resolve(path).stat().st_size

    def last_modified(self, path: str) -> float:
        return self._resolve(path).stat().st_mtime

    def delete_file(self, path: str) -> None:
        self._resolve(path).unlink(missing_ok=True)

    def delete_folder(self, folder: str) -> None:
        resolved = self._resolve(folder)
        if resolved.exists():
            shutil.rmtree(resolved)

    def exists(self, path: str) -> bool:
        return self._resolve(path).exists()

    def create_folder(self, folder: str) -> None:
        self._resolve(folder).mkdir(parents=True, exist_ok=True)

"""One replay per mirror at a time, like the one replicator of a mirrored database: an exclusive
lock on a file in the target, which the OS drops when the holding process ends (even killed).
POSIX `flock` or Windows `msvcrt.locking`, imported where used so the CLI starts everywhere."""

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO


@contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold the lock on `path` for the block, waiting for another holder to let go."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        if sys.platform == "win32":
            with _windows_lock(handle):
                yield
        else:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)  # released when the file is closed
            yield


if sys.platform == "win32":  # msvcrt exists only there

    @contextmanager
    def _windows_lock(handle: BinaryIO) -> Iterator[None]:
        import msvcrt

        handle.seek(0)
        while True:
            try:
                msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)  # retries for 10 s, then OSError
                break
            except OSError:
                continue
        try:
            yield
        finally:
            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)

"""Folders no process of this user may create entries in, whoever runs the tests."""

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def unwritable(folder: Path) -> Iterator[Path]:
    """`folder` refuses new entries until the block ends: read-only for an ordinary user, and
    immutable (`chattr +i`) for root, whom permissions do not stop."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield folder
        finally:
            folder.chmod(0o755)
        return
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("running as root on a filesystem without the immutable attribute (chattr +i)")
    try:
        yield folder
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)

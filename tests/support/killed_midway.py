"""A process killed (SIGKILL) in the middle of deleting files, within one test process."""

import os

import pytest


class Killed(BaseException):
    """The process dies here: nothing after it runs, and no `except Exception` stops it."""


def killed_after_unlinks(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    """The process dies at the `os.unlink` after the first `count`; `monkeypatch.undo()` revives it."""
    unlink = os.unlink
    done: list[object] = []

    def unlink_then_die(*args: object, **kwargs: object) -> None:
        if len(done) == count:
            raise Killed
        done.append(args[0])
        unlink(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "unlink", unlink_then_die)

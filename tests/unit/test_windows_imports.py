"""Every module of the product imports where POSIX-only parts are missing (Windows): no fcntl,
no SIGKILL or SIGSTOP. A module that needs them imports or uses them where it runs, so the CLI
and the adapter start everywhere."""

import importlib
import pkgutil
import signal
import sys

import dbt.adapters

import dbt.adapters.openmirror

PRODUCT = "dbt.adapters.openmirror"


def product_modules() -> list[str]:
    found = pkgutil.walk_packages(dbt.adapters.openmirror.__path__, prefix=f"{PRODUCT}.")
    return [PRODUCT, *sorted(module.name for module in found)]


def test_the_product_has_modules_in_every_subpackage():
    names = product_modules()
    # The walk must see the whole tree, or the test below proves nothing.
    for subpackage in ("planning", "publishing", "storage", "tools", "tools.local_mirror", "package", "rules"):
        assert any(name.startswith(f"{PRODUCT}.{subpackage}.") for name in names), subpackage


def test_every_module_imports_without_posix_only_parts(monkeypatch):
    names = product_modules()
    for name in names:  # third-party modules load as usual first: only our own code is in question
        importlib.import_module(name)
    monkeypatch.setattr(dbt.adapters, "openmirror", dbt.adapters.openmirror)  # restored afterwards
    for name in [n for n in sys.modules if n == PRODUCT or n.startswith(f"{PRODUCT}.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "fcntl", None)  # `import fcntl` raises ImportError
    monkeypatch.delattr(signal, "SIGKILL")
    monkeypatch.delattr(signal, "SIGSTOP")
    monkeypatch.setattr(sys, "platform", "win32")
    failed = {}
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:
            failed[name] = f"{type(exc).__name__}: {exc}"
    assert failed == {}

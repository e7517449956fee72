"""Tests inject what they need through a seam the product exposes (the landing-zone factory,
which also takes a OneLake credential); the shipped package has no test hooks and reads no test
switch from the environment."""

import ast
import re
from pathlib import Path

from dbt.adapters.openmirror import storage
from dbt.adapters.openmirror.tools.cli import main

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = [ROOT / "dbt", ROOT / "macros"]
# The switches and tools the tests used to reach into the product with, and the tests' modules.
TEST_ONLY = re.compile(
    r"DBT_OPENMIRROR_(FAIL|FAULT|TEST)\w*|FaultInject|InjectedFault|StaticTokenCredential|\btests\.support\b"
)
# Environment variables the product reads, each documented for users in README.md.
DOCUMENTED_VARIABLES = {"AZURE_CLIENT_SECRET", "DBT_CLOUD_WEBHOOK_SECRET"}


def _shipped_files():
    return sorted(p for folder in SHIPPED for p in folder.rglob("*") if p.suffix in (".py", ".sql", ".yml"))


def _variables_read(tree: ast.Module) -> set:
    """Names passed to os.environ.get / os.getenv / os.environ[...] / `in os.environ`, with
    module constants resolved."""
    constants = {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }

    def name(node):
        if isinstance(node, ast.Constant):
            return node.value
        return constants.get(node.id, f"<{node.id}>") if isinstance(node, ast.Name) else "<expression>"

    def is_environ(node):
        return isinstance(node, ast.Attribute) and node.attr == "environ"

    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute):
            if (node.func.attr == "get" and is_environ(node.func.value)) or node.func.attr == "getenv":
                found.add(name(node.args[0]))
        elif isinstance(node, ast.Subscript) and is_environ(node.value):
            found.add(name(node.slice))
        elif isinstance(node, ast.Compare) and any(is_environ(c) for c in node.comparators):
            found.add(name(node.left))
    return found


def test_the_shipped_package_names_no_test_switch_or_test_module():
    files = _shipped_files()
    assert len(files) > 50
    hits = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in files for m in TEST_ONLY.finditer(p.read_text())]
    assert hits == []


def test_the_shipped_package_imports_nothing_from_the_tests():
    imports = set()
    for path in (p for p in _shipped_files() if p.suffix == ".py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                imports.add(node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                imports.update(alias.name.split(".")[0] for alias in node.names)
    assert "tests" not in imports


def test_every_environment_variable_the_package_reads_is_documented_for_users():
    read = set()
    for path in (p for p in _shipped_files() if p.suffix == ".py"):
        read |= _variables_read(ast.parse(path.read_text()))
    assert read == DOCUMENTED_VARIABLES
    readme = (ROOT / "README.md").read_text()
    assert [v for v in sorted(read) if v not in readme] == []


def test_the_cli_opens_its_landing_zone_through_the_storage_factory(tmp_path, monkeypatch):
    opened = []
    product = storage.open_landing_zone

    def recording(landing_zone, *args, **kwargs):
        opened.append(landing_zone)
        return product(landing_zone, *args, **kwargs)

    monkeypatch.setattr(storage, "open_landing_zone", recording)
    assert main(["validate", str(tmp_path)]) == 0
    assert opened == [str(tmp_path)]


def _imported_at_import_time(tree: ast.Module) -> set:
    """Modules a module imports while it is imported (not inside functions)."""
    names, pending = set(), list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        pending.extend(ast.iter_child_nodes(node))
    return names


def test_the_shipped_package_starts_and_signals_nothing_windows_lacks():
    sources = {p: p.read_text() for p in _shipped_files() if p.suffix == ".py"}
    posix_only = [
        f"{p.relative_to(ROOT)}" for p, text in sources.items() if "fcntl" in _imported_at_import_time(ast.parse(text))
    ]
    signals = [
        f"{p.relative_to(ROOT)}: {m.group(0)}"
        for p, text in sources.items()
        for m in re.finditer(r"\bSIG(KILL|STOP|CONT)\b", text)
    ]
    assert (posix_only, signals) == ([], [])

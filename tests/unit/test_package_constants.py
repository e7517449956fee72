"""The values package mode's Jinja shares with the Python are rendered from the Python
(dbt/adapters/openmirror/package/constants.py) into macros/package/constants.sql."""

import re
from pathlib import Path

import pytest
import yaml

from dbt.adapters.openmirror.package.constants import CONSTANTS_FILE, constants, render
from tests.support.package_macros import PackageMacros

MACROS = Path(__file__).resolve().parents[2] / "macros"
PACKAGE_MACROS = sorted((MACROS / "package").glob("*.sql")) + [MACROS / "materializations" / "open_mirror_package.sql"]


def test_the_checked_in_constants_are_a_fresh_rendering():
    assert (MACROS / "package" / "constants.sql").read_text(encoding="utf-8") == render(), (
        "macros/package/constants.sql is stale: run `python -m dbt.adapters.openmirror.package.constants`"
    )
    # The generator writes into the package's include folder, which in the source tree is macros/
    # (through a symlink); an installed copy must carry the same rendering.
    assert CONSTANTS_FILE.parts[-5:] == ("include", "openmirror", "macros", "package", "constants.sql")
    assert CONSTANTS_FILE.read_text(encoding="utf-8") == render()
    source_tree_copy = MACROS.parent / "dbt" / "include" / "openmirror" / "macros" / "package" / "constants.sql"
    assert source_tree_copy.resolve() == (MACROS / "package" / "constants.sql").resolve()


def test_jinja_reads_the_python_values():
    assert PackageMacros().openmirror_constants() == constants()


def _literals():
    every = constants()
    values = [
        *every["properties"].values(),
        *every["states"].values(),
        every["staging_root"],
        every["manifest_folder"],
        every["reserved"]["row_marker_lower"],
        every["reserved"]["internal_prefix"],
        every["empty_run"],
    ]
    return sorted(set(values))


@pytest.mark.parametrize("path", [p for p in PACKAGE_MACROS if p.name != "constants.sql"], ids=lambda p: p.name)
def test_package_macros_spell_no_shared_value(path):
    """Property keys, manifest states, staging paths and reserved names come from
    openmirror_constants(), not from literals a change in the Python would leave behind."""
    code = re.sub(r"\{#.*?#\}", "", path.read_text(encoding="utf-8"), flags=re.S)
    found = [value for value in _literals() if re.search(rf"""['"]{re.escape(value)}['"/]""", code)]
    assert found == []


def test_the_plugin_and_the_package_are_two_dbt_projects():
    """dbt loads the plugin's macros as an internal project named by the plugin, and refuses two
    projects of one name: a project that installs the package must still run with the plugin."""
    from dbt.adapters.openmirror import Plugin

    plugin = yaml.safe_load((Path(Plugin.include_path) / "dbt_project.yml").read_text())["name"]
    package = yaml.safe_load((MACROS.parent / "dbt_project.yml").read_text())["name"]
    assert Plugin.project_name == plugin != package

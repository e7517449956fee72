"""The integration_tests jaffle shop as dbt-tests-adapter fixtures, and its scenario module."""

import importlib.util
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2] / "integration_tests"

_spec = importlib.util.spec_from_file_location("scenario", PROJECT / "scenario.py")
scenario = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scenario)


def _files(folder: Path) -> dict:
    return {p.name: p.read_text() for p in folder.glob("*") if p.is_file()}


def project_models() -> dict:
    return {"staging": _files(PROJECT / "models" / "staging"), "marts": _files(PROJECT / "models" / "marts")}


def project_seeds() -> dict:
    """The seeds' properties; the CSVs of each day are staged by `scenario.stage_seeds`."""
    return {"seeds.yml": (PROJECT / "seeds" / "seeds.yml").read_text()}


class JaffleShopProject:
    """Mixin for test classes that build the integration_tests project with dbt's fixtures."""

    @pytest.fixture(scope="class")
    def models(self):
        return project_models()

    @pytest.fixture(scope="class")
    def seeds(self):
        return project_seeds()

"""The integration_tests jaffle shop through its four scenario days, published into an item's
`Files/LandingZone` while `dbt-openmirror replay --watch` mirrors it as the service would (and
writes the service's status files beside it, which the restart protocol of day 4's
`--full-refresh` waits on): after every day, the independent replay of each table folder and the
watching mirror's Delta tables (read back without delta-rs) equal the models' output."""

import json
from pathlib import Path

import pytest
from dbt.tests.util import run_dbt_and_capture

from tests.support.delta_reader import read_delta
from tests.support.mirror import (
    assert_mirror_equals,
    findings_for,
    model_output,
    normalized,
    wait_until_mirrored,
    watching_mirror,
)
from tests.support.scenario_project import JaffleShopProject, scenario

COMPLEX_COLUMNS = {"orders": ["skus"]}


def _published(model: str, columns):
    return ", ".join(f"to_json(`{c}`) as `{c}`" if c in COMPLEX_COLUMNS.get(model, []) else f"`{c}`" for c in columns)


# Extended tier: the demo project's four days end to end (a minute and a half). The default run tests
# each capability it touches on its own; the restart protocol's wait for a watching mirror in
# TestPackagePublishWhileTheServiceMirrors.
@pytest.mark.extended
class TestJaffleShopScenario(JaffleShopProject):
    @pytest.fixture(scope="class")
    def landing_zone(self, tmp_path_factory):
        root = tmp_path_factory.mktemp("item") / "Files" / "LandingZone"
        root.mkdir(parents=True)
        return root

    def test_every_day_the_mirror_equals_the_models(self, project, warehouse, landing_zone, tmp_path):
        schema = project.test_schema
        seeds_dir = Path(project.project_root) / "seeds"
        target = tmp_path / "mirror"
        folders = {
            model: landing_zone / f"{'sales' if model == 'order_lines' else schema}.schema" / model
            for model in scenario.MIRRORED_MODELS
        }
        with watching_mirror(landing_zone, target):
            for day, (_, commands) in scenario.DAYS.items():
                scenario.stage_seeds(seeds_dir, day)
                for command in commands:
                    _, output = run_dbt_and_capture(list(command))  # it appends its own flags to the list
                    if "--full-refresh" in command and "build" in command:
                        # The restart protocol: the folder is recreated only once the service
                        # no longer lists the table.
                        assert f"waiting until the mirroring service no longer lists table {schema}.orders" in output
                wait_until_mirrored(landing_zone, target, list(folders.values()))
                for model, folder in folders.items():
                    columns = warehouse.columns(f"{schema}.{model}")
                    expected = f"select {_published(model, columns)} from {schema}.{model}"
                    assert_mirror_equals(warehouse, folder, expected)
                    assert [f for f in findings_for(landing_zone, folder) if f.startswith("ERROR")] == []
                    mirrored = normalized(read_delta(target / folder.parent.name[: -len(".schema")] / model))
                    assert mirrored == model_output(warehouse, expected), f"day {day}: {model}"
        # The service's view beside the landing zone lists every table, none in error.
        service = json.loads((landing_zone.parent / "Monitoring" / "tables.json").read_text())["tables"]
        assert sorted(t["sourceTableName"] for t in service) == sorted(scenario.MIRRORED_MODELS)
        assert all(t["status"] != "Error" for t in service)
        # Day 3's new column reached the mirror; day 4 rebuilt orders from file 1.
        assert "loyalty_tier" in warehouse.columns(f"{schema}.customers")
        orders = folders["orders"]
        assert sorted(p.name for p in orders.rglob("*.parquet")) == ["00000000000000000001.parquet"]

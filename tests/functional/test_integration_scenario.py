"""The integration_tests jaffle shop through its four scenario days: after every day, both the
independent replay of each table folder and the local mirror's Delta tables equal the models'
output."""

from pathlib import Path

from dbt.tests.util import run_dbt

from tests.functional.mirror import assert_local_mirror_equals, assert_mirror_equals, findings_for
from tests.scenario_project import JaffleShopProject, scenario

COMPLEX_COLUMNS = {"orders": ["skus"]}


def _published(model: str, columns):
    return ", ".join(f"to_json(`{c}`) as `{c}`" if c in COMPLEX_COLUMNS.get(model, []) else f"`{c}`" for c in columns)


class TestJaffleShopScenario(JaffleShopProject):
    def test_every_day_the_mirror_equals_the_models(self, project, warehouse, landing_zone, tmp_path):
        schema = project.test_schema
        seeds_dir = Path(project.project_root) / "seeds"
        for day, (_, commands) in scenario.DAYS.items():
            scenario.stage_seeds(seeds_dir, day)
            for command in commands:
                run_dbt(list(command))  # run_dbt appends its own flags to the list it is given
            for model in scenario.MIRRORED_MODELS:
                mirror_schema = "sales" if model == "order_lines" else schema
                folder = landing_zone / f"{mirror_schema}.schema" / model
                columns = warehouse.columns(f"{schema}.{model}")
                expected = f"select {_published(model, columns)} from {schema}.{model}"
                assert_mirror_equals(warehouse, folder, expected)
                assert [f for f in findings_for(landing_zone, folder) if f.startswith("ERROR")] == []
                assert_local_mirror_equals(
                    warehouse, landing_zone, tmp_path / "mirror", mirror_schema, model, expected
                )
        # Day 3's new column reached the mirror; day 4 rebuilt orders from file 1.
        customers = warehouse.columns(f"{schema}.customers")
        assert "loyalty_tier" in customers
        orders_folder = landing_zone / f"{schema}.schema" / "orders"
        assert sorted(p.name for p in orders_folder.glob("*.parquet")) + sorted(
            p.name for p in orders_folder.glob("_ProcessedFiles/*.parquet")
        ) == ["00000000000000000001.parquet"]

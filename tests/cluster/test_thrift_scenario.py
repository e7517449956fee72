"""The jaffle shop scenario over `method: thrift` on a real Spark cluster: the same SQL runs on
the cluster's executors, and after every day each table folder replays to the model output."""

from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from dbt.tests.util import run_dbt

from dbt.adapters.openmirror.storage import LocalStorage
from dbt.adapters.openmirror.tools.local_mirror.replay import LocalMirror
from tests.support.delta_reader import read_delta
from tests.support.mirror_oracle import replay
from tests.support.scenario_project import JaffleShopProject, scenario

pytestmark = [pytest.mark.cluster, pytest.mark.extended]


class TestScenarioOverThrift(JaffleShopProject):
    def test_every_day_the_mirror_equals_the_models(self, project, cluster, landing_zone, tmp_path):
        schema = project.test_schema
        warehouse = cluster["dir"] / "warehouse" / f"{schema}.db"
        for day, (_, commands) in scenario.DAYS.items():
            scenario.stage_seeds(Path(project.project_root) / "seeds", day)
            for command in commands:
                run_dbt(list(command))  # run_dbt appends its own flags to the list it is given
            LocalMirror(LocalStorage(landing_zone), tmp_path / "mirror").replay()
            for model in scenario.MIRRORED_MODELS:
                mirror_schema = "sales" if model == "order_lines" else schema
                model_output = scenario.rows(ds.dataset(warehouse / model, format="parquet").to_table())
                folder = landing_zone / f"{mirror_schema}.schema" / model
                assert scenario.rows(pa.Table.from_pylist(replay(folder))) == model_output, (day, model)
                delta_rows = read_delta(tmp_path / "mirror" / mirror_schema / model)
                assert scenario.rows(pa.Table.from_pylist(delta_rows)) == model_output, (day, model)
        # The work ran on the cluster: the worker started executors for the Thrift server's app.
        assert list((cluster["dir"] / "work").glob("app-*/*/stderr"))

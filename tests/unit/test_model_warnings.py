"""A model run that warned ends with dbt's warn status (counted in WARN=, "warn" in
run_results.json); tests/functional/test_warnings.py runs it through dbt."""

from types import SimpleNamespace

from dbt.artifacts.schemas.results import RunStatus, TestStatus
from dbt.task.run import ModelRunner

import dbt.adapters.openmirror  # noqa: F401  (loading the plugin installs the warn status)
from dbt.adapters.openmirror.run.model_warnings import install
from dbt.adapters.openmirror.run.response import publish_response


def _result(warnings):
    response = publish_response({0: 1}, ["00000000000000000001.parquet"], "s.schema/t", "rebuild", warnings)
    stored = SimpleNamespace(response=response, get=lambda key: None)
    context = {"load_result": lambda name: stored}
    model = SimpleNamespace(unique_id="model.p.t")
    return ModelRunner._build_run_model_result(object.__new__(ModelRunner), model, context)


def test_a_result_with_warnings_has_the_warn_status():
    install()  # again: installing twice wraps once
    warned = _result(["Model 't': rebuilding s.schema/t: x"])
    assert warned.status == TestStatus.Warn and warned.status == "warn"
    assert _result([]).status == RunStatus.Success

"""A model run that warned ends with dbt's `warn` status.

An `open_mirror` run that rebuilt a table nobody asked to rebuild, reloaded it in full, finished
an interrupted publish or took over a dead run's lease did something a user must notice. dbt-core
gives model results no warn status of their own (a model ends `success` or `error`), so two
things are done here, once, when dbt loads the plugin:
- each warning is fired as a dbt warning event through `warn_or_error`, so `--warn-error` (and
  `--warn-error-options`) turn it into an error where it happens, before anything is published;
- a model result whose adapter response lists warnings gets dbt's `warn` status: counted in the
  summary's `WARN=`, listed at the end of the run, `"status": "warn"` in run_results.json.
"""

from typing import Any

from dbt.adapters.events.types import AdapterEventWarning
from dbt.artifacts.schemas.results import TestStatus
from dbt.task.run import ModelRunner
from dbt_common.events.contextvars import get_node_info
from dbt_common.events.functions import warn_or_error

from dbt.adapters.openmirror.text import printable

LOGGER_NAME = "OpenMirror"
#: The adapter response field that carries a run's warnings (response.py).
WARNINGS_FIELD = "warnings"


def warn(message: str) -> None:
    """Log `message` as a dbt warning (an error under --warn-error), its control characters
    escaped: it quotes folder names and key values, which are anyone's text."""
    event = AdapterEventWarning(name=LOGGER_NAME, base_msg=printable(message), args=[], node_info=get_node_info())
    warn_or_error(event)


def _with_warn_status(build: Any) -> Any:
    def build_run_model_result(runner: ModelRunner, model: Any, context: Any, elapsed_time: float = 0.0) -> Any:
        result = build(runner, model, context, elapsed_time)
        if result.adapter_response.get(WARNINGS_FIELD):
            result.status = TestStatus.Warn
        return result

    build_run_model_result.wraps_for_openmirror = True  # type: ignore[attr-defined]
    return build_run_model_result


def install() -> None:
    """Give warned model results the warn status (idempotent: dbt may load the plugin again)."""
    current = ModelRunner._build_run_model_result
    if not getattr(current, "wraps_for_openmirror", False):
        ModelRunner._build_run_model_result = _with_warn_status(current)  # type: ignore[method-assign]

"""Write-audit-publish (model config `publish='after_tests'`): may a held change be published?

`dbt build` runs a model, then its tests. A model with `publish='after_tests'` stages its change
and holds it; at the end of the invocation (an on-run-end hook) the change is published only if
every test of the model ran in this invocation and passed (a test of severity `warn` that found
rows passes: its author chose not to block on it), and is discarded otherwise. A model without
tests has nothing to wait for and publishes.
"""

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dbt.adapters.openmirror.errors import MirrorConfigError
from dbt.adapters.openmirror.run.config import AFTER_TESTS, MirrorConfig

#: The hook a project must run at its end for held changes to be published (README).
AUDIT_HOOK_MACRO = "openmirror_publish_audited"
_PASSING = ("pass", "warn")


@dataclass(frozen=True)
class Verdict:
    publish: bool
    reason: str


def _value(node: Any, name: str) -> Any:
    """A field of a graph node (a dict in `graph`) or of a result's node (an object)."""
    return node.get(name) if isinstance(node, Mapping) else getattr(node, name, None)


def model_relations(nodes: Mapping[str, Any]) -> frozenset[str]:
    """`schema.alias` of every model of the project (`graph.nodes`)."""
    return frozenset(
        f"{_value(node, 'schema')}.{_value(node, 'alias')}"
        for node in nodes.values()
        if _value(node, "resource_type") == "model"
    )


def model_tests(model_id: str, nodes: Mapping[str, Any]) -> list:
    """Ids of the data tests that depend on the model (`graph.nodes`), in name order."""
    found = []
    for unique_id, node in nodes.items():
        depends_on = _value(node, "depends_on") or {}
        upstream = _value(depends_on, "nodes") or []
        if _value(node, "resource_type") == "test" and model_id in upstream:
            found.append(unique_id)
    return sorted(found)


def verdict(model_id: str, nodes: Mapping[str, Any], results: Iterable[Any]) -> Verdict:
    """Publish when every test of the model ran in this invocation and passed."""
    tests = model_tests(model_id, nodes)
    if not tests:
        return Verdict(True, "the model has no tests")
    status = {_value(_value(r, "node"), "unique_id"): str(_value(r, "status")) for r in results}
    not_run = [t for t in tests if t not in status]
    failed = [f"{t} ({status[t]})" for t in tests if t in status and status[t] not in _PASSING]
    if failed:
        return Verdict(False, f"its tests did not pass: {', '.join(failed)}")
    if not_run:
        return Verdict(
            False,
            f"its tests did not run in this invocation ({', '.join(not_run)}); "
            "run them with the model (dbt build, without excluding them)",
        )
    return Verdict(True, f"its {len(tests)} tests passed")


def unaudited_reason(
    publish: str, reports_only: bool, model_id: str, nodes: Mapping[str, Any], selected: Collection[str]
) -> str | None:
    """Why a change held for its tests (`publish`) could not be published in this invocation, known
    before the model runs: some of its tests are not selected (`dbt run` selects none). Such a run
    only reports what it would publish, as a dry run. None for a run that only reports anyway (a dry
    run, `--empty`), when every test is selected, and when the selection does not name the model
    itself (then it tells nothing)."""
    if publish != AFTER_TESTS or reports_only or model_id not in selected:
        return None
    not_selected = [t for t in model_tests(model_id, nodes) if t not in selected]
    if not not_selected:
        return None
    return (
        f"publish='after_tests' publishes a change only when its tests pass in the same invocation, and "
        f"this invocation does not run {', '.join(not_selected)} (dbt run selects none): nothing was "
        "published, and the run reports what it would publish, as a dry run does. Select its tests with "
        "the model (dbt build, without excluding them or narrowing --indirect-selection)"
    )


def hook_configured(nodes: Mapping[str, Any]) -> str | None:
    """The id of an on-run-end hook that publishes held changes, if the project has one."""
    for unique_id, node in nodes.items():
        if _value(node, "resource_type") == "operation" and AUDIT_HOOK_MACRO in (_value(node, "raw_code") or ""):
            return unique_id
    return None


def require_audit_hook(mirror: MirrorConfig, nodes: Mapping[str, Any]) -> None:
    """A model with publish='after_tests' fails before anything runs when no hook would publish it."""
    if mirror.publish == AFTER_TESTS and hook_configured(nodes) is None:
        raise MirrorConfigError(
            f"Model '{mirror.model}': publish='after_tests' holds the change until the model's "
            f"tests passed, which is decided at the end of the invocation: add "
            f'on-run-end: ["{{{{ {AUDIT_HOOK_MACRO}(results) }}}}"] to dbt_project.yml. '
            "Nothing was published."
        )

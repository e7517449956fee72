"""Package mode's macros (macros/package/ with the shared macros/sql/), rendered as dbt renders them.

dbt's own Jinja environment and context members (`return`, `fromjson`, `tojson`, `local_md5`,
`modules`, `exceptions.raise_compiler_error`) are used; the macros reach each other as
`dbt_openmirror.<name>`, as in an installed package. What a test must stand in for is passed as
context: `config`, `var`, `this`, `model` — plain values. `exceptions.warn` records the warnings.
"""

import re
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from dbt.context.base import BaseContext, get_context_modules
from dbt.context.exceptions_jinja import raise_compiler_error
from dbt.exceptions import CompilationError
from dbt_common.clients.jinja import MacroFuzzEnvironment, get_dbt_macro_name, get_environment
from dbt_common.exceptions.macros import MacroReturn

__all__ = ["CompilationError", "PackageMacros", "constants"]

MACROS = Path(__file__).resolve().parents[2] / "macros"


@cache
def _template():
    environment: MacroFuzzEnvironment = get_environment()
    paths = sorted((MACROS / "package").glob("*.sql")) + sorted((MACROS / "sql").glob("*.sql"))
    source = "\n".join(path.read_text() for path in paths)
    # dbt refuses a package that defines a macro twice; one template would keep the last silently.
    names = re.findall(r"\{%-?\s*macro\s+(\w+)", source)
    twice = sorted({name for name in names if names.count(name) > 1})
    assert not twice, f"macros defined twice: {twice}"
    return environment.from_string(source)


class Config:
    """dbt's `config` in a model: `config.get(name)` of the model's settings."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = dict(values)

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)


class PackageMacros:
    """The macros, called by name: `macros.openmirror_resolve_keys(unique_key, specs)` returns
    what the macro returns (`return(...)`), or raises CompilationError."""

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        variables: Mapping[str, Any] | None = None,
        this: Any = None,
        model: Any = None,
        **context: Any,
    ) -> None:
        self.warnings: list[str] = []
        values = dict(variables or {})

        def var(name: str, default: Any = None) -> Any:
            return values.get(name, default)

        self.namespace = SimpleNamespace()
        module = _template().make_module(
            vars={
                "return": BaseContext._return,
                "fromjson": BaseContext.fromjson,
                "tojson": BaseContext.tojson,
                "local_md5": BaseContext.local_md5,
                "modules": get_context_modules(),
                "exceptions": {"raise_compiler_error": raise_compiler_error, "warn": self._warn},
                "config": Config(config or {}),
                "var": var,
                "this": this,
                "model": model or SimpleNamespace(name="m", unrendered_config=dict(config or {})),
                "dbt_openmirror": self.namespace,
                **context,
            }
        )
        prefix = get_dbt_macro_name("")
        for name, macro in vars(module).items():
            if name.startswith(prefix):
                setattr(self.namespace, name[len(prefix) :], self._returning(macro))

    def _warn(self, message: str) -> str:
        self.warnings.append(message)
        return ""

    @staticmethod
    def _returning(macro: Callable) -> Callable:
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return macro(*args, **kwargs)
            except MacroReturn as returned:
                return returned.value

        return call

    def __getattr__(self, name: str) -> Callable:
        return getattr(self.namespace, name)


def constants() -> dict[str, Any]:
    """`openmirror_constants()` as the macros see it."""
    return PackageMacros().openmirror_constants()

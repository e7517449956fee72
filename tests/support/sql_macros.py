"""The SQL macros of macros/sql/, rendered with plain Jinja as a stock dbt project renders them.

The macros take plain values and use no dbt context, so one template of all the files gives
every macro with the others in reach, as dbt's macro namespace does.
"""

from functools import cache
from pathlib import Path
from types import SimpleNamespace

import jinja2

MACRO_FOLDER = Path(__file__).resolve().parents[2] / "macros" / "sql"


@cache
def sql_macros():
    """The template module: each macro is an attribute, called with keyword or positional values."""
    source = "\n".join(path.read_text() for path in sorted(MACRO_FOLDER.glob("*.sql")))
    environment = jinja2.Environment(extensions=["jinja2.ext.do"], undefined=jinja2.StrictUndefined)
    # The macros call each other as `dbt_openmirror.<name>`, the package's namespace in dbt.
    namespace = SimpleNamespace()
    environment.globals["dbt_openmirror"] = namespace
    module = environment.from_string(source).module
    namespace.__dict__.update((name, getattr(module, name)) for name in dir(module) if name.startswith("openmirror_"))
    return module

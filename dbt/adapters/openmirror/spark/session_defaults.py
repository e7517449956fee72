"""Spark settings a `method: session` profile gets unless it sets them itself.

- Where the session keeps its tables: Spark puts its warehouse (`spark-warehouse`), its Hive
  metastore (`metastore_db`, embedded Derby) and `derby.log` in the current directory, so a
  `dbt run` started from another folder found no snapshots and rebuilt every table. They go in
  the dbt project's folder: where they land today when dbt runs there, so nothing moves.
- Spark's console output: stage progress bars and Spark's own log lines (failed tasks' stack
  traces, metastore warnings) are interleaved with dbt's; a failing statement's error reaches
  dbt anyway, shortened, with its full text in dbt's debug log.

Only the first SparkSession of a process applies static settings; dbt creates it from these.
"""

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dbt.adapters.spark.connections import SparkConnectionMethod

CONSOLE_DEFAULTS = {
    "spark.ui.showConsoleProgress": "false",
    # Spark's own log: set to WARN or INFO in the profile to see it again.
    "spark.log.level": "OFF",
}
# Hive reads the metastore URL under either key; spark-submit warns about the bare one.
METASTORE_URL_KEYS = ("spark.hadoop.javax.jdo.option.ConnectionURL", "javax.jdo.option.ConnectionURL")


def session_parameters(user: Mapping[str, Any], project_root: Path | None) -> dict[str, Any]:
    """The profile's `server_side_parameters` with defaults for the keys it does not set."""
    defaults: dict[str, Any] = dict(CONSOLE_DEFAULTS)
    if project_root is not None:
        defaults["spark.sql.warehouse.dir"] = str(project_root / "spark-warehouse")
        if not any(key in user for key in METASTORE_URL_KEYS):
            metastore = (project_root / "metastore_db").as_posix()
            defaults[METASTORE_URL_KEYS[0]] = f"jdbc:derby:;databaseName={metastore};create=true"
        # Spark splits this option string as a shell would (CommandBuilderUtils.parseOptionString).
        defaults["spark.driver.extraJavaOptions"] = f"-Dderby.system.home={shlex.quote(str(project_root))}"
    return {**defaults, **user}


def apply_session_defaults(config: Any) -> None:
    """Before the first connection opens: a session profile's parameters get the defaults, its
    tables the dbt project's folder (none for `dbt debug`, which loads a profile only and
    touches no table)."""
    credentials = config.credentials
    if credentials.method != SparkConnectionMethod.SESSION:
        return
    root = getattr(config, "project_root", None)
    credentials.server_side_parameters = session_parameters(
        credentials.server_side_parameters, Path(root).resolve() if root else None
    )

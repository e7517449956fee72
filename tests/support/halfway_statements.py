"""Spark statements cut off halfway, the way a kill (SIGKILL, a lost machine) leaves them on the
Hive metastore, where a managed table's folder and its catalog entry change in two steps:

- `create table T ... as select`: Spark writes T's folder, then registers T. Cut off: a folder
  holding a task's uncommitted file under `_temporary/` (the odd creates) or the committed files
  with `_SUCCESS` (the even ones), and no table T.
- `alter table A rename to B`: the metastore moves A's folder to B's, then renames the entry.
  Cut off: A still registered, its folder (and rows) at B's.
- `drop table T`: the metastore unregisters T, then deletes its folder. Cut off: the folder stays.

Each of these was seen after real SIGKILLs of `dbt run` processes sharing one warehouse.
`cut_off_at(n, log)` cuts off the n-th such statement of the dbt invocations run in this process,
then fails every later statement and landing-zone operation, as after a crash; with n = 0 it cuts
off nothing and logs them.
"""

import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from tests.support.faults import FaultInjector, InjectedFault, injected

_NAME = r"`?([\w.]+?)`?"
_QUERY_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_CREATE = re.compile(rf"^\s*create\s+table\s+(?:if\s+not\s+exists\s+)?{_NAME}\s", re.IGNORECASE)
_RENAME = re.compile(rf"^\s*alter\s+table\s+{_NAME}\s+rename\s+to\s+{_NAME}\s*$", re.IGNORECASE)
_DROP = re.compile(rf"^\s*drop\s+table\s+(?:if\s+exists\s+)?{_NAME}\s*$", re.IGNORECASE)


def _path(uri: str) -> Path:
    return Path(urlparse(uri).path)


def _location(spark: SparkSession, kind: str, name: str) -> Path | None:
    """A table's or a schema's folder, as `describe ... extended` reports it (None: there is none)."""
    try:
        rows = spark.sql(f"describe {kind} extended {name}").collect()
    except Exception:  # no such table
        return None
    found = [row[1] for row in rows if row[0] == "Location"]
    return _path(found[0]) if found else None


def new_table_folder(spark: SparkSession, name: str) -> Path:
    """Where the catalog puts a managed table of this (schema-qualified) name."""
    schema, _, table = name.rpartition(".")
    folder = _location(spark, "schema", schema)
    assert folder is not None, schema
    return folder / table.lower()


class StatementCutter:
    """Counts the statements that change a managed table's folder; cuts off the `cut_at`-th."""

    def __init__(self, cut_at: int, log: list[str], injector: FaultInjector) -> None:
        self.cut_at = cut_at
        self.log = log
        self.injector = injector
        self.count = 0

    def before(self, sql: str) -> None:
        if self.injector.crashed:
            raise InjectedFault(f"after the statement cut off halfway: {sql.strip()[:80]}")
        statement = _QUERY_COMMENT.sub("", sql).strip()
        spark = SparkSession.builder.getOrCreate()
        create, rename, drop = _CREATE.match(statement), _RENAME.match(statement), _DROP.match(statement)
        if create:
            self._counted(f"create {create.group(1)}", lambda: self._create_cut_off(spark, create.group(1)))
        elif rename and _location(spark, "table", rename.group(1)) is not None:
            self._counted(
                f"rename {rename.group(1)} to {rename.group(2)}",
                lambda: self._rename_cut_off(spark, rename.group(1), rename.group(2)),
            )
        elif drop and _location(spark, "table", drop.group(1)) is not None:
            self._counted(f"drop {drop.group(1)}", lambda: self._drop_cut_off(spark, drop.group(1), sql))

    def _counted(self, operation: str, cut_off) -> None:
        self.count += 1
        self.log.append(operation)
        if self.count == self.cut_at:
            cut_off()
            self.injector.crashed = True
            raise InjectedFault(f"statement {self.count} cut off halfway: {operation}")

    def _create_cut_off(self, spark: SparkSession, name: str) -> None:
        folder = new_table_folder(spark, name)
        if self.count % 2:  # while its task wrote
            folder = folder / "_temporary" / "0" / "_temporary" / "attempt_0_0000_m_000000_0"
        else:  # after its job committed
            folder.mkdir(parents=True)
            (folder / "_SUCCESS").touch()
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": [1]}), folder / "part-00000.snappy.parquet")

    @staticmethod
    def _rename_cut_off(spark: SparkSession, name: str, to: str) -> None:
        source = _location(spark, "table", name)
        assert source is not None
        source.rename(new_table_folder(spark, to))

    @staticmethod
    def _drop_cut_off(spark: SparkSession, name: str, sql: str) -> None:
        folder = _location(spark, "table", name)
        assert folder is not None
        with tempfile.TemporaryDirectory() as kept:
            shutil.copytree(folder, Path(kept) / "folder")
            spark.sql(sql)
            shutil.copytree(Path(kept) / "folder", folder)


@contextmanager
def cut_off_at(cut_at: int, log: list[str]) -> Iterator[StatementCutter]:
    """While the block runs, the `cut_at`-th create, rename or drop of a table is cut off halfway
    and the process is crashed from then on (0: nothing is cut off); `log` gets each one."""
    from dbt.adapters.openmirror.connections import OpenMirrorConnectionManager
    from dbt.adapters.openmirror.publishing import lease as lease_module

    injector = FaultInjector(0)
    cutter = StatementCutter(cut_at, log, injector)
    add_query = OpenMirrorConnectionManager.add_query

    def cut_then_add(self, sql, *args, **kwargs):
        cutter.before(sql)
        return add_query(self, sql, *args, **kwargs)

    active_before = dict(lease_module._ACTIVE_RUNS)
    with injected(injector, adapter=False), mock.patch.object(OpenMirrorConnectionManager, "add_query", cut_then_add):
        yield cutter
    if injector.crashed:
        # The crashed process is gone: its runs (a change held for its tests too) hold no lease.
        with lease_module._ACTIVE_LOCK:
            for run_id in set(lease_module._ACTIVE_RUNS) - set(active_before):
                del lease_module._ACTIVE_RUNS[run_id]


def stray_folders(spark: SparkSession, schema: str) -> list[str]:
    """Folders of the schema that no table uses, and tables whose folder is gone."""
    schema_folder = _location(spark, "schema", schema)
    assert schema_folder is not None
    tables = {row.tableName for row in spark.sql(f"show tables in {schema}").collect() if not row.isTemporary}
    locations = {name: _location(spark, "table", f"{schema}.{name}") for name in tables}
    used = {path for path in locations.values() if path is not None}
    orphans = [f"{p.name} (no table)" for p in sorted(schema_folder.iterdir()) if p.is_dir() and p not in used]
    missing = [f"{name} (no folder)" for name, path in sorted(locations.items()) if path and not path.exists()]
    return orphans + missing

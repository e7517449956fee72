"""Capture the error texts of failing statements from a real Spark, as dbt-spark's session and
Thrift connections raise them, into this folder (one JSON file per case). Run it again after
upgrading Spark:

    python -m tests.unit.spark_error_texts.capture [CASE ...]

(all cases, or only those named).

It starts a local session, then a cluster with its Thrift server on loopback (about a minute).
"""

import importlib.util
import json
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from dbt.adapters.openmirror.spark.statement_errors import error_text

HERE = Path(__file__).parent
ROOT = HERE.parents[2]

CASES = {
    "raise_error": ["create table t_raise as select raise_error('boom') as x"],
    "missing_table": ["select * from no_such_table"],
    "ansi_cast": ["set spark.sql.ansi.enabled=true", "create table t_cast as select cast('abc' as int) as x"],
    "write_under_file": ["insert overwrite directory 'file:///etc/hostname/x' using parquet select 1 as a"],
    "corrupt_parquet": ["select * from parquet.`file://{corrupt}`"],
    "cancelled": ["select count(*) from range(100000000000) where hash(id) = 7"],
    # A folder no table uses where a managed table's would go (a create cut off halfway leaves one).
    "location_exists": [
        "insert overwrite directory 'file://{warehouse}/t_orphan' using parquet select 1 as a",
        "create table t_orphan using parquet as select 1 as x",
    ],
}


def _corrupt_folder(work: Path) -> Path:
    """A Parquet folder whose second file is damaged: reading it fails in a task."""
    folder = work / "corrupt"
    folder.mkdir()
    pq.write_table(pa.table({"a": [1, 2, 3]}), folder / "part-0.parquet")
    (folder / "part-1.parquet").write_bytes(b"PAR1" + b"x" * 3000 + b"PAR1")
    return folder


def _capture(connection, method: str, name: str, statements, places: dict, cancel=None) -> None:
    connection.cursor()
    try:
        for sql in statements:
            if cancel is not None and sql is statements[-1]:
                threading.Timer(4, cancel).start()
            connection.execute(sql.format(**places))
            connection.fetchall()
    except Exception as exc:
        kind, text = error_text(exc)
        record = {
            "method": method,
            "statement": statements[-1],
            "raised": type(exc).__name__,
            "kind": kind,
            "text": text,
        }
        (HERE / f"{method}_{name}.json").write_text(json.dumps(record, indent=1) + "\n")
    else:
        raise AssertionError(f"{method} {name}: no error")


def capture_session(work: Path, corrupt: Path, cases: dict) -> None:
    from dbt.adapters.spark.session import Connection, SessionConnectionWrapper
    from pyspark import SparkContext

    spark = work / "spark"
    connection = SessionConnectionWrapper(
        Connection(
            server_side_parameters={
                "spark.master": "local[1]",
                "spark.ui.enabled": "false",
                "spark.sql.warehouse.dir": str(spark / "warehouse"),
                "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={spark}/metastore_db;create=true",
                "spark.driver.extraJavaOptions": f"-Dderby.system.home={spark}",
            }
        )
    )
    places = {"corrupt": corrupt, "warehouse": spark / "warehouse"}
    for name, statements in cases.items():
        cancel = SparkContext._active_spark_context.cancelAllJobs if name == "cancelled" else None
        _capture(connection, "session", name, statements, places, cancel)
    if cases is CASES:
        # A Python-side py4j failure: the JVM is gone.
        os.kill(SparkContext._gateway.proc.pid, signal.SIGKILL)
        time.sleep(1)
        _capture(connection, "session", "jvm_gone", ["select 1"], places)


def capture_thrift(work: Path, corrupt: Path, cases: dict) -> None:
    from dbt.adapters.spark.connections import PyhiveConnectionWrapper
    from pyhive import hive

    spec = importlib.util.spec_from_file_location("spark_cluster", ROOT / "scripts" / "spark_cluster.py")
    cluster = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cluster)
    endpoint = cluster.start(work / "cluster", cluster._free_port())
    places = {"corrupt": corrupt, "warehouse": work / "cluster" / "warehouse"}
    try:
        for name, statements in cases.items():
            connection = PyhiveConnectionWrapper(
                hive.connect(host=endpoint["host"], port=endpoint["port"], username="dbt"), 1, None, 0
            )
            cancel = connection.cancel if name == "cancelled" else None
            _capture(connection, "thrift", name, statements, places, cancel)
    finally:
        cluster.stop(work / "cluster")


def main() -> None:
    cases = {name: CASES[name] for name in sys.argv[1:]} or CASES
    with tempfile.TemporaryDirectory() as temporary:
        work = Path(temporary)
        corrupt = _corrupt_folder(work)
        capture_thrift(work, corrupt, cases)
        capture_session(work, corrupt, cases)


if __name__ == "__main__":
    main()

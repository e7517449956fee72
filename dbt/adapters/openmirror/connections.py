import logging
import threading
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

from dbt.adapters.contracts.connection import AdapterResponse, Connection
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.connections import SparkConnectionManager
from dbt.adapters.spark.session import SessionConnectionWrapper

from dbt.adapters.openmirror.errors import OpenMirrorError, RunInterruptedError, SparkStatementError
from dbt.adapters.openmirror.spark.statement_errors import error_text, short_cause

logger = AdapterLogger("OpenMirror")

FULL_ERROR_POINTER = "(the whole error is in dbt's debug log, logs/dbt.log by default)"
# pyspark logs every analysis error it raises, its JVM stack trace included, to the console.
_PYSPARK_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def _string_literal(value: str) -> str:
    # As the `openmirror_string` macro renders it; bound values are filled in by the connection,
    # where no macro is in reach.
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class SessionConnection(SessionConnectionWrapper):
    """dbt-spark's session connection, with bound values (seed rows) as exact SQL literals, and a
    cancel that stops Spark's jobs.

    dbt-spark quotes every value as `'{value}'`: an empty seed value became the string 'None' and a
    quote inside a value broke the statement. Over Thrift, PyHive already binds them correctly.
    """

    @classmethod
    def _fix_binding(cls, value: Any) -> Any:
        if value is None:
            return "NULL"
        if isinstance(value, str):
            return _string_literal(value)
        return super()._fix_binding(value)

    def cancel(self) -> None:
        """dbt cancels every running model at once (Ctrl-C), and all of an invocation's models
        share the process's one Spark session: cancel all of its jobs."""
        from pyspark.errors import PySparkRuntimeError
        from pyspark.sql import SparkSession

        try:
            session = SparkSession.active()
        except PySparkRuntimeError:  # no session yet: nothing runs
            return
        session.sparkContext.cancelAllJobs()


class OpenMirrorConnectionManager(SparkConnectionManager):
    TYPE = "openmirror"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Set when dbt cancels the invocation (Ctrl-C, --fail-fast): no statement starts after it.
        self.interrupted = threading.Event()

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        connection = super().open(connection)
        if type(connection.handle) is SessionConnectionWrapper:
            connection.handle = SessionConnection(connection.handle.handle)
            _quiet_pyspark_error_logs()
        return connection

    def cancel_open(self) -> list[str]:
        self.interrupted.set()
        return super().cancel_open()

    def add_query(self, sql: str, *args: Any, **kwargs: Any) -> tuple[Connection, Any]:
        if self.interrupted.is_set():
            raise RunInterruptedError("interrupted: the run was cancelled before this statement")
        return super().add_query(sql, *args, **kwargs)

    def execute(
        self, sql: str, auto_begin: bool = False, fetch: bool = False, limit: int | None = None
    ) -> tuple[AdapterResponse, Any]:
        # A session cursor runs a query when its rows are fetched, after `add_query` returned:
        # errors then are the statement's too.
        with self.exception_handler(sql):
            return super().execute(sql, auto_begin, fetch, limit)

    @contextmanager
    def exception_handler(self, sql: str) -> Generator[None, None, None]:
        """A failing statement's error as a short cause; its full text (Java stack traces, the
        query plan) goes to the debug log."""
        try:
            yield
        except (SparkStatementError, OpenMirrorError):
            raise
        except Exception as exc:
            kind, text = error_text(exc)
            logger.debug(f"Error while running:\n{sql}\n{kind}: {text}")
            if self.interrupted.is_set():
                raise RunInterruptedError("interrupted: the run was cancelled while this statement ran") from exc
            raise SparkStatementError(f"{short_cause(kind, text)}\n{FULL_ERROR_POINTER}") from exc


def _quiet_pyspark_error_logs() -> None:
    """The errors pyspark logs are raised too: dbt reports them, shortened, and logs them whole."""
    from pyspark.logger import PySparkLogger

    for name in _PYSPARK_ERROR_LOGGERS:
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)

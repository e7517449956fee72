from typing import Any

from dbt.adapters.contracts.connection import Connection
from dbt.adapters.spark.connections import SparkConnectionManager
from dbt.adapters.spark.session import SessionConnectionWrapper


def _string_literal(value: str) -> str:
    # As the `openmirror_string` macro renders it; bound values are filled in by the connection,
    # where no macro is in reach.
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class SessionConnection(SessionConnectionWrapper):
    """dbt-spark's session connection, with bound values (seed rows) as exact SQL literals.

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


class OpenMirrorConnectionManager(SparkConnectionManager):
    TYPE = "openmirror"

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        connection = super().open(connection)
        if type(connection.handle) is SessionConnectionWrapper:
            connection.handle = SessionConnection(connection.handle.handle)
        return connection

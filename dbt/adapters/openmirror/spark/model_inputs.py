"""What a model's output is computed from, as one digest, read from the in-process Spark session
before the output is built.

Two runs with the same digest compute the same output, so a full-diff run whose digest equals the
one its snapshot was built from can skip building and comparing it (run/mirror_run.py). The digest
covers:
- the model's optimized plan, canonical (expression ids and aliases normalized) and in full (no
  field cut off). Spark folds the current time and random seeds into it, so a model calling
  `current_timestamp()` or `rand()` never matches an earlier run;
- the output's column names and types;
- each file relation the plan reads: its format, options and schemas, and the path, size and
  modification time of every file, listed afresh (a file rewritten in place changes size or time);
- the rows of inline data (`values (…)`), which the plan's text leaves out, and every literal as
  SQL (the plan's text prints them unquoted);
- Spark's version, the session's `spark.sql.*` settings, its effective time zone and parallelism;
- the compiled SQL, and what the caller adds (the model's config).

It gives no digest where it could not vouch for the output: a source other than files (JDBC,
other connectors, cached data), a nondeterministic expression, a user-defined function or a
`TRANSFORM … USING` script (their code is not in the plan), more files than are worth listing, or
a file written in the last `SETTLED_SECONDS`: stores keep modification times to the second (object
stores) and their clocks are not the driver's, so a file rewritten in place with the same size
soon after this read could keep the time it has now. The same reasoning as git's "racily clean"
index entries.
"""

import hashlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from dbt.adapters.openmirror.spark.parquet_writes import PARQUET_WRITE_SETTINGS

#: Settings the adapter's own statements change during an invocation (macros/sql/); they decide
#: how files are written and read back, not what a model's query returns.
ADAPTER_SETTINGS = frozenset({*PARQUET_WRITE_SETTINGS, "spark.sql.legacy.bucketedTableScan.outputOrdering"})
#: Listing more files costs more than it saves (several JVM calls per file).
MAX_FILES = 20_000
#: A file younger than this is not yet told apart from its own rewrite: a store's time granularity
#: (a second on object stores) plus the skew between its clock and the driver's.
SETTLED_SECONDS = 10
#: Leaves whose whole content is in the plan's text.
_SELF_DESCRIBED_LEAVES = frozenset({"Range", "OneRowRelation"})
#: Plan nodes that run code the plan does not contain: `TRANSFORM … USING` scripts, Python and
#: pandas functions, typed Dataset closures.
_CODE_RUNNING_NODES = (
    "ScriptTransformation",
    "Python",
    "Pandas",
    "Arrow",
    "MapPartitions",
    "MapElements",
    "MapGroups",
    "CoGroup",
    "AppendColumns",
    "ToObject",
    "FromObject",
    "TypedFilter",
)
_FILE_RELATION = "org.apache.spark.sql.execution.datasources.HadoopFsRelation"
_USER_DEFINED = "org.apache.spark.sql.catalyst.expressions.UserDefinedExpression"
_LITERAL = "org.apache.spark.sql.catalyst.expressions.Literal"


@dataclass(frozen=True)
class ModelInputs:
    #: sha256 of everything the output is computed from; None when it cannot be vouched for.
    digest: str | None
    #: Why there is no digest.
    reason: str = ""


class _NoDigest(Exception):
    pass


def model_inputs(session: Any, sql: str, context: Sequence[str]) -> ModelInputs:
    """The digest of `sql` (a model's compiled query) and what it reads on `session`, with
    `context` (strings that also decide the output) mixed in. Analysis, optimization and a fresh
    listing of the files read (which the build then uses too): no job runs, except where Spark
    itself infers a schema from files."""
    try:
        frame = session.sql(f"select * from (\n{sql}\n) as model_output")
        plan = frame._jdf.queryExecution().optimizedPlan()
    except Exception as exc:  # the build reports the model's own error
        return ModelInputs(None, f"Spark could not plan the model: {type(exc).__name__}")
    try:
        parts = [sql, *context, session.version, frame.schema.json(), *_settings(session)]
        parts.append(plan.canonicalized().treeString(True, False, 2**31 - 1, False, False))
        settled_before = int((time.time() - SETTLED_SECONDS) * 1000)
        parts.extend(_plan_inputs(session, plan, settled_before))
    except _NoDigest as exc:
        return ModelInputs(None, str(exc))
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return ModelInputs(digest.hexdigest())


def _settings(session: Any) -> list[str]:
    """The settings set on the session, and the effective time zone, which when not set is the
    JVM's (it decides how timestamps are cast and parsed, and `Cast` does not print it)."""
    settings = session.conf.getAll
    kept = sorted(f"{k}={v}" for k, v in settings.items() if k.startswith("spark.sql.") and k not in ADAPTER_SETTINGS)
    return [
        *kept,
        f"timeZone={session.conf.get('spark.sql.session.timeZone')}",
        f"parallelism={session.sparkContext.defaultParallelism}",
    ]


def _plan_inputs(session: Any, plan: Any, settled_before: int) -> Iterator[str]:
    jvm = session._jvm
    user_defined = jvm.java.lang.Class.forName(_USER_DEFINED)
    literal = jvm.java.lang.Class.forName(_LITERAL)
    files = 0
    for node in _nodes(plan):
        name = node.getClass().getSimpleName()
        if not node.deterministic():
            raise _NoDigest(f"its plan is nondeterministic ({name})")
        for expression in _expressions(node):
            if user_defined.isInstance(expression):
                raise _NoDigest(f"it calls a user-defined function ({expression.prettyName()})")
            if literal.isInstance(expression):
                # The plan prints literals unquoted ('null' and NULL alike, `array('a,b')` and
                # `array('a', 'b')` alike); as SQL they are typed and escaped.
                yield _literal_sql(expression)
        if any(part in name for part in _CODE_RUNNING_NODES):
            raise _NoDigest(f"it runs code outside its plan ({name})")
        if not _seq(node.children()):
            if name == "LogicalRelation" and node.relation().getClass().getName() == _FILE_RELATION:
                listed = _file_relation(session, node.relation(), settled_before)
                files += len(listed) - 1
                if files > MAX_FILES:
                    raise _NoDigest(f"it reads more than {MAX_FILES} files")
                yield from listed
            elif name == "LocalRelation":
                yield from _inline_rows(session, node)
            elif name not in _SELF_DESCRIBED_LEAVES:
                raise _NoDigest(f"it reads {name}, which is not a file relation")


def _literal_sql(expression: Any) -> str:
    try:
        return str(expression.sql())
    except Exception as exc:  # a type without a SQL literal
        raise _NoDigest(f"a literal of type {expression.dataType().simpleString()} has no SQL form") from exc


def _inline_rows(session: Any, relation: Any) -> Iterator[str]:
    """Inline rows as typed, escaped SQL (a row's `toString` prints strings unquoted, so NULL and
    'null' would look alike): each row a struct literal."""
    schema = relation.schema()
    for row in _seq(relation.data()):
        yield _literal_sql(session._jvm.org.apache.spark.sql.catalyst.expressions.Literal(row, schema))


def _file_relation(session: Any, relation: Any, settled_before: int) -> list[str]:
    """The relation's description, then one line per file, each modified before `settled_before`
    (epoch milliseconds)."""
    nothing = _empty_seq(session)
    location = relation.location()
    # A table's listing is kept for the session: list again, so that the digest and the build
    # both see the files as they are now (a file rewritten in place since was listed with the
    # time it had then).
    location.refresh()
    lines = [
        "|".join(
            (
                relation.fileFormat().toString(),
                relation.options().toString(),
                relation.dataSchema().json(),
                relation.partitionSchema().json(),
                relation.bucketSpec().toString(),
                # A table format's index names its version here (Delta: the snapshot it read).
                location.toString(),
            )
        )
    ]
    for directory in _seq(location.listFiles(nothing, nothing)):
        lines.append(directory.values().toString())
        for status in _seq(directory.files()):
            if status.getModificationTime() >= settled_before:
                raise _NoDigest(
                    f"it reads a file written less than {SETTLED_SECONDS} s ago ({status.getPath().toString()})"
                )
            # The metadata carries what a table format attaches to a file (Delta: its deletion
            # vector), which can change while path, size and time do not.
            lines.append(
                f"{status.getPath().toString()}|{status.getLen()}|{status.getModificationTime()}|"
                f"{status.metadata().toString()}"
            )
    return lines


def _nodes(plan: Any) -> Iterator[Any]:
    """Every node of the plan, those of its subqueries included, in a fixed order."""
    pending = [plan]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(reversed(_seq(node.subqueries())))
        pending.extend(reversed(_seq(node.children())))


def _expressions(node: Any) -> Iterator[Any]:
    pending = list(_seq(node.expressions()))
    while pending:
        expression = pending.pop()
        yield expression
        pending.extend(_seq(expression.children()))


def _seq(seq: Any) -> list[Any]:
    return [seq.apply(i) for i in range(seq.size())]


def _empty_seq(session: Any) -> Any:
    jvm = session._jvm
    return jvm.scala.jdk.javaapi.CollectionConverters.asScala(jvm.java.util.ArrayList()).toList()

"""A failing Spark statement's error, as a short cause for dbt's output.

Spark's errors carry Java stack traces, logical plans, query fragments and py4j or Thrift
wrappers: up to hundreds of lines around one sentence. The connection manager logs the whole
text at debug level (dbt's `logs/dbt.log`) and raises what `short_cause` keeps: the exception
class and its message, and the root cause's when a "Caused by:" chain ends elsewhere.
"""

import re

from dbt_common.exceptions import DbtRuntimeError

#: Lines of a message kept; the rest is in the debug log.
MAX_MESSAGE_LINES = 6
MAX_LINE_CHARS = 400

# A Java stack frame, the elision that ends a chained trace, or a suppressed exception's header.
_FRAME = re.compile(r"^\s+(at \S|\.\.\. \d+ (more|common frames omitted)|Suppressed: )")
# A fully qualified Java class, as a trace names it: "org.apache.spark.SparkException: ...".
_THROWABLE = re.compile(r"^((?:[A-Za-z_$][\w$]*\.)+[A-Z][\w$]*)(?::\s?(.*))?$")
# Where Spark's context for a message begins: the query fragment, the pyspark JVM trace.
_CONTEXT = re.compile(r"^(== SQL|== DataFrame|JVM stacktrace:)")
# An analysis error's position, after which Spark prints the logical plan.
_PLAN_FOLLOWS = re.compile(r"; line \d+ pos \d+;$")
# py4j's wrapper around a Java exception: "An error occurred while calling o35.sql.\n: ...".
_PY4J_CALL = re.compile(r"^An error occurred while calling \S+\.\n: ")
# The Thrift server's wrapper: "Error running query: [ERROR_CLASS] org.apache...Exception: ...".
_RUNNING_QUERY = re.compile(r"^Error running query: (\[[\w.]+\] )?")
#: What to do about an error, by Spark's error class, where the cause is known.
ADVICE = {
    "LOCATION_ALREADY_EXISTS": (
        "No table uses that folder: a run stopped halfway through creating, renaming or dropping a table "
        "(killed, or its machine lost) leaves one. If a table of the model reads no rows since, the folder "
        "holds them (a rename stopped halfway): move it back to that table's folder; otherwise delete it. "
        "open_mirror models on a `method: session` profile do this themselves."
    ),
}


def error_text(exc: BaseException) -> tuple[str, str]:
    """The Python class to name when the text names no Java one, and the error's full text, as
    dbt-spark's connections raise them: a pyspark exception, dbt-spark's DbtRuntimeError around
    a pyspark analysis error or around a Thrift error message, a py4j error, PyHive's status."""
    if isinstance(exc, DbtRuntimeError):
        cause = exc.__cause__
        return (type(cause).__name__ if cause is not None else ""), exc.msg
    status = getattr(exc.args[0], "status", None) if exc.args else None
    message = getattr(status, "errorMessage", None)
    if message:
        return type(exc).__name__, str(message)
    return type(exc).__name__, str(exc)


def short_cause(kind: str, text: str) -> str:
    """A few lines naming the error and its root cause, from `kind` (see `error_text`) and the
    full text."""
    throwables = _throwables(_PY4J_CALL.sub("", text.strip(), count=1))
    if not throwables:
        return kind
    head_class, head_message = _unwrap(*throwables[0])
    summary = _describe(head_class or kind, head_message)
    root_class, root_message = throwables[-1]
    if len(throwables) > 1 and root_message.split("\n", 1)[0] not in head_message:
        summary += "\ncaused by " + _describe(root_class, root_message)
    advice = [ADVICE[error_class] for error_class in ADVICE if f"[{error_class}]" in summary]
    return "\n".join([summary, *advice])


def _throwables(text: str) -> list[tuple[str | None, str]]:
    """(class, message) of the head exception and of each "Caused by:" in turn."""
    sections: list[list[str]] = [[]]
    in_frames = False
    for line in text.splitlines():
        if line.startswith("Caused by: "):
            sections.append([line[len("Caused by: ") :]])
            in_frames = False
        elif _FRAME.match(line):
            in_frames = True
        elif not in_frames:
            sections[-1].append(line)
    found = []
    for lines in sections:
        message = _message_lines(lines)
        if not message:
            continue
        match = _THROWABLE.match(message[0])
        if match:
            found.append((match.group(1), "\n".join([match.group(2) or "", *message[1:]]).strip()))
        else:
            found.append((None, "\n".join(message)))
    return found


def _message_lines(lines: list[str]) -> list[str]:
    """A message's own lines, without Spark's query context, plan or blank lines."""
    kept = []
    for line in (line.strip() for line in lines):
        if _CONTEXT.match(line):
            break
        if _PLAN_FOLLOWS.search(line):
            kept.append(line[:-1])
            break
        if line:
            kept.append(line)
    return kept


def _unwrap(kind: str | None, message: str) -> tuple[str | None, str]:
    """The Thrift server reports every failure as a HiveSQLException whose message starts with
    the real exception: name that one."""
    if not _RUNNING_QUERY.match(message):
        return kind, message
    first, _, rest = _RUNNING_QUERY.sub("", message, count=1).partition("\n")
    match = _THROWABLE.match(first)
    if match and match.group(2):
        return match.group(1), "\n".join(filter(None, [match.group(2), rest]))
    return kind, "\n".join(filter(None, [first, rest]))


#: The error class of `raise_error`, whose message was written to be read whole (the audit hook's
#: failures, a model's own checks).
_AUTHORED = "[USER_RAISED_EXCEPTION]"


def _describe(kind: str | None, message: str) -> str:
    lines = message.splitlines()
    authored = bool(lines) and _AUTHORED in lines[0]
    shown = [line if authored else _clip(line) for line in lines[:MAX_MESSAGE_LINES]]
    if len(lines) > MAX_MESSAGE_LINES:
        shown.append("...")
    name = (kind or "").rsplit(".", 1)[-1]
    text = "\n".join(shown)
    return f"{name}: {text}" if name and text else name or text


def _clip(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 3] + "..."

"""A failing statement's error becomes a short cause: real Spark 4 error texts, captured from a
local session and from a Thrift server (tests/unit/spark_error_texts/capture.py)."""

import json
from pathlib import Path

import pytest
from dbt_common.exceptions import DbtDatabaseError, DbtRuntimeError
from pyhive.exc import OperationalError
from TCLIService.ttypes import TExecuteStatementResp, TStatus, TStatusCode

from dbt.adapters.openmirror.spark.statement_errors import ADVICE, error_text, short_cause

TEXTS = Path(__file__).parent / "spark_error_texts"

RAISED = "SparkRuntimeException: [USER_RAISED_EXCEPTION] boom SQLSTATE: P0001"
NOT_FOUND = (
    "AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] The table or view `no_such_table` cannot be found. "
    "Verify the spelling and correctness of the schema and catalog.\n"
    "Search path: [`system`.`builtin`, `system`.`session`, `spark_catalog`.`default`].\n"
    "If you did not qualify the name with a schema, verify the current_schema() output, or qualify "
    "the name with the correct schema and catalog.\n"
    "To tolerate the error on drop use DROP VIEW IF EXISTS or DROP TABLE IF EXISTS. SQLSTATE: 42P01; "
    "line 1 pos 14"
)
CAST = (
    '[CAST_INVALID_INPUT] The value \'abc\' of the type "STRING" cannot be cast to "INT" because it is '
    "malformed. Correct the value as per the syntax, or change its target type. Use `try_cast` to "
    "tolerate malformed input and return NULL instead. SQLSTATE: 22018"
)
NOT_A_FOLDER = "ParentNotDirectoryException: Parent path is not a directory: file:/etc/hostname"
CORRUPT_ROOT = "caused by RuntimeException: corrupted file: the footer index is not within the file: -2021158080"


def _captured(name):
    record = json.loads((TEXTS / f"{name}.json").read_text())
    return record["kind"], record["text"]


@pytest.mark.parametrize(
    "name, expected",
    [
        ("session_raise_error", RAISED),
        ("thrift_raise_error", RAISED),
        ("session_missing_table", NOT_FOUND),
        ("thrift_missing_table", NOT_FOUND),
        ("session_ansi_cast", f"NumberFormatException: {CAST}"),
        ("thrift_ansi_cast", f"SparkNumberFormatException: {CAST}"),
        ("session_write_under_file", NOT_A_FOLDER),
        ("thrift_write_under_file", NOT_A_FOLDER),
        (
            "session_cancelled",
            "SparkException: [SPARK_JOB_CANCELLED] Job 3 cancelled as part of cancellation of all jobs SQLSTATE: XXKDA",
        ),
        ("session_jvm_gone", "ConnectionRefusedError: [Errno 111] Connection refused"),
        ("thrift_cancelled", "Query failed with status: Unknown<None>"),
    ],
)
def test_the_cause_is_the_exception_class_and_its_message(name, expected):
    assert short_cause(*_captured(name)) == expected


@pytest.mark.parametrize("method", ["session", "thrift"])
def test_a_folder_in_the_way_of_a_table_says_what_to_do(method):
    cause, advice = short_cause(*_captured(f"{method}_location_exists")).split("\n")
    assert cause.startswith("SparkRuntimeException: [LOCATION_ALREADY_EXISTS] Cannot name the managed table as")
    assert "/warehouse/t_orphan' already exists" in cause and advice == ADVICE["LOCATION_ALREADY_EXISTS"]


@pytest.mark.parametrize("method", ["session", "thrift"])
def test_a_chain_ending_elsewhere_adds_its_root_cause(method):
    kind, text = _captured(f"{method}_corrupt_parquet")
    head, root = short_cause(kind, text).split("\n")
    assert head.startswith("SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while reading file file:///")
    assert head.endswith("/corrupt/part-1.parquet.  SQLSTATE: KD001")
    assert root == CORRUPT_ROOT


@pytest.mark.parametrize("path", sorted(TEXTS.glob("*.json")), ids=lambda p: p.stem)
def test_no_stack_frame_plan_or_wrapper_is_left(path):
    kind, text = _captured(path.stem)
    cause = short_cause(kind, text)
    assert len(cause.splitlines()) <= 4
    for noise in (
        "\tat ",
        "\n\tat",
        "... 22 more",
        "'Project",
        "UnresolvedRelation",
        "== SQL",
        "An error occurred while calling",
        "HiveSQLException",
        "Error running query",
    ):
        assert noise not in cause


def test_long_messages_are_cut_with_a_marker():
    text = "org.example.BigException: first\n" + "\n".join(f"line {i}" for i in range(20)) + "\n\tat x.y(Z.java:1)"
    cause = short_cause("Py4JJavaError", text)
    assert cause.splitlines() == ["BigException: first", *(f"line {i}" for i in range(5)), "..."]


def test_a_message_raise_error_wrote_is_kept_whole():
    """`raise_error` carries a message written to be read (the audit hook's failures, a model's
    own checks): its lines are not clipped, where another error's long line is."""
    said = "Model 'orders': " + "x" * 600 + " Give the user running dbt-openmirror write access."
    text = f"org.apache.spark.SparkRuntimeException: [USER_RAISED_EXCEPTION] {said} SQLSTATE: P0001\n\tat x.y(Z.java:1)"
    assert said in short_cause("Py4JJavaError", text)
    clipped = short_cause("Py4JJavaError", text.replace("USER_RAISED_EXCEPTION", "OTHER"))
    assert said not in clipped and clipped.endswith("...")


def test_error_text_takes_the_message_dbt_spark_wrapped():
    class AnalysisException(Exception):
        pass

    try:
        try:
            raise AnalysisException("[TABLE_OR_VIEW_NOT_FOUND] ...")
        except AnalysisException as exc:
            raise DbtRuntimeError("[TABLE_OR_VIEW_NOT_FOUND] ...") from exc
    except DbtRuntimeError as wrapped:
        assert error_text(wrapped) == ("AnalysisException", "[TABLE_OR_VIEW_NOT_FOUND] ...")
    assert error_text(DbtDatabaseError("org.apache.hive.service.cli.HiveSQLException: x")) == (
        "",
        "org.apache.hive.service.cli.HiveSQLException: x",
    )
    assert error_text(ValueError("plain")) == ("ValueError", "plain")


def test_error_text_takes_the_status_pyhive_raised():
    status = TStatus(statusCode=TStatusCode.ERROR_STATUS, errorMessage="Error running query: x")
    assert error_text(OperationalError(TExecuteStatementResp(status=status))) == (
        "OperationalError",
        "Error running query: x",
    )

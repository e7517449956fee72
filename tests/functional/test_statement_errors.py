"""A statement that fails in Spark fails its node with a short cause (the exception and its
message), pointing to dbt's debug log, which has the whole text: in models (the statement runs
when it is sent) and in data tests (the query runs when its rows are fetched)."""

from pathlib import Path

import pytest
from dbt.tests.util import run_dbt

MODELS = {
    "raises.sql": "{{ config(materialized='table') }}\nselect raise_error('boom') as x",
    "reads_nothing.sql": "{{ config(materialized='table') }}\nselect * from no_such_table",
}
TESTS = {"raises_when_fetched.sql": "select id from range(3) where raise_error(concat('bang ', id)) is null"}
POINTER = "(the whole error is in dbt's debug log, logs/dbt.log by default)"


class TestStatementErrors:
    @pytest.fixture(scope="class")
    def models(self):
        return MODELS

    @pytest.fixture(scope="class")
    def tests(self):
        """Not a test: the project's singular data tests. dbt-tests-adapter's `project` fixture
        reads a fixture of this name to write the project's tests/ folder, as it reads `models`;
        the assertions are in the test_ methods below."""
        return TESTS

    @pytest.fixture(scope="class")
    def messages(self, project):
        results = run_dbt(["build"], expect_pass=False)
        return {result.node.name: result.message for result in results}

    def test_a_failing_model_names_the_exception_and_its_message(self, messages):
        message = messages["raises"]
        assert "SparkRuntimeException: [USER_RAISED_EXCEPTION] boom SQLSTATE: P0001" in message
        assert POINTER in message

    def test_the_plan_and_trace_go_to_the_debug_log_only(self, logs_dir, messages):
        message = messages["reads_nothing"]
        assert (
            "AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] The table or view `no_such_table` cannot be found" in message
        )
        assert "UnresolvedRelation" not in message and "\tat " not in message
        assert len(message.splitlines()) <= 8
        debug_log = (Path(logs_dir) / "dbt.log").read_text()
        assert "'UnresolvedRelation [no_such_table]" in debug_log

    def test_a_query_failing_when_fetched_is_reported_the_same_way(self, messages):
        message = messages["raises_when_fetched"]
        assert "SparkRuntimeException: [USER_RAISED_EXCEPTION] bang " in message
        assert POINTER in message

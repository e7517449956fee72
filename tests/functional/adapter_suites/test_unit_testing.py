"""dbt unit tests (`unit_tests:` with given rows and expected rows) under `type: openmirror`."""

import pytest
from dbt.tests.adapter.unit_testing import test_quoted_reserved_word_column_names as reserved_word
from dbt.tests.adapter.unit_testing.test_case_insensitivity import BaseUnitTestCaseInsensivity
from dbt.tests.adapter.unit_testing.test_invalid_input import BaseUnitTestInvalidInput
from dbt.tests.adapter.unit_testing.test_quoted_reserved_word_column_names import (
    BaseUnitTestQuotedReservedWordColumnNames,
)
from dbt.tests.adapter.unit_testing.test_types import BaseUnitTestingTypes


class TestUnitTestingTypes(BaseUnitTestingTypes):
    @pytest.fixture
    def data_types(self):
        # (Spark SQL literal, the same value in a unit test's YAML)
        return [
            ["1", "1"],
            ["2.5", "2.5"],
            ["'12345'", "12345"],
            ["'text'", "text"],
            ["false", "false"],
            ["date '2021-03-04'", "2021-03-04"],
            ["timestamp '2021-03-04 05:06:07'", "2021-03-04 05:06:07"],
        ]


class TestUnitTestCaseInsensitivity(BaseUnitTestCaseInsensivity):
    pass


class TestUnitTestInvalidInput(BaseUnitTestInvalidInput):
    pass


@pytest.mark.adapter_suites
class TestUnitTestQuotedReservedWordColumnNames(BaseUnitTestQuotedReservedWordColumnNames):
    # The upstream model quotes its column the Postgres way ("GROUP"); Spark quotes with backticks.
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model.sql": reserved_word.my_model_sql,
            "my_upstream_model.sql": "select 1 as `GROUP`",
            "unit_tests.yml": reserved_word.test_my_model_csv_fixtures_yml,
        }

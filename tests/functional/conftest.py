import pytest

from tests.functional.mirror import Warehouse


@pytest.fixture(scope="class")
def warehouse(project, tmp_path_factory):
    """SQL on the test project's Spark, through dbt's connection (session or thrift)."""
    return Warehouse(project, tmp_path_factory.mktemp("query_results"))

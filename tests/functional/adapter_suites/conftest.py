import pytest


@pytest.fixture(scope="class", autouse=True)
def no_temporary_views(project):
    """Start each suite without temporary views. In session mode all tests of a process share one
    SparkSession, and the temporary views an earlier test left (dbt-spark's `<model>__dbt_tmp`
    of incremental models) are listed by Spark in every schema, so dbt would cache them and the
    catalog would hold relations without a schema; a user's `dbt` process starts with none."""
    for _namespace, name, is_temporary in project.run_sql("show views", fetch="all"):
        if is_temporary:
            project.run_sql(f"drop view `{name}`")

import os

import pytest

pytest_plugins = ["dbt.tests.fixtures.project"]

# Spark and Derby leave files in the working directory unless told otherwise, and take the
# machine's time zone; the suite pins both.
os.environ.setdefault("TZ", "UTC")


@pytest.fixture(scope="session")
def spark_dirs(tmp_path_factory):
    return tmp_path_factory.mktemp("spark")


@pytest.fixture(scope="session")
def spark_settings(spark_dirs):
    """Static settings of the one Spark session per test process (only the first creation counts)."""
    return {
        "spark.master": "local[2]",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.driver.memory": "2g",
        "spark.sql.warehouse.dir": str(spark_dirs / "warehouse"),
        "javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={spark_dirs / 'metastore_db'};create=true"
        ),
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={spark_dirs}",
    }


@pytest.fixture(scope="session")
def spark(spark_settings):
    """The session dbt-spark's `method: session` will reuse, so tests can read model output."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.enableHiveSupport()
    for key, value in spark_settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


@pytest.fixture(scope="session")
def landing_zone(tmp_path_factory):
    return tmp_path_factory.mktemp("landing_zone")


@pytest.fixture(scope="class")
def dbt_profile_target(spark, spark_settings, landing_zone):
    return {
        "type": "openmirror",
        "method": "session",
        "host": "localhost",
        "landing_zone": str(landing_zone),
        "server_side_parameters": spark_settings,
    }

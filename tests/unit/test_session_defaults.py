"""A `method: session` profile's Spark settings: the warehouse, the metastore and derby.log in
the dbt project's folder and a quiet console, unless the profile sets them itself."""

import shlex
from pathlib import Path
from types import SimpleNamespace

from dbt.adapters.openmirror.credentials import OpenMirrorCredentials
from dbt.adapters.openmirror.spark.session_defaults import apply_session_defaults, session_parameters

ROOT = Path("/projects/jaffle shop")


def test_an_empty_profile_gets_the_project_folder_and_a_quiet_console():
    assert session_parameters({}, ROOT) == {
        "spark.ui.showConsoleProgress": "false",
        "spark.log.level": "OFF",
        "spark.sql.warehouse.dir": "/projects/jaffle shop/spark-warehouse",
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            "jdbc:derby:;databaseName=/projects/jaffle shop/metastore_db;create=true"
        ),
        "spark.driver.extraJavaOptions": "-Dderby.system.home='/projects/jaffle shop'",
    }


def test_the_derby_home_survives_spark_splitting_the_option_string():
    options = session_parameters({}, ROOT)["spark.driver.extraJavaOptions"]
    assert shlex.split(options) == ["-Dderby.system.home=/projects/jaffle shop"]
    quoted = session_parameters({}, Path("/p/it's"))["spark.driver.extraJavaOptions"]
    assert shlex.split(quoted) == ["-Dderby.system.home=/p/it's"]


def test_what_the_profile_sets_is_kept():
    user = {
        "spark.master": "local[4]",
        "spark.sql.warehouse.dir": "/data/warehouse",
        "spark.ui.showConsoleProgress": "true",
        "spark.log.level": "WARN",
        "spark.driver.extraJavaOptions": "-Xss4m",
    }
    merged = session_parameters(user, ROOT)
    assert {k: merged[k] for k in user} == user
    # Unset keys still get their default: the metastore stays with the project.
    assert merged["spark.hadoop.javax.jdo.option.ConnectionURL"].startswith(
        "jdbc:derby:;databaseName=/projects/jaffle shop/"
    )


def test_a_metastore_set_either_way_is_not_replaced():
    for key in ("javax.jdo.option.ConnectionURL", "spark.hadoop.javax.jdo.option.ConnectionURL"):
        merged = session_parameters({key: "jdbc:postgresql://db/metastore"}, ROOT)
        assert [k for k in merged if "ConnectionURL" in k] == [key]


def test_without_a_project_only_the_console_settings():
    assert session_parameters({"spark.master": "local[2]"}, None) == {
        "spark.ui.showConsoleProgress": "false",
        "spark.log.level": "OFF",
        "spark.master": "local[2]",
    }


def _credentials(method, **parameters):
    return OpenMirrorCredentials(
        method=method, host="localhost", schema="s", landing_zone="/tmp", server_side_parameters=parameters
    )


def test_applied_to_session_profiles_only(tmp_path):
    session = SimpleNamespace(
        credentials=_credentials("session", **{"spark.master": "local[2]"}), project_root=str(tmp_path)
    )
    profile = dict(session.credentials.server_side_parameters)
    apply_session_defaults(session)
    assert session.credentials.server_side_parameters == session_parameters(profile, tmp_path)
    thrift = SimpleNamespace(credentials=_credentials("thrift"), project_root=str(tmp_path))
    profile = dict(thrift.credentials.server_side_parameters)
    apply_session_defaults(thrift)
    assert thrift.credentials.server_side_parameters == profile

from dataclasses import fields

import pytest

from dbt.adapters.openmirror.errors import MirrorConfigError
from dbt.adapters.openmirror.run.config import CONFIGS, UserSetConfig, check_model_landing_zone, mirror_config


def config(**values):
    return mirror_config("orders", "analytics", "orders", {"unique_key": "id", **values})


def test_defaults_follow_the_model():
    mirror = config()
    assert mirror.unique_key == ["id"]
    assert mirror.table_folder == "analytics.schema/orders"
    assert (mirror.parquet_compression, mirror.change_markers, mirror.row_marker_position) == (
        "snappy",
        "insert_update_delete",
        "last",
    )
    assert mirror.max_rows_per_file == 0
    assert mirror.on_schema_change == "append_new_columns"
    assert (mirror.lease_ttl_seconds, mirror.lease_wait_seconds) == (300, 0)


def test_on_schema_change_ignore_and_lease_settings_are_accepted():
    mirror = config(on_schema_change="ignore", lease_ttl_seconds=30, lease_wait_seconds=10)
    assert (mirror.on_schema_change, mirror.lease_ttl_seconds, mirror.lease_wait_seconds) == (
        "ignore",
        30,
        10,
    )


def test_mirror_schema_and_table_overrides():
    assert config(mirror_schema="", mirror_table="Orders v2").table_folder == "Orders v2"
    assert config(mirror_schema="sales").table_folder == "sales.schema/orders"


def test_unique_key_list_is_kept_in_order():
    assert config(unique_key=["order_id", "line"]).unique_key == ["order_id", "line"]


def test_key_and_delete_flag_columns_are_taken_as_written():
    """A column may be named ` id` beside `id`: a stripped name would key the run on the other one."""
    mirror = config(unique_key=[" id", "line "], delete_flag=" deleted")
    assert (mirror.unique_key, mirror.delete_flag) == ([" id", "line "], " deleted")
    assert config(unique_key=["id", " id"]).unique_key == ["id", " id"]


@pytest.mark.parametrize("value", [None, "", " ", [], ["id", ""], ["id", "  "], 5])
def test_missing_or_invalid_unique_key(value):
    with pytest.raises(MirrorConfigError, match="Model 'orders'"):
        config(unique_key=value)


def test_repeated_key_column():
    with pytest.raises(MirrorConfigError, match="repeats"):
        config(unique_key=["id", "ID"])


@pytest.mark.parametrize(
    "setting, value",
    [
        ("parquet_compression", "lz4"),
        ("change_markers", "merge"),
        ("row_marker_position", "middle"),
        ("on_schema_change", "merge"),
        ("max_rows_per_file", -1),
        ("lease_ttl_seconds", 0),
        ("lease_wait_seconds", 1.5),
        ("max_rows_per_file", "100"),
        ("mirror_table", "../escape"),
        ("mirror_schema", "a/b"),
        ("mirror_table", ""),
        ("mirror_table", False),
        ("mirror_schema", False),
        ("mirror_schema", 0),
        ("publish", ""),
        ("change_markers", ""),
        ("parquet_compression", ""),
        ("row_marker_position", ""),
        ("on_schema_change", ""),
        ("publish", False),
        ("delete_flag", ""),
        ("delete_flag", " "),
        ("delete_flag", True),
    ],
)
def test_invalid_settings_name_the_model_setting_and_value(setting, value):
    with pytest.raises(MirrorConfigError) as error:
        config(**{setting: value})
    assert "Model 'orders'" in str(error.value)
    assert setting in str(error.value) and repr(value) in str(error.value)


class DbtConfig:
    """As the materialization's `config`: dbt has filled in on_schema_change='ignore' for every model."""

    def __init__(self, values: dict) -> None:
        self.values = {"on_schema_change": "ignore", **values}

    def get(self, name, default=None, validator=None):
        return self.values.get(name, default)


def test_on_schema_change_counts_only_when_the_user_set_it():
    dbt_config = DbtConfig({"unique_key": "id", "max_rows_per_file": 10})
    mirror = mirror_config("m", "s", "t", UserSetConfig(dbt_config, set_by_user={"unique_key", "max_rows_per_file"}))
    assert (mirror.on_schema_change, mirror.max_rows_per_file, mirror.unique_key) == ("append_new_columns", 10, ["id"])
    chosen = mirror_config("m", "s", "t", UserSetConfig(dbt_config, set_by_user={"unique_key", "on_schema_change"}))
    assert chosen.on_schema_change == "ignore"


@pytest.mark.parametrize(
    "name, meant",
    [
        ("deleteflag", "delete_flag"),
        ("delete_flags", "delete_flag"),
        ("unique_keys", "unique_key"),
        ("Unique_Key", "unique_key"),
        ("reconcileevery", "reconcile_every"),
        ("reconcile-every", "reconcile_every"),
        ("parquet_compresion", "parquet_compression"),
        ("mirror_tabel", "mirror_table"),
        ("mirrorschema", "mirror_schema"),
        ("publsh", "publish"),
        ("show_key_value", "show_key_values"),
        ("landingzone", "landing_zone"),
    ],
)
def test_a_near_miss_of_a_config_is_refused(name, meant):
    """dbt keeps any config key: a misspelt one would be ignored (`deleteflag` publishes flagged
    rows as live ones)."""
    with pytest.raises(MirrorConfigError) as error:
        config(**{name: "x"})
    message = str(error.value)
    assert "Model 'orders'" in message and repr(name) in message and repr(meant) in message


def _dbt_config_keys():
    """Every config key dbt and dbt-spark define for models, seeds and snapshots, and dbt-databricks' own."""
    from dbt.adapters.spark.impl import SparkConfig
    from dbt.artifacts.resources import ModelConfig, SeedConfig, SnapshotConfig

    keys = {
        field.metadata.get("alias", field.name)
        for kind in (ModelConfig, SeedConfig, SnapshotConfig, SparkConfig)
        for field in fields(kind)
        if not field.name.startswith("_")
    }
    databricks = {"liquid_clustered_by", "auto_liquid_cluster", "zorder", "tblproperties", "databricks_tags"}
    more = {"catalog", "compression", "incremental_predicates", "merge_exclude_columns", "sql_header", "pre_hook"}
    return sorted((keys | databricks | more | {"post_hook"}) - set(CONFIGS))


@pytest.mark.parametrize(
    "name",
    # location_root is refused for what it does (test_package_decisions.py), not as a near miss.
    [key for key in _dbt_config_keys() if key != "location_root"]
    + ["owner", "team", "pii", "flag", "deleted", "keys", "schedule", "mirror", "table"],
)
def test_dbt_configs_and_unrelated_keys_are_not_near_misses(name):
    assert config(**{name: "x"}).unique_key == ["id"]


def test_only_the_configs_the_user_set_are_checked():
    """dbt's `config` holds every config dbt filled in; the user set only the unrendered ones."""
    dbt_config = DbtConfig({"unique_key": "id", "deleteflag": "x"})
    assert mirror_config("m", "s", "t", UserSetConfig(dbt_config, set_by_user={"unique_key"})).delete_flag is None
    with pytest.raises(MirrorConfigError, match="'deleteflag'"):
        mirror_config("m", "s", "t", UserSetConfig(dbt_config, set_by_user={"unique_key", "deleteflag"}))


ONELAKE = "https://onelake.dfs.fabric.microsoft.com/ws/db.MirroredDatabase/Files/LandingZone"


@pytest.mark.parametrize(
    "configured",
    [None, ONELAKE + "/", "abfss://ws@onelake.dfs.fabric.microsoft.com/db.MirroredDatabase/Files/LandingZone"],
)
def test_a_model_landing_zone_the_profiles_is_accepted(configured):
    # One project serves both modes: package mode's landing_zone config may name the profile's.
    check_model_landing_zone("orders", configured, ONELAKE)


@pytest.mark.parametrize("configured", ["/elsewhere", ONELAKE.replace("/ws/", "/other/"), 42])
def test_a_model_landing_zone_the_plugin_would_not_publish_to_is_refused(configured):
    # It was ignored: the model published into the profile's landing zone without a word.
    with pytest.raises(MirrorConfigError) as refused:
        check_model_landing_zone("orders", configured, ONELAKE)
    message = refused.value.msg
    assert message.startswith("Model 'orders': landing_zone ") and repr(configured) in message and ONELAKE in message

"""Package mode makes ten of the plugin's decisions in Jinja (macros/package/); each must agree
with the plugin's Python, so both modes publish alike. Every test here drives the Jinja macro
(rendered by dbt's own Jinja, tests/support/package_macros.py) and the Python function from the
same case table.

What the Jinja cannot decide the same way: the run plan sees no table folder on the dbt side
(numbering, owner, a deleted folder, the last run the journal names), so those checks happen at
`dbt-openmirror publish` (tests/unit/test_package_publish.py); the run-plan cases below are the
histories where the table folder holds what the snapshot says.
"""

import json
import re
from dataclasses import fields
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest

from dbt.adapters.openmirror.errors import KeyColumnsError, MirrorConfigError, SchemaChangeError
from dbt.adapters.openmirror.package.publish import MANIFEST_FOLDER, MANIFEST_SCHEMA, StagedRun
from dbt.adapters.openmirror.planning.hash_diff import (
    HASHES_COLUMNS,
    HASHES_RUN_ID,
    ROWS_PER_BUCKET,
    bucket_count,
    hashed_columns,
    hashes_usable,
    writer_count,
)
from dbt.adapters.openmirror.planning.keys import (
    check_key_types,
    lookalike_warning,
    raise_key_problems,
    resolve_key_columns,
    string_keys,
)
from dbt.adapters.openmirror.planning.run_plan import (
    INCREMENTAL,
    SNAPSHOT_ROWS,
    SNAPSHOT_RUN_ID,
    SNAPSHOT_SEQUENCE_NUMBER,
    Destination,
    plan_run,
    snapshot_record,
    snapshot_rows_problem,
)
from dbt.adapters.openmirror.planning.schema_plan import ColumnSpec, SchemaPlan, check_output_columns, plan_schema
from dbt.adapters.openmirror.publishing.publisher import TableFolderState
from dbt.adapters.openmirror.rules.landing_zone import folder_name_problem, scratch_path
from dbt.adapters.openmirror.rules.markers import DELETE, INSERT, UPDATE, UPSERT
from dbt.adapters.openmirror.run import config as config_module
from dbt.adapters.openmirror.run.audit import unaudited_reason, verdict
from dbt.adapters.openmirror.run.config import (
    CONFIGS,
    VARS,
    closest_name,
    file_format_problem,
    location_root_problem,
    mirror_config,
    near_miss,
    var_flag,
)
from dbt.adapters.openmirror.run.relations import BACKUP, OWN_PREFIX, RunRelations
from dbt.adapters.openmirror.run.response import describe_change, empty_output_warning
from dbt.adapters.openmirror.run.statements import AdapterCatalog
from dbt.adapters.openmirror.spark.metastore_limits import PROPERTY_PART_LENGTH, read_properties
from tests.support.fake_warehouse import FakeRelation
from tests.support.package_macros import CompilationError, PackageMacros
from tests.support.sql_macros import sql_macros

LANDING_ZONE, SCHEMA, TABLE = "/lz", "shop", "orders"
TABLE_FOLDER = f"{SCHEMA}.schema/{TABLE}"
THIS = SimpleNamespace(schema=SCHEMA, identifier=TABLE)
SETTINGS = {"landing_zone": LANDING_ZONE, "table_folder": TABLE_FOLDER}


@pytest.fixture(scope="module")
def package():
    return PackageMacros(this=THIS)


def _jinja(call):
    """(value, None) or (None, the message of the compilation error) of a macro call."""
    try:
        return call(), None
    except CompilationError as exc:
        return None, exc.msg


def _python(call, *errors):
    try:
        return call(), None
    except errors as exc:
        return None, getattr(exc, "msg", str(exc))


def _spec(column):
    return {
        "name": column.name,
        "data_type": column.data_type,
        "is_complex": column.is_complex,
        "is_text": column.is_text,
        "is_floating": column.is_floating,
        "is_collated": column.is_collated,
        "published_type": column.published_type,
        "published_name": column.published_name,
    }


# -- 1. config choices (run/config.py; macros/package/settings.sql) ----------------------------

CONFIG_CASES = [
    {"unique_key": "id"},
    {"unique_key": ["id", "line"]},
    {"unique_key": " id "},
    {"unique_key": None},
    {"unique_key": []},
    {"unique_key": ""},
    {"unique_key": ["id", "ID"]},
    {"unique_key": ["id", 3]},
    {"unique_key": ["id", " "]},
    {"unique_key": {"id": 1}},
    {"unique_key": "id", "max_rows_per_file": True},
    {"unique_key": "id", "max_rows_per_file": False},
    {"unique_key": "id", "max_rows_per_file": 2.5},
    {"unique_key": "id", "max_rows_per_file": 0.0},
    {"unique_key": "id", "max_rows_per_file": 0},
    {"unique_key": "id", "max_rows_per_file": 100},
    {"unique_key": "id", "max_rows_per_file": -1},
    {"unique_key": "id", "max_rows_per_file": "100"},
    {"unique_key": "id", "max_rows_per_file": None},
    {"unique_key": "id", "parquet_compression": "zstd"},
    {"unique_key": "id", "parquet_compression": "ZSTD"},
    {"unique_key": "id", "parquet_compression": ""},
    {"unique_key": "id", "parquet_compression": "lz4"},
    {"unique_key": "id", "parquet_compression": ["zstd"]},
    {"unique_key": "id", "change_markers": "upsert"},
    {"unique_key": "id", "change_markers": "UPSERT"},
    {"unique_key": "id", "row_marker_position": "first"},
    {"unique_key": "id", "row_marker_position": "middle"},
    {"unique_key": "id", "publish": "after_tests"},
    {"unique_key": "id", "publish": "later"},
    {"unique_key": "id", "on_schema_change": "fail"},
    {"unique_key": "id", "on_schema_change": "sync_all_columns"},
    {"unique_key": "id", "on_schema_change": "bogus"},
    {"unique_key": "id", "show_key_values": False},
    {"unique_key": "id", "show_key_values": "no"},
    {"unique_key": "id", "show_key_values": 0},
    {"unique_key": "id", "mirror_schema": ""},
    {"unique_key": "id", "mirror_schema": "sales"},
    {"unique_key": "id", "mirror_schema": "_sales"},
    {"unique_key": "id", "mirror_schema": "a/b"},
    {"unique_key": "id", "mirror_schema": 5},
    {"unique_key": "id", "mirror_table": ".."},
    {"unique_key": "id", "mirror_table": "../../etc"},
    {"unique_key": "id", "mirror_table": "x.SCHEMA"},
    {"unique_key": "id", "mirror_table": 2024},
    {"unique_key": "id", "mirror_table": "a" * 129},
    {"unique_key": "id", "mirror_table": "order lines"},
    {"unique_key": " id"},
    {"unique_key": [" id", "id"]},
    {"unique_key": "id", "mirror_table": ""},
    {"unique_key": "id", "mirror_table": False},
    {"unique_key": "id", "mirror_schema": False},
    {"unique_key": "id", "publish": ""},
    {"unique_key": "id", "change_markers": ""},
    {"unique_key": "id", "parquet_compression": None},
    {"unique_key": "id", "row_marker_position": ""},
    {"unique_key": "id", "on_schema_change": ""},
    {"unique_key": "id", "deleteflag": "flag"},
    {"unique_key": "id", "unique_keys": ["id"]},
    {"uniqe_key": "id"},  # no unique_key at all: the misspelling is named first in both modes
    {"unique_key": "id", "Mirror_Table": "x"},
    {"unique_key": "id", "file_format": "delta", "partition_by": "day", "owner": "sales"},
]


def _settings(mirror):
    return {
        "unique_key": mirror.unique_key,
        "table_folder": mirror.table_folder,
        "parquet_compression": mirror.parquet_compression,
        "change_markers": mirror.change_markers,
        "row_marker_position": mirror.row_marker_position,
        "max_rows_per_file": mirror.max_rows_per_file,
        "show_key_values": mirror.show_key_values,
        "publish": mirror.publish,
        "on_schema_change": mirror.on_schema_change,
    }


@pytest.mark.parametrize("config", CONFIG_CASES, ids=repr)
def test_config_choices_agree(config):
    python, python_error = _python(lambda: mirror_config("m", SCHEMA, TABLE, config), MirrorConfigError)
    package = PackageMacros(config=config, variables={"openmirror_landing_zone": LANDING_ZONE}, this=THIS)
    jinja, jinja_error = _jinja(package.openmirror_package_settings)
    assert (python_error is None) == (jinja_error is None), (python_error, jinja_error)
    if python_error is None:
        assert {name: jinja[name] for name in _settings(python)} == _settings(python)
    else:  # both name the setting at fault
        setting = next(name for name in config if name in python_error)
        assert setting in jinja_error


PLAIN_NAMES = [("sales", "orders"), ("sales_2", "2024_orders"), ("s_", "o_1")]
UNQUOTED_SPARK_CANNOT_READ = [
    ("sales", "café"),
    ("sales", "a.b"),
    ("sales", "a b"),
    ("sales", "a`b"),
    ("s-1", "o"),
    ("sales", "2024"),
]
# Plain relation names that cannot name a landing-zone folder, when mirror_schema/mirror_table are not set.
FOLDER_RULES_REFUSE = [("_staging", "orders"), ("sales", "_orders"), ("sales", "o" * 129)]


@pytest.mark.parametrize(
    "schema, identifier",
    [
        *PLAIN_NAMES,
        ("Sales", "orders"),
        ("sales", "Orders"),
        ("sales", "order_Lines"),
        *UNQUOTED_SPARK_CANNOT_READ,
        *FOLDER_RULES_REFUSE,
        ("sales", "o" * 233),
    ],
)
def test_relation_names_agree(schema, identifier):
    """Spark lower-cases catalog names, and dbt-spark does not quote them: a relation dbt spells
    otherwise, or that Spark reads only quoted, is refused before anything runs."""
    config = {"unique_key": "id"}
    python, python_error = _python(lambda: mirror_config("m", schema, identifier, config), MirrorConfigError)
    this = SimpleNamespace(schema=schema, identifier=identifier)
    package = PackageMacros(config=config, variables={"openmirror_landing_zone": LANDING_ZONE}, this=this)
    _, jinja_error = _jinja(package.openmirror_package_settings)
    assert jinja_error == python_error
    assert (python_error is None) == ((schema, identifier) in PLAIN_NAMES)
    if len(identifier) > 232:  # past the folder rules' 128 too, but the alias' own limit comes first
        assert f"has {len(identifier)} characters" in python_error and "at most 232 characters" in python_error
    if (schema, identifier) in FOLDER_RULES_REFUSE:  # named as what the user set: the schema or the alias
        named = f"the schema '{schema}' (mirror_schema's default)" if schema.startswith("_") else "the alias"
        assert named in python_error and "to name the folder" in python_error


def test_on_schema_change_ignore_is_refused_in_package_mode_only():
    """'ignore' publishes fewer columns than the snapshot keeps, which package mode's snapshot
    cannot do: documented, and refused with a message that says so."""
    config = {"unique_key": "id", "on_schema_change": "ignore"}
    assert mirror_config("m", SCHEMA, TABLE, config).on_schema_change == "ignore"
    package = PackageMacros(config=config, variables={"openmirror_landing_zone": LANDING_ZONE}, this=THIS)
    _, error = _jinja(package.openmirror_package_settings)
    assert "not offered in package mode" in error


@pytest.mark.parametrize("config", [{"delete_flag": "deleted"}, {"reconcile_every": 24}], ids=repr)
def test_incremental_configs_are_refused_in_package_mode_only(config):
    """Package mode runs every model in full (is_incremental() stays false there): a delete flag it
    ignored would publish flagged rows as present ones."""
    config = {"unique_key": "id", **config}
    mirror_config("m", SCHEMA, TABLE, config)
    package = PackageMacros(config=config, variables={"openmirror_landing_zone": LANDING_ZONE}, this=THIS)
    _, error = _jinja(package.openmirror_package_settings)
    assert f"{next(iter(config.keys() - {'unique_key'}))} is not offered in package mode" in error


@pytest.mark.parametrize(
    "config, variables, named",
    [
        ({"landing_zone": ""}, {"openmirror_landing_zone": LANDING_ZONE}, 'landing zone as Spark writes it (got "")'),
        (
            {"landing_zone": False},
            {"openmirror_landing_zone": LANDING_ZONE},
            "landing zone as Spark writes it (got false)",
        ),
        ({}, {"openmirror_landing_zone": " "}, 'landing zone as Spark writes it (got " ")'),
        ({}, {}, "landing zone as Spark writes it (got null)"),
        (
            {},
            {"openmirror_landing_zone": LANDING_ZONE, "openmirror_manifest_schema": ""},
            'openmirror_manifest_schema must name a schema, got ""',
        ),
    ],
)
def test_an_empty_landing_zone_or_manifest_schema_is_refused_in_package_mode(config, variables, named):
    """Package mode's own settings: empty or not text, they are refused, not replaced by the var or the default."""
    package = PackageMacros(config={"unique_key": "id", **config}, variables=variables, this=THIS)
    _, error = _jinja(package.openmirror_package_settings)
    assert named in error


NAMES = [
    "deleteflag",
    "delete_flag",
    "Delete-Flag",
    "unique_keys",
    "uniqe_key",
    "publsh",
    "pub",
    "mirror_tabel",
    "location_root",
    "partition_by",
    "owner",
    "openmirror_dryrun",
    "OPENMIRROR_DRY_RUN",
    "openmirror_reconcil",
    "openmirror_anything",
    "dry_run",
    "start_date",
    " openmirror_key_hashes ",
]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("known", ["configs", "vars"])
def test_near_misses_agree(package, name, known):
    """A config key or var meant as one of ours is found alike in both modes (config.near_miss)."""
    names = list(CONFIGS if known == "configs" else VARS)
    assert package.openmirror_near_miss(name, names) == near_miss(name, names)
    assert tuple(package.openmirror_closest_name(name, names)) == closest_name(name, names)


def _check_vars(given):
    return _jinja(lambda: PackageMacros(invocation_args_dict={"vars": given}).openmirror_check_vars())


@pytest.mark.parametrize(
    "name, meant",
    [
        ("openmirror_dryrun", "openmirror_dry_run"),
        ("OPENMIRROR_DRY_RUN", "openmirror_dry_run"),
        ("openmirror-dry-run", "openmirror_dry_run"),
        ("open_mirror_reconcile", "openmirror_reconcile"),
        ("openmirror_key_hash", "openmirror_key_hashes"),
        ("openmirror_landingzone", "openmirror_landing_zone"),
        ("OpenMirror_Dry", "openmirror_dry_run"),
    ],
)
def test_a_var_named_like_ours_is_refused(name, meant):
    """Ignored, `--vars '{openmirror_dryrun: true}'` would publish: both materializations refuse it
    before anything is written, naming it and the var meant."""
    _, error = _check_vars({"start_date": "2024-01-01", name: True})
    assert f'--vars "{name}" is not a dbt-openmirror var' in error and f"did you mean {meant}?" in error


def test_our_vars_and_unrelated_ones_pass():
    assert _check_vars({**dict.fromkeys(VARS, True), "dry_run": 1, "start_date": "x", 3: 4}) == ("", None)
    assert _jinja(lambda: PackageMacros(invocation_args_dict={}).openmirror_check_vars()) == ("", None)


def _node(name, resource_type="model", schema=SCHEMA, alias=None, materialized="table"):
    return {
        "unique_id": f"{resource_type}.p.{name}",
        "name": name,
        "resource_type": resource_type,
        "database": None,
        "schema": schema,
        "alias": alias or name,
        "config": {"materialized": materialized},
    }


def _check_internal_names(*nodes):
    this = SimpleNamespace(database=None, schema=SCHEMA, identifier=TABLE)
    model = SimpleNamespace(name=TABLE, unique_id=f"model.p.{TABLE}", unrendered_config={})
    macros = PackageMacros(this=this, model=model)
    return _jinja(lambda: macros.openmirror_check_internal_names({n["unique_id"]: n for n in [_node(TABLE), *nodes]}))


@pytest.mark.parametrize(
    "node",
    [
        _node(f"{TABLE}__om_hashes"),
        _node(f"{TABLE}__OM_base", resource_type="seed"),
        _node("renamed", alias=f"{TABLE}__om_new", materialized="view"),
        _node(f"{TABLE}__dbt_backup", resource_type="snapshot", schema=SCHEMA.upper()),
    ],
    ids=lambda node: node["alias"],
)
def test_a_node_named_like_a_runs_own_table_is_refused(node):
    """The run would overwrite it with its key hashes or base table (and later fail on it)."""
    _, error = _check_internal_names(node)
    assert error.startswith(
        f"Model '{TABLE}': {node['resource_type']} '{node['name']}' ({node['schema']}.{node['alias']})"
    )
    assert f"{SCHEMA}.{TABLE}" in error


@pytest.mark.parametrize(
    "node",
    [
        _node(f"{TABLE}__om_hashes", schema="other"),
        _node(f"{TABLE}__om_hashes", materialized="ephemeral"),
        _node(f"{TABLE}_om_hashes"),
        _node(f"{TABLE}s__om_hashes"),
        _node(f"x_{TABLE}__om_hashes"),
        _node(f"{TABLE}__dbt_backup_2023"),  # runs build `<this>__dbt_backup` exactly
    ],
    ids=lambda node: f"{node['schema']}.{node['alias']}",
)
def test_nodes_named_apart_pass(node):
    assert _check_internal_names(node) == ("", None)


@pytest.mark.parametrize("publishes", [True, False])
def test_the_internal_suffixes_cover_every_table_a_run_builds(publishes):
    relations = RunRelations.of(FakeRelation(SCHEMA, TABLE), publishes)
    built = [getattr(relations, field.name) for field in fields(relations) if field.name not in ("target", "publishes")]
    identifiers = [relation.identifier for relation in [*built, *relations.layers()]]
    assert all(i.startswith(TABLE + OWN_PREFIX) or i == TABLE + BACKUP for i in identifiers)


ACCEPTED_VAR_VALUES = [True, False, "true", "TRUE", " yes ", "Yes", "1", 1, 0, "0", "false", "no", "on", "OFF"]
REFUSED_VAR_VALUES = [None, 2, 1.0, "", "treu", "y", [True]]


@pytest.mark.parametrize("value", ACCEPTED_VAR_VALUES + REFUSED_VAR_VALUES, ids=repr)
def test_flag_vars_agree(value):
    """`--vars '{openmirror_dry_run: ...}'`: the same value is a dry run, a run, or refused with
    the same message in both modes (a value the plugin takes for a dry run must not stage for
    real in package mode)."""
    python = _python(lambda: var_flag("openmirror_dry_run", value), MirrorConfigError)
    assert _jinja(lambda: PackageMacros().openmirror_var_flag("openmirror_dry_run", value)) == python


@pytest.mark.parametrize("value", REFUSED_VAR_VALUES, ids=repr)
def test_a_flag_var_that_is_neither_is_refused(value):
    """Read as false, these would publish when a dry run was asked for (`--vars
    '{openmirror_dry_run}'` gives None)."""
    with pytest.raises(MirrorConfigError, match="--vars openmirror_reconcile must be true or false, got "):
        var_flag("openmirror_reconcile", value)


# -- 2. folder-name rules (rules/landing_zone.py; openmirror_folder_name) ----------------------

FOLDER_NAMES = [
    "orders",
    "order lines",
    "é-table",
    "a" * 128,
    "a" * 129,
    "é" * 124,  # 248 bytes in UTF-8
    "é" * 125,
    "🚀" * 62,
    "🚀" * 63,
    "",
    ".",
    "..",
    "../etc",
    "a/..",
    "a\\b",
    "C:",
    "x\x00",
    "x\x1f",
    "x\x7f",
    "x\x80",
    " t",
    "t ",
    "\u00a0t",
    "t.",
    "_t",
    ".t",
    "x.schema",
    "x.Schema",
    "x.schema.y",
    "what?",
    "a|b",
    'a"b',
    "a<b",
    "%2E%2E",
    "100%",
    7,
    None,
    ["t"],
]


@pytest.mark.parametrize("name", FOLDER_NAMES, ids=repr)
@pytest.mark.parametrize("default_from", [None, "alias"])
def test_folder_name_rules_agree(package, name, default_from):
    assert package.openmirror_folder_name_problem(name) == folder_name_problem(name)
    _, error = _jinja(lambda: package.openmirror_folder_name("mirror_table", name, default_from))
    expected = _python(lambda: config_module._folder_name("m", "mirror_table", name, default_from), MirrorConfigError)
    assert error == expected[1]


# -- 3. key resolution (planning/keys.py, schema_plan.check_output_columns; openmirror_resolve_keys) --

KEY_CASES = [
    (["id"], [("id", "bigint"), ("name", "string")]),
    (["ID"], [("id", "bigint")]),
    (["id"], [("Id", "bigint")]),
    (["line", "order"], [("order", "int"), ("line", "int")]),
    (["id", "nope"], [("id", "int")]),
    (["x", "y"], [("id", "int")]),
    (["id"], [("id", "int"), ("__ROWMARKER__", "int")]),
    (["id"], [("id", "int"), ("__openmirror_hash1", "binary")]),
    (["id"], [("id", "int"), ("__openmirror", "int")]),
    (["tags"], [("tags", "map<string,int>")]),
    (["id", "tags"], [("id", "int"), ("tags", " MAP<string,int> ")]),
    (["score"], [("score", "double")]),
    (["score", "id"], [("score", " FLOAT "), ("id", "string")]),
    (["items"], [("items", "array<int>")]),
    (["s"], [("s", "struct<a:int>")]),
    # The mirror matches a complex key by its JSON text, where -0.0 and 0.0 differ.
    (["s"], [("s", "struct<x:double,y:int>")]),
    (["a"], [("a", "ARRAY<FLOAT>")]),
    (["s"], [("s", "struct<double:int,real:string>")]),  # fields named like the types
    (["s"], [("s", "struct<m:map<string,int>>")]),
    (["s"], [("s", "struct<map:int>")]),
    (["code"], [("code", "string collate UTF8_LCASE")]),
    (["id", "code"], [("id", "int"), ("code", "STRING COLLATE UNICODE")]),
    (["names"], [("names", "array<string collate UTF8_LCASE>")]),
    (["code"], [("code", "string collate UTF8_BINARY")]),
    (["code"], [("code", "string collate utf8_binary_rtrim")]),
    (["code"], [("code", "string"), ("note", "string collate UTF8_LCASE")]),
    (["id"], [("id", "int"), ("v", "void")]),
    (["id"], [("id", "int"), ("v", "interval day")]),
    (["id"], [("id", "int"), ("v", " INTERVAL YEAR TO MONTH ")]),
    (["id"], [("id", "int"), ("v", "time(6)")]),
    (["id"], [("id", "int"), ("v", "variant")]),
    (["id"], [("id", "int"), ("v", "geometry(4326)")]),
    (["id"], [("id", "int"), ("v", "timestamp"), ("w", "timestamp_ntz"), ("x", "array<interval day>")]),
    (["id"], [("id", "int"), ("m", "map<string,int>"), ("n", "MAP<bigint, array<map<decimal(10,2),string>>>")]),
    (["id"], [("id", "int"), ("m", "map<timestamp,string>")]),
    (["id"], [("id", "int"), ("m", "map<binary,string>")]),
    (["id"], [("id", "int"), ("m", "struct<a:map<struct<x:int>,string>>")]),
    (["id"], [("id", "int"), ("m", "map<string,map<date,int>>")]),
    (["id"], [("id", "int"), ("m", "map<string collate UTF8_LCASE,int>"), ("b", "map<boolean,double>")]),
    (["id"], [("id", "int"), ("Val", "int"), ("val", "int")]),  # spark.sql.caseSensitive=true
    (["id"], [("ID", "int"), ("id", "int")]),
]


def _python_keys(unique_key, specs):
    names = [spec.name for spec in specs]
    check_output_columns("m", specs)
    keys = resolve_key_columns("m", unique_key, names)
    by_name = {spec.name: spec for spec in specs}
    return keys, check_key_types("m", [by_name[k] for k in keys])


def _jinja_keys(package, unique_key, specs):
    keys = package.openmirror_resolve_keys(unique_key, [_spec(s) for s in specs])
    return keys, package.openmirror_check_key_types([_spec(s) for s in specs], keys)


@pytest.mark.parametrize("unique_key, columns", KEY_CASES, ids=repr)
def test_key_resolution_agrees(package, unique_key, columns):
    specs = [ColumnSpec(name, data_type) for name, data_type in columns]
    python = _python(lambda: _python_keys(unique_key, specs), KeyColumnsError, SchemaChangeError)
    assert _jinja(lambda: _jinja_keys(package, unique_key, specs)) == python


KEY_PROBLEMS = [("NULL", "id=NULL, line=3", 1), ("DUPLICATE", "id=7, line=3", 2)]


@pytest.mark.parametrize("problem", KEY_PROBLEMS)
@pytest.mark.parametrize("show_values", [True, False])
def test_key_problems_agree(package, problem, show_values):
    """The same message, with or without example values (show_key_values)."""
    _, python = _python(lambda: raise_key_problems("m", ["id", "line"], [problem], show_values), KeyColumnsError)
    _, jinja = _jinja(lambda: package.openmirror_raise_key_problems(["id", "line"], [problem], show_values))
    assert jinja == python
    assert ("id=" in jinja) == show_values
    assert ", (" not in jinja  # the hidden values' note reads as part of the sentence


@pytest.mark.parametrize("unique_key, columns", KEY_CASES + [(["code"], [("code", " VARCHAR(10) ")])], ids=repr)
def test_string_keys_agree(package, unique_key, columns):
    """Which key columns are compared with case and trailing spaces folded (lookalike warnings)."""
    specs = [ColumnSpec(name, data_type) for name, data_type in columns]
    keys = [spec for spec in specs if spec.name.lower() in {k.lower() for k in unique_key}]
    assert package.openmirror_string_keys([_spec(s) for s in specs], [k.name for k in keys]) == string_keys(keys)


@pytest.mark.parametrize("show_values", [True, False])
def test_lookalike_key_warnings_agree(package, show_values):
    pair = ("code=Abc", "code=abc ")
    python = lookalike_warning("m", ["code"], pair, show_values)
    assert package.openmirror_lookalike_warning(["code"], pair, show_values) == python
    assert ("Abc" in python) == show_values


# -- 4. the schema plan (planning/schema_plan.py; openmirror_schema_plan, openmirror_column_specs) --

ID, NAME, SCORE = ColumnSpec("id", "int"), ColumnSpec("name", "string"), ColumnSpec("score", "int")
KEY_STRUCT = ColumnSpec("sk", "struct<P:int,q:string>")
SCHEMA_CASES = [
    # (snapshot columns, model columns, on_schema_change, published names[, key columns])
    ([ID, NAME], [ID, NAME], "append_new_columns", None),
    ([ID, NAME], [ID, SCORE], "append_new_columns", None),
    ([ID, NAME], [ID, NAME, SCORE], "sync_all_columns", None),
    ([ID, NAME, SCORE], [ID, SCORE], "sync_all_columns", None),
    ([ID, SCORE], [ID, ColumnSpec("score", "string")], "sync_all_columns", None),
    ([ID, SCORE], [ID, ColumnSpec("score", "string")], "append_new_columns", None),
    ([ID, SCORE], [ID, ColumnSpec("score", " INT ")], "fail", None),
    ([ID, NAME], [ID, NAME, SCORE], "fail", None),
    ([ID, NAME, SCORE], [ID, NAME], "fail", None),
    ([ID, ColumnSpec("Name", "string")], [ID, NAME], "append_new_columns", None),
    ([ID, ColumnSpec("Name", "string")], [ID, NAME], "fail", None),
    ([ID, ColumnSpec("Name", "string")], [ID, NAME], "sync_all_columns", None),
    ([ID, NAME, SCORE], [ID, NAME], "append_new_columns", ["ID", "Name", "SCORE"]),
    ([ID, NAME], [ID, NAME], "append_new_columns", []),
    ([ID, ColumnSpec("a", "struct<x:int>")], [ID, ColumnSpec("a", "struct<x:int,y:int>")], "fail", None),
    ([ID, ColumnSpec("a", "array<int>")], [ID, ColumnSpec("a", "string")], "append_new_columns", None),
    ([ID, ColumnSpec("name", "string collate UTF8_LCASE")], [ID, NAME], "fail", None),
    ([ID, NAME], [ID, ColumnSpec("name", "STRING COLLATE UNICODE_CI")], "append_new_columns", None),
    # A struct or array key is matched by its JSON text: a field respelled or a scale changed is a new key.
    ([KEY_STRUCT, NAME], [ColumnSpec("sk", "struct<p:int,q:string>"), NAME], "append_new_columns", None, ["SK"]),
    ([KEY_STRUCT, NAME], [ColumnSpec("sk", "struct<p:int,q:string>"), NAME], "sync_all_columns", None, ["sk"]),
    ([KEY_STRUCT, NAME], [ColumnSpec("sk", "struct<p:int,q:string>"), NAME], "append_new_columns", None, ["name"]),
    ([KEY_STRUCT, NAME], [ColumnSpec("sk", " struct<P:int,q:string>"), NAME], "fail", None, ["sk"]),
    ([ColumnSpec("k", "array<decimal(10,2)>")], [ColumnSpec("k", "array<decimal(12,3)>")], "ignore", None, ["k"]),
]

SCHEMA_CASES_KEYED = [case if len(case) == 5 else (*case, ["id"]) for case in SCHEMA_CASES]


@pytest.mark.parametrize("previous, current, on_schema_change, published_names, key_columns", SCHEMA_CASES_KEYED)
def test_schema_plan_agrees(package, previous, current, on_schema_change, published_names, key_columns):
    python, python_error = _python(
        lambda: plan_schema("m", previous, current, on_schema_change, published_names, key_columns), SchemaChangeError
    )
    jinja, jinja_error = _jinja(
        lambda: package.openmirror_schema_plan(
            [_spec(c) for c in previous], [_spec(c) for c in current], on_schema_change, published_names, key_columns
        )
    )
    assert jinja_error == python_error
    struct_key_respelled = "sk" in [k.lower() for k in key_columns] and current[0].data_type == "struct<p:int,q:string>"
    if struct_key_respelled and on_schema_change != "sync_all_columns":
        assert "column 'sk' struct<P:int,q:string> -> struct<p:int,q:string>" in python_error
    if struct_key_respelled and on_schema_change == "sync_all_columns":
        assert "struct<p:int,q:string>" in python.rebuild_reason
    if python_error is not None:
        return
    assert jinja["columns"] == [_spec(c) for c in python.columns]
    assert jinja["kept"] == [_spec(c) for c in python.kept]
    assert jinja["added"] == [_spec(c) for c in python.added]
    assert [tuple(pair) for pair in jinja["respelled"]] == python.respelled
    assert jinja["rebuild_reason"] == python.rebuild_reason


@pytest.mark.parametrize(
    "data_type",
    [
        "int",
        " INT ",
        "Decimal(10,2)",
        "struct<a:int>",
        " STRUCT<a:int>",
        "array<string>",
        "MAP<string,int>",
        "string collate UTF8_LCASE",
        "string collate UTF8_BINARY",
        "string collate UTF8_BINARY_RTRIM",
        "array<string collate UTF8_LCASE>",
        " String",
        "varchar(10)",
        "CHAR(3)",
        "binary",
    ],
)
def test_column_specs_agree(package, data_type):
    column = SimpleNamespace(column="Col", dtype=data_type)
    assert package.openmirror_column_specs([column]) == [_spec(ColumnSpec("Col", data_type))]


WIDE_STRUCT = "struct<" + ",".join(f"f{i}:int" for i in range(25))
#: (column, what DESCRIBE says, its whole type) as Spark 4 describes a struct of more than 25 fields.
DESCRIBED_COLUMNS = [
    ("id", "int", "int"),
    ("Wide s", WIDE_STRUCT + ",... 2 more fields>", WIDE_STRUCT + ",f25:int,m:map<date,int>>"),
    ("# n", "struct<a:int>", "struct<a:int>"),
    ("deep", f"array<{WIDE_STRUCT},... 1 more fields>>", f"array<{WIDE_STRUCT},x:double>>"),
    ("", "string", "string"),
]
#: What DESCRIBE lists after the columns of a partitioned table.
PARTITION_SECTION = [("# Partition Information", "", ""), ("# col_name", "data_type", "comment"), ("id", "int", None)]


@pytest.mark.parametrize(
    "described, section",
    [
        (DESCRIBED_COLUMNS, PARTITION_SECTION),
        (DESCRIBED_COLUMNS, []),
        (DESCRIBED_COLUMNS[:1] + DESCRIBED_COLUMNS[2:3], PARTITION_SECTION),
        ([], []),
    ],
)
def test_relation_columns_agree(package, described, section):
    """Columns are DESCRIBE's rows up to its first row without a type (a name starting with '#'
    is a column), and a type DESCRIBE cut short is asked for in full, by one statement, in both
    modes."""
    relation = FakeRelation("s", "t")
    shortened = [(name, whole) for name, dtype, whole in described if dtype != whole]
    queries: list[str] = []

    def query(sql):
        queries.append(re.sub(r"\s+", " ", sql).strip())
        if sql.startswith("describe"):
            return SimpleNamespace(rows=[(name, dtype, None) for name, dtype, _ in described] + section)
        return SimpleNamespace(rows=[tuple(whole for _, whole in shortened)])

    jinja = PackageMacros(run_query=query).openmirror_relation_specs(relation)

    class Statements:
        def query(self, macro, **values):
            return query(str(getattr(sql_macros(), macro)(**values))).rows

    python = AdapterCatalog(None, Statements()).columns(relation)
    assert python == [ColumnSpec(name, whole) for name, _, whole in described]
    assert jinja == [_spec(column) for column in python]
    expected = ", ".join(f"typeof(first(`{name}`))" for name, _ in shortened)
    statements = ["describe table s.t"]
    if shortened:
        statements.append(
            f"select {expected} from (select {', '.join(f'`{n}`' for n, _ in shortened)} from s.t limit 0)"
        )
    assert queries == 2 * statements


# -- 5. the run plan (planning/run_plan.py; openmirror_package_run_plan) -------------------------


def _history(run="run-2", keys=("id",), landing_zone=LANDING_ZONE, table_folder=TABLE_FOLDER, published=("id", "name")):
    """What the snapshot records; None values are not recorded."""
    return {
        "run": run,
        "keys": keys,
        "landing_zone": landing_zone,
        "table_folder": table_folder,
        "published": published,
    }


RUN_PLAN_CASES = [
    # (history of {{ this }} or None, full_refresh, unique_key, snapshot columns, model columns, on_schema_change)
    (None, False, ["id"], None, [ID, NAME], "append_new_columns"),
    (None, True, ["id"], None, [ID, NAME], "append_new_columns"),
    ({}, False, ["id"], [ID, NAME], [ID, NAME], "append_new_columns"),
    (_history(), False, ["id"], [ID, NAME], [ID, NAME], "append_new_columns"),
    (_history(), True, ["id"], [ID, NAME], [ID, NAME], "append_new_columns"),
    (_history(keys=("name",)), False, ["id"], [ID, NAME], [ID, NAME], "append_new_columns"),
    (_history(keys=("name",)), True, ["id"], [ID, NAME], [ID, NAME], "append_new_columns"),
    (
        _history(keys=("id",), published=("id", "name")),
        False,
        ["ID"],
        [ID, NAME],
        [ColumnSpec("ID", "int"), NAME],
        "append_new_columns",
    ),
    (_history(keys=("ID",), published=("ID", "name")), False, ["id"], [ID, NAME], [ID, NAME], "append_new_columns"),
    (_history(landing_zone="/other"), False, ["id"], [ID, NAME], [ID, NAME], "append_new_columns"),
    (_history(landing_zone=None), False, ["id"], [ID, NAME], [ID, NAME], "append_new_columns"),
    (_history(table_folder="shop.schema/old"), False, ["id"], [ID, NAME], [ID, NAME], "append_new_columns"),
    (_history(), False, ["id"], [ID, NAME], [ID, NAME, SCORE], "append_new_columns"),
    (_history(), False, ["id"], [ID, NAME], [ID], "append_new_columns"),
    (_history(), False, ["id"], [ID, NAME], [ID, ColumnSpec("name", "int")], "sync_all_columns"),
    (_history(), False, ["id"], [ID, NAME], [ID, ColumnSpec("name", "int")], "append_new_columns"),
    (_history(), False, ["id"], [ID, NAME], [ID, NAME, SCORE], "fail"),
    (_history(published=None), False, ["id"], [ID, NAME], [ID, ColumnSpec("Name", "string")], "append_new_columns"),
    (_history(published="[1, 2]"), False, ["id"], [ID, NAME], [ID, NAME], "append_new_columns"),
    (_history(published="not json"), False, ["id"], [ID, NAME], [ID, NAME], "append_new_columns"),
    (_history(published='{"id": "id"}'), False, ["id"], [ID, NAME], [ID, NAME], "append_new_columns"),
    # {{ this }}'s columns altered by hand: a column added, one dropped, one respelled in case only.
    (_history(), False, ["id"], [ID, NAME, SCORE], [ID, NAME, SCORE], "append_new_columns"),
    (_history(), False, ["id"], [ID], [ID, NAME], "append_new_columns"),
    (_history(published=("id", "NAME")), False, ["id"], [ID, NAME], [ID, NAME], "append_new_columns"),
]


def _published_text(published):
    return published if isinstance(published, str) else json.dumps(list(published))


def _package_snapshot(history):
    """{{ this }}'s properties as package mode writes them ({}: a table that records nothing)."""
    if not history:
        return history
    properties = {
        "openmirror.staged_run_id": history["run"],
        "openmirror.key_columns": json.dumps(list(history["keys"])),
        "openmirror.table_folder": history["table_folder"],
    }
    if history["landing_zone"] is not None:
        properties["openmirror.landing_zone"] = history["landing_zone"]
    if history["published"] is not None:
        properties["openmirror.published_columns"] = _published_text(history["published"])
    return properties


def _plugin_inputs(history):
    """(snapshot record, table folder state) of the same history, published by the plugin: the
    table folder at the destination holds what the snapshot says when it was published there."""
    if history is None:
        return None, TableFolderState(exists=False, key_columns=None, last_sequence_number=0)
    if not history:
        return snapshot_record({}), TableFolderState(exists=True, key_columns=["id"], last_sequence_number=3)
    properties = {
        "openmirror.table_folder": history["table_folder"],
        SNAPSHOT_SEQUENCE_NUMBER: "3",
        SNAPSHOT_RUN_ID: history["run"],
    }
    if history["landing_zone"] is not None:
        properties["openmirror.landing_zone"] = history["landing_zone"]
    if history["published"] is not None:
        properties["openmirror.published_columns"] = _published_text(history["published"])
    here = history["table_folder"] == TABLE_FOLDER and history["landing_zone"] in (None, LANDING_ZONE)
    folder = TableFolderState(
        exists=here,
        key_columns=list(history["keys"]) if here else None,
        last_sequence_number=3 if here else 0,
        last_run_id=history["run"] if here else None,
    )
    return snapshot_record(properties), folder


@pytest.mark.parametrize("history, full_refresh, unique_key, previous, current, on_schema_change", RUN_PLAN_CASES)
def test_run_plan_agrees(package, history, full_refresh, unique_key, previous, current, on_schema_change):
    model_keys = resolve_key_columns("m", unique_key, [c.name for c in current])
    snapshot, folder = _plugin_inputs(history)
    destination = Destination("m", LANDING_ZONE, TABLE_FOLDER, "shop.orders")
    python, python_error = _python(
        lambda: plan_run(destination, model_keys, folder, snapshot, full_refresh, previous, current, on_schema_change),
        KeyColumnsError,
        SchemaChangeError,
    )
    settings = dict(SETTINGS, on_schema_change=on_schema_change)
    jinja, jinja_error = _jinja(
        lambda: package.openmirror_package_run_plan(
            _package_snapshot(history),
            [_spec(c) for c in previous or []],
            [_spec(c) for c in current],
            model_keys,
            settings,
            full_refresh,
        )
    )
    assert jinja_error == python_error
    if python_error is not None:
        return
    assert (jinja["load"] == "incremental") == (python.mode == INCREMENTAL)
    # A full load nobody asked for is warned about, with the same reason where both see it.
    assert (jinja["reason"] not in ("", "first publish", "--full-refresh")) == python.unexpected
    assert jinja["key_columns"] == python.key_columns
    assert jinja["plan"]["columns"] == [_spec(c) for c in python.schema.columns]
    assert jinja["plan"]["kept"] == [_spec(c) for c in python.schema.kept]
    assert [tuple(pair) for pair in jinja["plan"]["respelled"]] == python.schema.respelled


def test_an_empty_runs_table_is_a_first_publish(package):
    """`dbt run --empty` leaves `{{ this }}` without a record in both modes: the next run loads in full."""
    plan = package.openmirror_package_run_plan(
        {"openmirror.created_by": "empty run"},
        [_spec(ID)],
        [_spec(ID)],
        ["id"],
        SETTINGS,
        False,
    )
    assert (plan["load"], plan["reason"]) == ("full", "first publish")
    assert snapshot_record({"openmirror.created_by": "empty run"}) is None


# -- 6. whether key hashes can be trusted (hash_diff.hashes_usable; openmirror_hashes_usable) ----

SIGNATURE = "name string|score int"
HASH_CASES = [
    (None, "run-2", SIGNATURE),
    ({HASHES_RUN_ID: "run-2", HASHES_COLUMNS: SIGNATURE}, "run-2", SIGNATURE),
    ({HASHES_RUN_ID: "run-1", HASHES_COLUMNS: SIGNATURE}, "run-2", SIGNATURE),
    ({HASHES_RUN_ID: "run-2", HASHES_COLUMNS: "name string"}, "run-2", SIGNATURE),
    ({HASHES_RUN_ID: "run-2", HASHES_COLUMNS: SIGNATURE}, None, SIGNATURE),
    ({HASHES_RUN_ID: "", HASHES_COLUMNS: SIGNATURE}, "", SIGNATURE),
    ({}, "run-2", SIGNATURE),
    ({HASHES_COLUMNS: SIGNATURE}, "run-2", SIGNATURE),
    ({HASHES_RUN_ID: "RUN-2", HASHES_COLUMNS: SIGNATURE}, "run-2", SIGNATURE),
]


@pytest.mark.parametrize("properties, snapshot_run, signature", HASH_CASES, ids=repr)
def test_hashes_trust_agrees(package, properties, snapshot_run, signature):
    assert package.openmirror_hashes_usable(properties, snapshot_run, signature) == hashes_usable(
        properties, snapshot_run, signature
    )


ROW_COUNTS = [
    0,
    1,
    ROWS_PER_BUCKET - 1,
    ROWS_PER_BUCKET,
    ROWS_PER_BUCKET + 1,
    9_000_000,
    10_000_000,
    16_000_000,
    16_000_001,
    5_000_000_000,
    10**13,
]


def test_bucket_count_agrees(package):
    for rows in ROW_COUNTS:
        assert package.openmirror_bucket_count(rows) == bucket_count(rows), rows


@pytest.mark.parametrize("max_rows_per_file", [0, 1, 100, 2_500_000])
def test_writer_count_agrees(package, max_rows_per_file):
    for rows in ROW_COUNTS:
        assert package.openmirror_writer_count(rows, max_rows_per_file) == writer_count(rows, max_rows_per_file), rows


def test_hashed_columns_agree(package):
    columns = [
        ColumnSpec("Zeta", "int"),
        ColumnSpec("id", "bigint"),
        ColumnSpec("alpha", "string"),
        ColumnSpec("Line", "int"),
        ColumnSpec("beta", "array<int>"),
    ]
    keys = ["ID", "line"]
    hashed = package.openmirror_hashed_columns([_spec(c) for c in columns], keys)
    assert hashed == [_spec(c) for c in hashed_columns(SchemaPlan(columns=columns), keys)]


# -- 7. the manifest schema (package/publish.py MANIFEST_SCHEMA; macros/package/manifest.sql) ---


def test_manifest_table_has_the_publishers_columns(package):
    ddl = package.openmirror_manifest_ddl("s.openmirror_manifest", LANDING_ZONE)
    columns = re.search(r"\((.*?)\)\s*using parquet", ddl).group(1)
    spark = {"string": "string", "int64": "bigint", "timestamp[us, tz=UTC]": "timestamp"}
    assert [c.strip() for c in columns.split(",")] == [f"{f.name} {spark[str(f.type)]}" for f in MANIFEST_SCHEMA]
    assert f"location '{LANDING_ZONE}/{MANIFEST_FOLDER}'" in ddl


def _sql_value(text):
    """A value of `select <values>` as Spark reads it: string literals, casts of numbers or NULL."""
    if text.startswith("'"):
        return re.sub(r"\\(.)", r"\1", text[1:-1])
    if text == "current_timestamp()":
        return datetime.now(timezone.utc)
    number = re.fullmatch(r"cast\((-?\d+|null) as \w+\)", text).group(1)
    return None if number == "null" else int(number)


MANIFEST_RUNS = [
    {
        "run_id": "inv-1-abc",
        "model": "orders",
        "table_folder": TABLE_FOLDER,
        "key_columns": '["id"]',
        "base_run_id": None,
        "load": "full",
        "reason": "first publish",
        "staged_sequence": 1,
        "staged_folder": scratch_path("inv-1-abc"),
        "rows": 3,
        "marker_counts": '{"0": 3}',
        "relation": "analytics.orders",
    },
    {
        "run_id": "inv-2-abc",
        "model": "orders",
        "table_folder": "orders",
        "key_columns": '["id", "line"]',
        "base_run_id": "inv-1-abc",
        "load": "incremental",
        "reason": "",
        "staged_sequence": 2,
        "staged_folder": scratch_path("inv-2-abc"),
        "rows": 0,
        "marker_counts": "{}",
        "relation": "`it's`.`x y`",
    },
    {
        "run_id": "inv-3-abc",
        "model": "it's",
        "table_folder": TABLE_FOLDER,
        "key_columns": '["a\\\\b"]',
        "base_run_id": None,
        "load": "full",
        "reason": "the snapshot was published to 'x\\y'",
        "staged_sequence": 7,
        "staged_folder": scratch_path("inv-3-abc"),
        "rows": 5,
        "marker_counts": '{"1": 2, "2": 3}',
        "relation": None,  # staged before the manifest recorded relations
    },
]


@pytest.mark.parametrize("run", MANIFEST_RUNS, ids=lambda run: run["run_id"])
@pytest.mark.parametrize("state", ["staging", "held", "staged", "discarded"])
def test_manifest_rows_package_mode_writes_are_read_back(package, run, state):
    values = package.openmirror_manifest_values(run, state)
    row = dict(zip(MANIFEST_SCHEMA.names, map(_sql_value, values), strict=True))
    staged = StagedRun.from_row(row)
    assert staged.to_row(state) | {"recorded_at": None} == dict(
        run,
        key_columns=json.dumps(json.loads(run["key_columns"])),
        marker_counts=json.dumps(json.loads(run["marker_counts"])),
        state=state,
        recorded_at=None,
    )


# -- 8. staging paths (landing_zone.scratch_path; openmirror_staged_folder) ----------------------

RUN_IDS = [
    "0b7f6f3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b-1a2b3c4d",
    "run-1",
    "",
    "..",
    "../x",
    "a/b",
    "a b",
    "run_1",
    "é",
    "manifest",
    "LEASES",
    "probe-0a1b",
    "probes",
    "manifests",
    "x\n",
    5,
    None,
]


@pytest.mark.parametrize("run_id", RUN_IDS, ids=repr)
def test_staged_folder_agrees(package, run_id):
    python, python_error = _python(lambda: scratch_path(run_id), ValueError, TypeError)
    jinja, jinja_error = _jinja(lambda: package.openmirror_staged_folder(run_id))
    assert (jinja, jinja_error is None) == (python, python_error is None)


def test_package_run_ids_are_run_ids():
    package = PackageMacros(invocation_id="0b7f6f3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b")
    run_id = package.openmirror_package_run_id("model.shop.orders")
    assert package.openmirror_staged_folder(run_id) == scratch_path(run_id)


# -- 9. snapshot property keys (run_plan.py SNAPSHOT_*; openmirror_snapshot_properties) ---------


@pytest.mark.parametrize("held_manifest", [None, "s.openmirror_manifest"])
def test_snapshot_properties_read_back_alike(package, held_manifest):
    """What package mode records on `{{ this }}` is read by the plugin's rules the same way (the
    keys both modes share), and by package mode's."""
    plan = {"columns": [_spec(ColumnSpec("id", "int", "ID")), _spec(NAME)], "kept": [_spec(SCORE)]}
    written = package.openmirror_snapshot_properties("run-2", SETTINGS, ["ID"], plan, held_manifest, 7)
    record = snapshot_record(dict(written, **{SNAPSHOT_SEQUENCE_NUMBER: "3"}))
    assert (record.landing_zone, record.table_folder, record.held) == (LANDING_ZONE, TABLE_FOLDER, bool(held_manifest))
    assert record.rows == 7
    assert record.published_columns == package.openmirror_published_names(written) == ["ID", "name", "score"]
    keys = package.openmirror_constants()["properties"]
    assert written[keys["staged_run_id"]] == "run-2" and json.loads(written[keys["key_columns"]]) == ["ID"]
    assert set(written) <= set(keys.values())


# -- 10. marker values (rules/markers.py; macros/sql/parts.sql, the dry run's counts) -------------


@pytest.mark.parametrize(
    "change_markers, new, changed", [("insert_update_delete", INSERT, UPDATE), ("upsert", UPSERT, UPSERT)]
)
def test_markers_agree(package, change_markers, new, changed):
    assert int(package.openmirror_new_marker(change_markers)) == new
    assert int(package.openmirror_changed_marker(change_markers)) == changed
    assert int(package.openmirror_delete_marker()) == DELETE
    assert package.openmirror_constants()["markers"] == {
        "insert": INSERT,
        "update": UPDATE,
        "delete": DELETE,
        "upsert": UPSERT,
    }


@pytest.mark.parametrize("rows", [[], [(0, 2)], [(0, 1), (1, 1), (2, 1)], [("4", "3"), ("2", "1")], [(1, 5)]])
def test_change_counts_agree(package, rows):
    """A dry run's `+inserts ~updates -deletes ^upserts`, from the rows per marker Spark counted."""
    counts = {int(marker): int(n) for marker, n in rows}
    assert package.openmirror_change_counts(rows) == describe_change(counts, ["f"], "t").split(" -> ")[0]


@pytest.mark.parametrize("recorded, counted", [(None, 0), (3, 3), (0, 0), (3, 0), (3, 4), (0, 2)])
def test_snapshot_row_checks_agree(package, recorded, counted):
    """Whole rows are compared with `{{ this }}` only while it holds the rows its run recorded
    (a table whose files were lost reads as empty)."""
    table = f"{SCHEMA}.{TABLE}"
    python = snapshot_rows_problem("m", table, recorded, counted)
    assert package.openmirror_snapshot_rows_problem(table, recorded, counted) == python
    assert (python is None) == (recorded is None or recorded == counted)
    if python is not None:
        assert f"Model 'm': {table} holds {counted} rows, but the run that wrote it left {recorded}" in python
    if recorded is not None:
        properties = {SNAPSHOT_ROWS: str(recorded), SNAPSHOT_SEQUENCE_NUMBER: "1", "openmirror.table_folder": "f"}
        assert snapshot_record(properties).rows == recorded
        assert package.openmirror_constants()["properties"]["rows"] == SNAPSHOT_ROWS


def test_empty_output_warnings_agree(package):
    assert package.openmirror_empty_output_warning(TABLE_FOLDER) == empty_output_warning("m", TABLE_FOLDER)


# -- write-audit-publish's verdict (run/audit.py; openmirror_audit_verdict) ---------------------

AUDIT_MODEL = "model.shop.orders"
AUDIT_NODES = {
    AUDIT_MODEL: {"resource_type": "model", "depends_on": {"nodes": []}},
    "test.shop.unique_orders_id": {"resource_type": "test", "depends_on": {"nodes": [AUDIT_MODEL]}},
    "test.shop.relationships_orders": {"resource_type": "test", "depends_on": {"nodes": [AUDIT_MODEL, "model.shop.c"]}},
    "test.shop.other": {"resource_type": "test", "depends_on": {"nodes": ["model.shop.c"]}},
}


@pytest.mark.parametrize(
    "statuses",
    [
        {"unique_orders_id": "pass", "relationships_orders": "pass"},
        {"unique_orders_id": "pass", "relationships_orders": "warn"},
        {"unique_orders_id": "fail", "relationships_orders": "error"},
        {"unique_orders_id": "skipped", "relationships_orders": "pass"},
        {"unique_orders_id": "pass"},
        {},
    ],
)
@pytest.mark.parametrize("model", [AUDIT_MODEL, "model.shop.untested"])
def test_audit_verdict_agrees(package, model, statuses):
    results = [
        SimpleNamespace(node=SimpleNamespace(unique_id=f"test.shop.{name}"), status=status)
        for name, status in statuses.items()
    ]
    python = verdict(model, AUDIT_NODES, results)
    assert package.openmirror_audit_verdict(model, AUDIT_NODES, results) == {
        "publish": python.publish,
        "reason": python.reason,
    }


@pytest.mark.parametrize(
    "selected",
    [
        [AUDIT_MODEL, "test.shop.unique_orders_id", "test.shop.relationships_orders"],  # dbt build
        [AUDIT_MODEL, "test.shop.unique_orders_id"],  # one test excluded
        [AUDIT_MODEL],  # dbt run
        [AUDIT_MODEL, "model.shop.c", "test.shop.other"],
        [],  # a selection that does not name the model tells nothing
    ],
)
@pytest.mark.parametrize("model", [AUDIT_MODEL, "model.shop.untested"])
@pytest.mark.parametrize("publish", ["after_tests", "on_run"])
@pytest.mark.parametrize("reports_only", [False, True], ids=["publishing", "dry-run-or-empty"])
def test_unaudited_reason_agrees(package, model, selected, publish, reports_only):
    selected = [*selected, "model.shop.untested"] if selected else selected
    python = unaudited_reason(publish, reports_only, model, AUDIT_NODES, selected)
    assert package.openmirror_unaudited_reason(publish, reports_only, model, AUDIT_NODES, selected) == python
    expect_reason = (
        publish == "after_tests"
        and not reports_only
        and model == AUDIT_MODEL
        and selected
        and "test.shop.relationships_orders" not in selected
    )
    assert (python is not None) == bool(expect_reason)


@pytest.mark.parametrize("command, expected", [("build", ["model.shop.orders"]), ("retry", [])])
def test_a_retry_decides_nothing_from_the_selection(command, expected):
    """dbt retry leaves `selected_resources` as the process last set it (or empty)."""
    macros = PackageMacros(flags=SimpleNamespace(WHICH=command), selected_resources=["model.shop.orders"])
    assert macros.openmirror_selection() == expected


@pytest.mark.parametrize(
    "flag, configured, warned", [(True, False, True), (True, None, False), (False, False, False), (True, True, False)]
)
def test_full_refresh_false_overriding_the_flag_is_said(flag, configured, warned):
    """In the log, not as a warning: `--warn-error` would fail the runs `full_refresh: false` protects."""
    logged = []
    macros = PackageMacros(
        config={"full_refresh": configured},
        flags=SimpleNamespace(FULL_REFRESH=flag),
        log=lambda message, info=False: logged.append((message, info)) or "",
    )
    macros.openmirror_log_full_refresh_overridden()
    assert bool(logged) == warned and not macros.warnings
    assert all("full_refresh: false in its config overrides --full-refresh" in m and info for m, info in logged)


SAMPLE_GRAPH = {
    "nodes": {
        "model.shop.events": {"name": "events", "config": {"event_time": "updated_at"}},
        "seed.shop.regions": {"name": "regions", "config": {"event_time": None}},
        "model.shop.recent": {
            "name": "recent",
            "config": {"materialized": "ephemeral"},
            "depends_on": {"nodes": ["model.shop.events", "seed.shop.regions"]},
        },
        "model.shop.staged": {
            "name": "staged",
            "config": {"materialized": "view"},
            "depends_on": {"nodes": ["source.shop.raw.orders"]},
        },
        "model.shop.mart": {
            "name": "mart",
            "config": {},
            "depends_on": {"nodes": ["model.shop.staged", "model.shop.recent"]},
        },
        "model.shop.plain": {"name": "plain", "config": {}, "depends_on": {"nodes": ["seed.shop.regions"]}},
    },
    "sources": {"source.shop.raw.orders": {"name": "orders", "config": {"event_time": "ordered_at"}}},
}


@pytest.mark.parametrize(
    "empty, sample, depends_on, expected",
    [
        (False, None, ["model.shop.events"], None),
        (True, None, ["seed.shop.regions"], "--empty"),
        (False, "1 day", ["seed.shop.regions", "model.shop.plain"], None),  # nothing upstream is sampled
        (False, "1 day", ["model.shop.events", "seed.shop.regions"], "--sample filters events, upstream of this model"),
        (
            False,
            "3 days",
            ["source.shop.raw.orders", "model.shop.events"],
            "--sample filters orders, events, upstream of this model",
        ),
        # Through models in between, of any materialization, each named once.
        (False, "1 day", ["model.shop.recent"], "--sample filters events, upstream of this model"),
        (False, "1 day", ["model.shop.staged"], "--sample filters orders, upstream of this model"),
        (
            False,
            "1 day",
            ["model.shop.mart", "model.shop.events"],
            "--sample filters events, orders, upstream of this model",
        ),
    ],
)
def test_partial_output_names_what_the_invocation_leaves_out(empty, sample, depends_on, expected):
    """`--empty` and `--sample` build part of the model's rows (dbt samples what has an
    `event_time`, and models built from it hold the sample): such a run checks them and publishes
    nothing."""
    macros = PackageMacros(
        flags=SimpleNamespace(EMPTY=empty), invocation_args_dict={"sample": sample} if sample else {}
    )
    assert macros.openmirror_partial_output(depends_on, SAMPLE_GRAPH) == expected


# -- table properties longer than a metastore keeps (spark/metastore_limits.py) ---------------------

LONG = "".join(chr(ord("a") + i % 26) for i in range(9001))
PROPERTY_CASES = [
    {"openmirror.run_id": "r1"},
    {"openmirror.hash_columns": LONG, "openmirror.run_id": "r1"},
    {"openmirror.published_columns": "x" * PROPERTY_PART_LENGTH},
    {"openmirror.published_columns": "x" * (PROPERTY_PART_LENGTH + 1), "spark.sql.sources.schema.part.0": "{}"},
    {"openmirror.published_columns": "a'b\\c" * 2000},  # escaped after it is split
]
UNESCAPE = re.compile(r"\\(.)")
PAIR = re.compile(r"'((?:[^'\\]|\\.)*)' = '((?:[^'\\]|\\.)*)'")


def _stored(properties):
    """The properties as `openmirror_properties` has Spark store them (its string literals read back)."""
    pairs = PAIR.findall(str(sql_macros().openmirror_properties(properties)))
    return {UNESCAPE.sub(r"\1", key): UNESCAPE.sub(r"\1", value) for key, value in pairs}


@pytest.mark.parametrize("properties", PROPERTY_CASES, ids=lambda p: str({k: len(v) for k, v in p.items()}))
def test_long_properties_are_stored_in_parts_and_read_back(package, properties):
    stored = _stored(properties)
    assert all(len(value) <= PROPERTY_PART_LENGTH for value in stored.values())
    assert read_properties(stored) == properties == package.openmirror_read_properties(stored)


def test_a_shorter_value_written_over_parts_is_read_without_them(package):
    """`alter table ... set tblproperties` leaves the parts of an earlier, longer value."""
    stored = {**_stored({"openmirror.published_columns": LONG}), **_stored({"openmirror.published_columns": "short"})}
    expected = {"openmirror.published_columns": "short"}
    assert read_properties(stored) == expected == package.openmirror_read_properties(stored)


@pytest.mark.parametrize("file_format", [None, "parquet", "delta", "avro", "json", " CSV ", "text", "Hudi", 3])
def test_file_format_rules_agree(package, file_format):
    python = file_format_problem(file_format)
    assert package.openmirror_file_format_problem(file_format) == python
    assert (python is not None) == (str(file_format).strip().lower() in ("json", "csv", "text", "hudi"))
    if str(file_format).lower() == "hudi":
        assert "_hoodie_commit_time" in python


@pytest.mark.parametrize("location_root", [None, "", "/mnt/tables", "abfss://c@a.dfs.core.windows.net/t"])
def test_location_root_rules_agree(package, location_root):
    """dbt-spark places every table the run builds at `<location_root>/<alias>`, where `{{ this }}` is."""
    python = location_root_problem(location_root)
    assert package.openmirror_location_root_problem(location_root) == python
    assert (python is not None) == (location_root is not None)


@pytest.mark.parametrize(
    "rows, copied_from, lost",
    [
        ([("staged", "r1")], None, False),
        ([], None, True),  # the append did not arrive
        ([], "held", False),  # a settle that had no held row to copy: nothing was expected
        ([("held", "r1")], "held", True),
        ([("held", "r1"), ("discarded", "r1")], "held", False),
    ],
)
def test_a_manifest_row_that_did_not_arrive_fails_the_model(rows, copied_from, lost):
    """Spark's file commit may lose a row two threads append at once (macros/package/manifest.sql)."""
    statements: list[str] = []

    def statement(name, caller=None, **_):
        statements.append(caller())
        return ""

    state = "discarded" if copied_from else "staged"
    macros = PackageMacros(statement=statement, run_query=lambda sql: SimpleNamespace(rows=rows, sql=sql))

    def check():
        macros.openmirror_check_recorded("s.openmirror_manifest", ["r1"], state, copied_from=copied_from)

    if lost:
        with pytest.raises(CompilationError, match=f"the manifest row '{state}' of run r1 was not written"):
            check()
    else:
        check()
    assert statements == ["refresh table s.openmirror_manifest"]

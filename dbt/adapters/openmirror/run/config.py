"""The `open_mirror` model config, validated into one plain object before anything runs."""

import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol

from dbt.adapters.openmirror.errors import LandingZoneConfigError, MirrorConfigError
from dbt.adapters.openmirror.publishing.mirroring_service import DEFAULT_REBUILD_WAIT_SECONDS
from dbt.adapters.openmirror.rules.landing_zone import folder_name_problem, table_folder_path
from dbt.adapters.openmirror.run.relations import MAX_IDENTIFIER_LENGTH
from dbt.adapters.openmirror.storage import canonical_landing_zone

COMPRESSIONS = ("snappy", "zstd", "gzip", "none")
CHANGE_MARKERS = ("insert_update_delete", "upsert")
ROW_MARKER_POSITIONS = ("last", "first")
#: Publishes only the columns the snapshot has (schema_plan.py); not offered in package mode.
IGNORE = "ignore"
ON_SCHEMA_CHANGE = ("append_new_columns", "fail", "sync_all_columns", IGNORE)
#: When a run publishes: as it runs, or after the model's tests passed (audit.py).
ON_RUN, AFTER_TESTS = "on_run", "after_tests"
PUBLISH = (ON_RUN, AFTER_TESTS)
DEFAULT_LEASE_TTL_SECONDS = 300
#: Configs dbt gives every model a value for (on_schema_change='ignore'): only one the user set counts.
SET_BY_USER_ONLY = frozenset({"on_schema_change"})


class ConfigSource(Protocol):
    """A model's config as the materialization's `config` object (or a plain dict) offers it."""

    def get(self, name: str, default: Any = None) -> Any: ...


class ModelConfigSource(ConfigSource, Protocol):
    """A model's config and the names of the configs the user set (a plain dict: its keys)."""

    def keys(self) -> Collection[str]: ...


class UserSetConfig:
    """dbt's `config` for a model, without the values dbt filled in for configs the user did not set
    (`set_by_user`: the model's `unrendered_config`)."""

    def __init__(self, config: ConfigSource, set_by_user: Collection[str]) -> None:
        self.config, self.set_by_user = config, set_by_user

    def get(self, name: str, default: Any = None) -> Any:
        if name in SET_BY_USER_ONLY and name not in self.set_by_user:
            return default
        return self.config.get(name, default)

    def keys(self) -> Collection[str]:
        return self.set_by_user


@dataclass(frozen=True)
class MirrorConfig:
    model: str
    unique_key: list[str]
    mirror_schema: str
    mirror_table: str
    parquet_compression: str = "snappy"
    change_markers: str = "insert_update_delete"
    row_marker_position: str = "last"
    max_rows_per_file: int = 0
    on_schema_change: str = "append_new_columns"
    lease_ttl_seconds: int = DEFAULT_LEASE_TTL_SECONDS
    lease_wait_seconds: int = 0
    rebuild_wait_seconds: int = DEFAULT_REBUILD_WAIT_SECONDS
    publish: str = ON_RUN
    #: Example key values in error messages and warnings (off for sensitive keys).
    show_key_values: bool = True
    #: A boolean column marking deleted rows (e.g. `_fivetran_deleted`): its true rows are
    #: published as deletes and left out of the snapshot; the column itself is not published.
    delete_flag: str | None = None
    #: Run an incremental model in full every Nth run (planning/candidates.py); 0: never.
    reconcile_every: int = 0
    #: A full-diff run whose model reads what its snapshot was built from builds nothing
    #: (spark/model_inputs.py).
    skip_unchanged_inputs: bool = True

    @property
    def table_folder(self) -> str:
        return table_folder_path(self.mirror_schema, self.mirror_table)


#: The model configs open_mirror reads: MirrorConfig's, and package mode's `landing_zone`.
CONFIGS = tuple(field.name for field in fields(MirrorConfig) if field.name != "model") + ("landing_zone",)
#: The vars README documents; both modes know all of them (some act in package mode only).
VARS = (
    "openmirror_dry_run",
    "openmirror_reconcile",
    "openmirror_landing_zone",
    "openmirror_manifest_schema",
    "openmirror_key_hashes",
)
#: A var whose name starts so (in any case, without '_' or '-') is meant as one of ours.
VAR_PREFIX = "openmirror"
#: Names of this many letters or more are near misses two edits away; shorter ones one edit away.
LONG_NAME = 10


def spelling(name: str) -> str:
    """A name as its misspellings still match it: lower case, without '_', '-' or spaces."""
    return re.sub(r"[\s_-]", "", name.lower())


def edit_distance(first: str, second: str) -> int:
    """The fewest letters to insert, delete or replace to turn one word into the other."""
    previous = list(range(len(second) + 1))
    for i, letter in enumerate(first):
        current = [i + 1]
        for j, other in enumerate(second):
            current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (letter != other)))
        previous = current
    return previous[-1]


def closest_name(name: str, known: Sequence[str]) -> tuple[str, int]:
    """The known name nearest to `name` (the first of equals) and its edit distance, compared as spelled."""
    distances = [edit_distance(spelling(name), spelling(candidate)) for candidate in known]
    nearest = distances.index(min(distances))
    return known[nearest], distances[nearest]


def near_miss(name: str, known: Sequence[str]) -> str | None:
    """The known name `name` misspells (its spelling equal, or an edit or two away), or None."""
    # Names whose lengths differ by more than two are more than two edits apart.
    candidates = [known_name for known_name in known if abs(len(spelling(known_name)) - len(spelling(name))) <= 2]
    if name in known or not candidates:
        return None
    closest, distance = closest_name(name, candidates)
    return closest if distance <= (2 if len(spelling(closest)) >= LONG_NAME else 1) else None


def _config_names(model: str, names: Collection[str]) -> None:
    """dbt keeps any config key: a misspelt one would be ignored (`deleteflag` publishes the
    flagged rows as live ones)."""
    for name in sorted(names):
        meant = near_miss(name, CONFIGS)
        if meant:
            raise MirrorConfigError(
                f"Model '{model}': config {name!r} is not an open_mirror config, and would be ignored; "
                f"did you mean {meant!r}?"
            )


def _choice(model: str, config: ConfigSource, name: str, choices: tuple) -> str:
    value = config.get(name)
    if value is None:
        return choices[0]
    if value not in choices:
        raise MirrorConfigError(f"Model '{model}': {name}={value!r} is not one of {', '.join(choices)}")
    return value


def _unique_key(model: str, value: Any) -> list[str]:
    keys = [value] if isinstance(value, str) else value
    if not keys or not isinstance(keys, (list, tuple)):
        raise MirrorConfigError(
            f"Model '{model}': materialized='open_mirror' needs a unique_key (a column name or a "
            f"list of them), because the mirror applies updates and deletes by key; got {value!r}"
        )
    # Column names are taken as written: ` id` and `id` are two columns.
    for key in keys:
        if not isinstance(key, str) or not key.strip():
            raise MirrorConfigError(f"Model '{model}': unique_key entry {key!r} is not a column name")
    duplicates = {k for k in keys if [c.lower() for c in keys].count(k.lower()) > 1}
    if duplicates:
        raise MirrorConfigError(f"Model '{model}': unique_key repeats {sorted(duplicates)}")
    return list(keys)


def _delete_flag(model: str, value: Any, unique_key: list[str]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise MirrorConfigError(f"Model '{model}': delete_flag must name a boolean column, got {value!r}")
    if value.lower() in {k.lower() for k in unique_key}:
        raise MirrorConfigError(f"Model '{model}': delete_flag {value!r} is a unique_key column")
    return value


#: File formats that cannot hold a snapshot, and why: `{{ this }}` is the record of what was
#: published. One that does not keep Spark's types would change the values the next diff compares
#: and the change files carry; Hudi adds its own columns to every table.
UNFIT_FILE_FORMATS = {
    **dict.fromkeys(
        ("json", "csv", "text"),
        "does not keep Spark's types (JSON keeps timestamps in milliseconds, CSV and text no types at all)",
    ),
    "hudi": "adds columns of its own (_hoodie_commit_time, _hoodie_record_key, ...) that change with every write",
}


def file_format_problem(value: Any) -> str | None:
    """Why the model's `file_format` cannot hold its snapshot, or None."""
    why = UNFIT_FILE_FORMATS.get(value.strip().lower()) if isinstance(value, str) else None
    if why is None:
        return None
    return f"file_format={value!r} {why}, and {{{{ this }}}} is the record of what was published: use parquet or delta"


def location_root_problem(value: Any) -> str | None:
    """Why the model cannot set dbt-spark's `location_root`, or None: every table its run builds
    beside `{{ this }}` would be placed at `<location_root>/<alias>`, where `{{ this }}` is, so
    the second run fails (or, allowed to, overwrites the snapshot's files before it publishes)."""
    if value is None:
        return None
    return (
        f"location_root={value!r} is not supported: dbt-spark places every table a run builds at "
        "<location_root>/<alias>, so the tables an open_mirror run builds beside {{ this }} would be written "
        "over it. Leave it unset (the tables are kept in the schema's location)"
    )


def _folder_name(model: str, setting: str, value: Any, default_from: str | None = None) -> str:
    """`value` of `setting`, or, with `default_from`, the model's schema or alias it defaults to."""
    problem = folder_name_problem(value)
    if problem:
        named = (
            f"{setting}={value!r}" if default_from is None else f"the {default_from} {value!r} ({setting}'s default)"
        )
        advice = "" if default_from is None else f"; set {setting} to name the folder"
        raise MirrorConfigError(f"Model '{model}': {named} cannot name a landing-zone folder: {problem}{advice}")
    return value


def _folder_setting(model: str, config: ConfigSource, setting: str, default: str, default_from: str) -> str:
    """A folder-name config, or the default only when it is not set (an empty one is refused)."""
    value = config.get(setting)
    if value is None:
        return _folder_name(model, setting, default, default_from)
    return _folder_name(model, setting, value)


#: A schema or table name Spark's SQL reads without quotes (dbt-spark does not quote them).
PLAIN_RELATION_NAME = re.compile(r"[a-z0-9_]*[a-z_][a-z0-9_]*", re.IGNORECASE)


def _relation_name(model: str, schema: str, identifier: str) -> None:
    """Spark's catalog lower-cases schema and table names: dbt's relation cache would then hold
    two spellings of each relation the run renames, and stop the run after it published. And
    dbt-spark writes them unquoted, so any other character fails as Spark's parse error."""
    if schema != schema.lower() or identifier != identifier.lower():
        raise MirrorConfigError(
            f"Model '{model}': Spark's catalog names the relation {schema}.{identifier} in lower case "
            f"({schema.lower()}.{identifier.lower()}), and dbt cannot track it under both spellings. "
            "Spell the schema and alias in lower case; mirror_schema and mirror_table name the "
            "landing-zone folders in any case."
        )
    if not (PLAIN_RELATION_NAME.fullmatch(schema) and PLAIN_RELATION_NAME.fullmatch(identifier)):
        raise MirrorConfigError(
            f"Model '{model}': Spark's SQL reads the relation name {schema}.{identifier} only quoted, and "
            "dbt-spark does not quote it. Spell the schema and alias with letters a-z, digits and underscores; "
            "mirror_schema and mirror_table name the landing-zone folders with other characters."
        )
    if len(identifier) > MAX_IDENTIFIER_LENGTH:
        raise MirrorConfigError(
            f"Model '{model}': the alias {identifier} has {len(identifier)} characters, and the tables a run builds "
            f"beside it add up to {255 - MAX_IDENTIFIER_LENGTH} more, past the 255 a table's folder name can have. "
            f"Use an alias of at most {MAX_IDENTIFIER_LENGTH} characters; mirror_table names the landing-zone folder."
        )


def _whole_number(model: str, name: str, value: Any, default: int, minimum: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise MirrorConfigError(f"Model '{model}': {name} must be a whole number of at least {minimum}, got {value!r}")
    return value


def _flag(model: str, name: str, value: Any, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise MirrorConfigError(f"Model '{model}': {name} must be true or false, got {value!r}")
    return value


def mirror_config(model: str, schema: str, identifier: str, config: ModelConfigSource) -> MirrorConfig:
    """Validate a model's config; defaults follow the model's schema and identifier."""
    _relation_name(model, schema, identifier)
    _config_names(model, config.keys())
    # '' is the mirror's default schema: the table folder sits at the root, without a schema folder.
    mirror_schema = (
        "" if config.get("mirror_schema") == "" else _folder_setting(model, config, "mirror_schema", schema, "schema")
    )
    unique_key = _unique_key(model, config.get("unique_key"))
    problem = file_format_problem(config.get("file_format")) or location_root_problem(config.get("location_root"))
    if problem:
        raise MirrorConfigError(f"Model '{model}': {problem}")
    return MirrorConfig(
        model=model,
        unique_key=unique_key,
        mirror_schema=mirror_schema,
        mirror_table=_folder_setting(model, config, "mirror_table", identifier, "alias"),
        parquet_compression=_choice(model, config, "parquet_compression", COMPRESSIONS),
        change_markers=_choice(model, config, "change_markers", CHANGE_MARKERS),
        row_marker_position=_choice(model, config, "row_marker_position", ROW_MARKER_POSITIONS),
        max_rows_per_file=_whole_number(model, "max_rows_per_file", config.get("max_rows_per_file"), 0, 0),
        on_schema_change=_choice(model, config, "on_schema_change", ON_SCHEMA_CHANGE),
        lease_ttl_seconds=_whole_number(
            model, "lease_ttl_seconds", config.get("lease_ttl_seconds"), DEFAULT_LEASE_TTL_SECONDS, 1
        ),
        lease_wait_seconds=_whole_number(model, "lease_wait_seconds", config.get("lease_wait_seconds"), 0, 0),
        publish=_choice(model, config, "publish", PUBLISH),
        show_key_values=_flag(model, "show_key_values", config.get("show_key_values"), True),
        rebuild_wait_seconds=_whole_number(
            model, "rebuild_wait_seconds", config.get("rebuild_wait_seconds"), DEFAULT_REBUILD_WAIT_SECONDS, 0
        ),
        delete_flag=_delete_flag(model, config.get("delete_flag"), unique_key),
        reconcile_every=_whole_number(model, "reconcile_every", config.get("reconcile_every"), 0, 0),
        skip_unchanged_inputs=_flag(model, "skip_unchanged_inputs", config.get("skip_unchanged_inputs"), True),
    )


def check_model_landing_zone(model: str, configured: Any, profile_landing_zone: str) -> None:
    """The model config `landing_zone` is package mode's (it overrides the var there): the plugin
    publishes every model to its profile's landing zone, so one that names another is refused
    rather than published where the user did not ask. The profile's, in any spelling, is fine:
    one project serves both modes."""
    if configured is None:
        return
    try:
        same = isinstance(configured, str) and canonical_landing_zone(configured) == profile_landing_zone
    except LandingZoneConfigError:
        same = False
    if not same:
        raise MirrorConfigError(
            f"Model '{model}': landing_zone {configured!r} is package mode's config, and is not the profile's "
            f"landing_zone ({profile_landing_zone}), where the plugin publishes every model. Remove it from the "
            "model (or give the profile's), or publish the model with a target whose landing_zone it is."
        )


#: How a flag var may be spelled (`--vars '{openmirror_dry_run: true}'`, or quoted in YAML).
TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")


def var_flag(name: str, value: Any) -> bool:
    """A var that switches something on or off, as given on the command line or in dbt_project.yml.
    Anything else is refused: `{openmirror_dry_run}` (no value) or a misspelt `treu` read as false
    would publish when a dry run was asked for."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower() if isinstance(value, (str, int)) else None
    if word in TRUE_WORDS or word in FALSE_WORDS:
        return word in TRUE_WORDS
    raise MirrorConfigError(f"--vars {name} must be true or false, got {json.dumps(value, default=str)}")

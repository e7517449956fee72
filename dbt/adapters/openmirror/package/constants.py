"""The values package mode's Jinja shares with the Python, rendered into `macros/package/constants.sql`.

Package mode decides in Jinja what the plugin decides in Python, with the same names and values:
table property keys, the manifest's columns and states, row markers, staging paths, reserved
column names, folder-name rules and config choices. Each is defined once in the Python module it
belongs to; this module collects them, and `python -m dbt.adapters.openmirror.package.constants`
writes them as the `openmirror_constants()` macro (a unit test fails when the file is stale).
"""

import json
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa

from dbt.adapters.openmirror.package.publish import (
    DISCARDED,
    FULL,
    HELD,
    INCREMENTAL,
    MANIFEST_FOLDER,
    MANIFEST_SCHEMA,
    PUBLISHED,
    STAGED,
    STAGING,
    SUPERSEDED,
)
from dbt.adapters.openmirror.planning.hash_diff import HASHES_COLUMNS, HASHES_RUN_ID
from dbt.adapters.openmirror.planning.keys import HIDDEN, NESTED_FLOAT
from dbt.adapters.openmirror.planning.run_plan import (
    FIRST_PUBLISH,
    FULL_REFRESH,
    SNAPSHOT_HELD,
    SNAPSHOT_LANDING_ZONE,
    SNAPSHOT_PUBLISHED_COLUMNS,
    SNAPSHOT_ROWS,
    SNAPSHOT_TABLE_FOLDER,
)
from dbt.adapters.openmirror.planning.schema_plan import (
    COLLATION_CLAUSE,
    FAITHFUL_MAP_KEY,
    FLOATING_POINT_TYPES,
    INTERNAL_PREFIX,
    MAP_START,
    NON_BINARY_COLLATION,
    ROW_MARKER_NAME,
    SHORTENED_TYPE,
    TEXT_TYPES,
    TYPE_WORD,
    UNPUBLISHABLE_TYPES,
)
from dbt.adapters.openmirror.rules.landing_zone import (
    FORBIDDEN_NAME_CHARACTERS,
    MAX_NAME_BYTES,
    MAX_NAME_LENGTH,
    RUN_ID_PATTERN,
    RUN_ID_RULE,
    SCHEMA_FOLDER_SUFFIX,
    STAGING_ROOT,
)
from dbt.adapters.openmirror.rules.markers import DELETE, INSERT, ROW_MARKER, UPDATE, UPSERT
from dbt.adapters.openmirror.run.config import (
    CHANGE_MARKERS,
    COMPRESSIONS,
    CONFIGS,
    FALSE_WORDS,
    IGNORE,
    LONG_NAME,
    ON_SCHEMA_CHANGE,
    PLAIN_RELATION_NAME,
    PUBLISH,
    ROW_MARKER_POSITIONS,
    TRUE_WORDS,
    UNFIT_FILE_FORMATS,
    VAR_PREFIX,
    VARS,
)
from dbt.adapters.openmirror.run.relations import BACKUP, MAX_IDENTIFIER_LENGTH, OWN_PREFIX
from dbt.adapters.openmirror.spark.metastore_limits import PART_KEY, PARTS_MARKER
from dbt.adapters.openmirror.spark.parquet_writes import PARQUET_WRITE_SETTINGS

#: Package mode's own snapshot properties: the staged run `{{ this }}` reflects (the key hashes
#: carry it as HASHES_RUN_ID), its declared key, an `--empty` run's table, a held run's manifest.
PACKAGE_RUN_ID = "openmirror.staged_run_id"
PACKAGE_KEY_COLUMNS = "openmirror.key_columns"
CREATED_BY, EMPTY_RUN = "openmirror.created_by", "empty run"
HELD_MANIFEST = "openmirror.manifest"
#: The manifest table records the landing zone it belongs to under the snapshot's key.
MANIFEST_LANDING_ZONE = SNAPSHOT_LANDING_ZONE
#: package mode offers every on_schema_change but 'ignore' (its snapshot keeps every column).
PACKAGE_ON_SCHEMA_CHANGE = tuple(choice for choice in ON_SCHEMA_CHANGE if choice != IGNORE)

_SPARK_TYPES = {pa.string(): "string", pa.int64(): "bigint"}


def _spark_type(arrow_type: pa.DataType) -> str:
    if pa.types.is_timestamp(arrow_type):
        return "timestamp"
    return _SPARK_TYPES[arrow_type]


def manifest_columns() -> list[list[str]]:
    """[name, Spark type] of the manifest table, in its order (MANIFEST_SCHEMA)."""
    return [[field.name, _spark_type(field.type)] for field in MANIFEST_SCHEMA]


def constants() -> dict[str, Any]:
    """What `openmirror_constants()` returns in Jinja."""
    return {
        "choices": {
            "parquet_compression": list(COMPRESSIONS),
            "change_markers": list(CHANGE_MARKERS),
            "row_marker_position": list(ROW_MARKER_POSITIONS),
            "publish": list(PUBLISH),
            "on_schema_change": list(PACKAGE_ON_SCHEMA_CHANGE),
        },
        "folder_names": {
            "max_length": MAX_NAME_LENGTH,
            "max_bytes": MAX_NAME_BYTES,
            "forbidden": FORBIDDEN_NAME_CHARACTERS.pattern,
            "schema_suffix": SCHEMA_FOLDER_SUFFIX,
        },
        "flag_words": {"true": list(TRUE_WORDS), "false": list(FALSE_WORDS)},
        "names": {
            "configs": list(CONFIGS),
            "vars": list(VARS),
            "var_prefix": VAR_PREFIX,
            "long_name": LONG_NAME,
            "own_relations": {"prefix": OWN_PREFIX, "backup": BACKUP},
            "plain_relation_name": PLAIN_RELATION_NAME.pattern,
            "max_identifier_length": MAX_IDENTIFIER_LENGTH,
        },
        "hidden_values": HIDDEN,
        "text_types": list(TEXT_TYPES),
        "non_binary_collation": NON_BINARY_COLLATION.pattern,
        "nested_float": NESTED_FLOAT.pattern,
        "shortened_type": SHORTENED_TYPE.pattern,
        "loads": {"full": FULL, "incremental": INCREMENTAL},
        "manifest_columns": manifest_columns(),
        "manifest_folder": MANIFEST_FOLDER,
        "parquet_write_settings": PARQUET_WRITE_SETTINGS,
        "unfit_file_formats": UNFIT_FILE_FORMATS,
        "metastore": {"parts_marker": PARTS_MARKER, "part_key": PART_KEY.pattern},
        "markers": {"insert": INSERT, "update": UPDATE, "delete": DELETE, "upsert": UPSERT},
        "properties": {
            "staged_run_id": PACKAGE_RUN_ID,
            "key_columns": PACKAGE_KEY_COLUMNS,
            "landing_zone": SNAPSHOT_LANDING_ZONE,
            "table_folder": SNAPSHOT_TABLE_FOLDER,
            "published_columns": SNAPSHOT_PUBLISHED_COLUMNS,
            "held": SNAPSHOT_HELD,
            "rows": SNAPSHOT_ROWS,
            "manifest": HELD_MANIFEST,
            "created_by": CREATED_BY,
            "manifest_landing_zone": MANIFEST_LANDING_ZONE,
            "hashes_run_id": HASHES_RUN_ID,
            "hashes_columns": HASHES_COLUMNS,
        },
        "reasons": {"first_publish": FIRST_PUBLISH, "full_refresh": FULL_REFRESH},
        "reserved": {"row_marker": ROW_MARKER, "row_marker_lower": ROW_MARKER_NAME, "internal_prefix": INTERNAL_PREFIX},
        "unpublishable_types": {
            "reasons": UNPUBLISHABLE_TYPES,
            "type_word": TYPE_WORD.pattern,
            "map_start": MAP_START.pattern,
            "faithful_map_key": FAITHFUL_MAP_KEY.pattern,
        },
        "collation_clause": COLLATION_CLAUSE.pattern,
        "floating_point_types": list(FLOATING_POINT_TYPES),
        "run_id_pattern": RUN_ID_PATTERN.pattern,
        "run_id_rule": RUN_ID_RULE,
        "empty_run": EMPTY_RUN,
        "staging_root": STAGING_ROOT,
        "states": {
            "staging": STAGING,
            "held": HELD,
            "staged": STAGED,
            "discarded": DISCARDED,
            "published": PUBLISHED,
            "superseded": SUPERSEDED,
        },
    }


def render() -> str:
    """The text of `macros/package/constants.sql`."""
    entries = ",\n".join(
        f"      {json.dumps(name)}: {json.dumps(value)}" for name, value in sorted(constants().items())
    )
    return (
        "{#- Generated by `python -m dbt.adapters.openmirror.package.constants` from the Python modules\n"
        "    that define each value (dbt/adapters/openmirror/package/constants.py); do not edit. -#}\n"
        "{%- macro openmirror_constants() -%}\n"
        "  {{ return({\n"
        f"{entries}\n"
        "  }) }}\n"
        "{%- endmacro -%}\n"
    )


#: Where the plugin ships the macros (in the repository, a link to its `macros/`).
CONSTANTS_FILE = Path(__file__).resolve().parents[3] / "include" / "openmirror" / "macros" / "package" / "constants.sql"


def main() -> int:
    CONSTANTS_FILE.write_text(render(), encoding="utf-8")
    print(f"wrote {CONSTANTS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

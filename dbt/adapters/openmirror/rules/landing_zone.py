"""The landing zone's naming rules (spec sections 1, 2 and 4), as pure functions.

Paths here are relative POSIX paths inside the landing zone root; storage backends resolve them.
"""

import json
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from dbt.adapters.openmirror.errors import PublishError
from dbt.adapters.openmirror.rules.metadata_files import TableMetadata, parse_table_metadata

if TYPE_CHECKING:
    from dbt.adapters.openmirror.storage.base import LandingZoneStorage

METADATA_FILE = "_metadata.json"
# Our durable record of what was published, beside the data files. The `_` prefix keeps the
# mirror from reading it, and deleting the table folder (a rebuild) deletes it with the table.
PUBLISH_RECORD_FILE = "_dbt_openmirror.json"
# The service moves processed data files here; numbers found in them still count.
PROCESSED_FOLDERS = ("_ProcessedFiles", "_FilesReadyToDelete")
SCRATCH_FOLDER = "_scratchPad"
# dbt-openmirror's own folder in it: staged runs, leases, package mode's manifest.
STAGING_ROOT = f"{SCRATCH_FOLDER}/dbt-openmirror"
# Identifies the publisher to the service (spec section 1), at the landing zone root.
PARTNER_EVENTS_FILE = "_partnerEvents.json"
SCHEMA_FOLDER_SUFFIX = ".schema"
# Tables without a schema folder land in the mirrored database's default schema.
DEFAULT_SCHEMA = "dbo"

# Beside the runs' staged folders (named by run id), the staging root holds our own: package
# mode's manifest, the leases, and `dbt debug`'s write probes.
MANIFEST_FOLDER = f"{STAGING_ROOT}/manifest"
LEASE_FOLDER = f"{STAGING_ROOT}/leases"
PROBE_FOLDER_PREFIX = f"{STAGING_ROOT}/probe-"

_OWN_NAMES = [folder.rpartition("/")[2] for folder in (MANIFEST_FOLDER, LEASE_FOLDER)]
_OWN_PREFIX = PROBE_FOLDER_PREFIX.rpartition("/")[2]

SEQUENCE_DIGITS = 20
# Run ids name staged folders, so they are plain (Spark never sees user-chosen characters in a
# path), and never name one of our own folders, in any case: discarding such a run (an id read
# from a manifest, journal or lease anyone can edit) would delete that folder.
RUN_ID_PATTERN = re.compile(rf"(?!(?i:{'|'.join(_OWN_NAMES)})\Z|(?i:{re.escape(_OWN_PREFIX)}))[A-Za-z0-9-]+")
RUN_ID_RULE = f"letters, digits and '-', and not {', '.join(_OWN_NAMES)} or {_OWN_PREFIX}*"
MAX_NAME_LENGTH = 128
#: Local file systems take 255 bytes a folder name; a schema folder adds its suffix.
MAX_NAME_BYTES = 255 - len(SCHEMA_FOLDER_SUFFIX)
# Characters a folder name cannot hold: path separators, what Windows and OneLake refuse, controls,
# and `%`: whatever percent-decodes the name once (the service, delta-rs) would read another folder.
FORBIDDEN_NAME_CHARACTERS = re.compile(r'[/\\:*?"<>|%\x00-\x1f\x7f]')


def data_file_name(sequence_number: int) -> str:
    if not 0 < sequence_number < 10**SEQUENCE_DIGITS:
        raise ValueError(f"sequence number out of range: {sequence_number}")
    return f"{sequence_number:0{SEQUENCE_DIGITS}d}.parquet"


def parse_sequence_number(file_name: str, extension: str = "parquet") -> int | None:
    """The number of a sequentially named data file (20 digits + `.<extension>`, from 1), or None."""
    stem, dot, suffix = file_name.partition(".")
    if dot and suffix == extension and len(stem) == SEQUENCE_DIGITS and stem.isascii() and stem.isdigit():
        return int(stem) or None  # numbering starts at 1: a file 0 is never applied
    return None


def highest_sequence_number(file_names: Sequence[str]) -> int:
    numbers = [n for n in map(parse_sequence_number, file_names) if n is not None]
    return max(numbers, default=0)


def first_gap(waiting: Iterable[str], names: Iterable[str], last: int) -> tuple[int, int] | None:
    """(the first file still waiting in a table folder, the first number after it up to `last`
    found nowhere), or None. `waiting` are the names in the table folder, `names` those and the
    names in the processed folders. The mirror applies files in order and moves each one it
    processed out of the folder, so every number after a waiting file is either waiting too or
    was never published; a number missing before a waiting file may have been processed and
    purged."""
    waiting_numbers = [n for n in map(parse_sequence_number, waiting) if n is not None]
    if not waiting_numbers:
        return None
    first = min(waiting_numbers)
    present = {n for n in map(parse_sequence_number, names) if n is not None}
    missing = next((n for n in range(first + 1, last + 1) if n not in present), None)
    return None if missing is None else (first, missing)


def folder_name_problem(name: object) -> str | None:
    """Why `name` cannot be a schema or table folder, or None when it can."""
    if not isinstance(name, str):
        return "it is not text (quote it in YAML)"
    try:
        encoded = name.encode("utf-8")
    except UnicodeEncodeError:  # a name listed from a file system, in another encoding
        return "it is not UTF-8 text (OneLake names are Unicode)"
    if not name:
        return "it is empty"
    if name in (".", ".."):
        return "it would leave its parent folder"
    if name[0] in "_.":
        return "names starting with '_' or '.' are ignored by the mirror"
    if name != name.strip() or name.endswith("."):
        return "it starts or ends with a space, or ends with '.'"
    if len(name) > MAX_NAME_LENGTH:
        return f"it is longer than {MAX_NAME_LENGTH} characters"
    if len(encoded) > MAX_NAME_BYTES:
        return (
            f"it is longer than {MAX_NAME_BYTES} bytes in UTF-8 (file systems take 255 bytes a folder name, "
            f"and a schema folder adds '{SCHEMA_FOLDER_SUFFIX}')"
        )
    bad = sorted(set(FORBIDDEN_NAME_CHARACTERS.findall(name)))
    if bad:
        decoded = ": whatever percent-decodes the name would read another folder ('%2E%2E' is '..')"
        return f"it contains {', '.join(repr(c) for c in bad)}" + (decoded if "%" in bad else "")
    if name.lower().endswith(SCHEMA_FOLDER_SUFFIX):
        return f"it ends with '{SCHEMA_FOLDER_SUFFIX}', which marks schema folders"
    return None


def table_folder_path(mirror_schema: str | None, mirror_table: str) -> str:
    """`<schema>.schema/<table>`, or just `<table>` without a schema folder. Names must be valid."""
    if mirror_schema:
        return f"{mirror_schema}{SCHEMA_FOLDER_SUFFIX}/{mirror_table}"
    return mirror_table


def table_identity(table_folder: str) -> tuple[str, str]:
    """(schema, table) of a table folder path, as the mirrored database names the table."""
    parent, _, table = table_folder.rpartition("/")
    if parent.endswith(SCHEMA_FOLDER_SUFFIX):
        return parent[: -len(SCHEMA_FOLDER_SUFFIX)], table
    return DEFAULT_SCHEMA, table


def comparable(name: str) -> str:
    """A schema or table name as the mirrored database is taken to compare them: without regard to
    case or Unicode form, as its SQL endpoint and Spark do (the documentation does not say)."""
    return unicodedata.normalize("NFC", name).casefold()


def service_name(table_folder: str) -> tuple[str, str]:
    """The table folder's (schema, table), `comparable`."""
    schema, table = table_identity(table_folder)
    return comparable(schema), comparable(table)


def spelled_alike(storage: "LandingZoneStorage", table_folder: str) -> str | None:
    """Another table folder, not empty, whose table the mirrored database would take for this
    one's (`service_name`): reads the root and the schema folders of the same name."""
    ours = service_name(table_folder)
    for name in storage.list_names(""):
        if name.startswith("_"):
            continue
        if name.endswith(SCHEMA_FOLDER_SUFFIX):
            if comparable(name[: -len(SCHEMA_FOLDER_SUFFIX)]) != ours[0]:
                continue
            folders = [f"{name}/{table}" for table in storage.list_names(name) if not table.startswith("_")]
        else:
            folders = [name]
        for folder in folders:
            if folder != table_folder and service_name(folder) == ours and storage.list_names(folder):
                return folder
    return None


def spelled_alike_problem(table_folder: str, other: str) -> str:
    """Why `table_folder` and `other` (`spelled_alike`) cannot both be published."""
    if table_identity(table_folder) == table_identity(other):  # one at the root: schema dbo's table
        return (
            f"{table_folder} and {other} name the same table of the mirrored database (a table folder at the "
            "root is schema dbo's): both would feed one table"
        )
    return (
        f"{table_folder} and {other} differ only in case or Unicode form, which the mirrored database "
        "is taken not to tell apart (its SQL endpoint and Spark compare table names without case; the "
        "documentation does not say): both would feed one table"
    )


def scratch_path(run_id: str) -> str:
    """Where one model run stages its files: ignored by the mirror. Only the run id is in the
    name, so Spark never sees user-chosen characters in a path."""
    if not RUN_ID_PATTERN.fullmatch(run_id):
        raise ValueError(f"run id {run_id!r} must be {RUN_ID_RULE}")
    return f"{STAGING_ROOT}/{run_id}"


def metadata_json(key_columns: Sequence[str]) -> str:
    return json.dumps({"keyColumns": list(key_columns)}, indent=2) + "\n"


def partner_events_json() -> str:
    """Who publishes: dbt-openmirror (and its version) for a dbt project."""
    from dbt.version import __version__ as dbt_version

    from dbt.adapters.openmirror.__version__ import version

    document = {
        "partnerName": "dbt-openmirror",
        "sourceInfo": {
            "sourceType": "dbt",
            "sourceVersion": dbt_version,
            "additionalInformation": {"publisher": "dbt-openmirror", "publisherVersion": version},
        },
    }
    return json.dumps(document, indent=2) + "\n"


def table_metadata(text: str, where: str) -> TableMetadata:
    """The contract a `_metadata.json` text declares (no key columns: an insert-only table)."""
    parsed = parse_table_metadata(text)
    if parsed.metadata is None:
        raise PublishError(f"{where}: {'; '.join(parsed.errors)}; fix or delete it")
    return parsed.metadata


def table_folders(storage: "LandingZoneStorage") -> Iterator[tuple[str, str, str]]:
    """(schema, table, folder path) for every table folder, `_`-prefixed names ignored."""
    for name in storage.list_names(""):
        if name.startswith("_"):
            continue
        if name.endswith(SCHEMA_FOLDER_SUFFIX):
            schema = name[: -len(SCHEMA_FOLDER_SUFFIX)]
            for table in storage.list_names(name):
                if not table.startswith("_") and storage.list_names(f"{name}/{table}"):
                    yield schema, table, f"{name}/{table}"
        elif storage.list_names(name):
            yield DEFAULT_SCHEMA, name, name

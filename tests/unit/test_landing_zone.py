import json

import pytest

from dbt.adapters.openmirror.errors import PublishError
from dbt.adapters.openmirror.rules.landing_zone import (
    LEASE_FOLDER,
    MANIFEST_FOLDER,
    PROBE_FOLDER_PREFIX,
    data_file_name,
    folder_name_problem,
    highest_sequence_number,
    metadata_json,
    parse_sequence_number,
    scratch_path,
    table_folder_path,
    table_metadata,
)


def test_data_file_names_are_twenty_digits():
    assert data_file_name(1) == "00000000000000000001.parquet"
    assert data_file_name(12345) == "00000000000000012345.parquet"
    with pytest.raises(ValueError):
        data_file_name(0)


@pytest.mark.parametrize(
    "name, number",
    [
        ("00000000000000000007.parquet", 7),
        ("_00000000000000000007.parquet", None),  # staging names are not data files
        ("0000000000000000007.parquet", None),  # 19 digits
        ("00000000000000000007.parquet.crc", None),
        ("00000000000000000007.csv", None),
        ("_metadata.json", None),
    ],
)
def test_parse_sequence_number(name, number):
    assert parse_sequence_number(name) == number


def test_highest_sequence_number_ignores_other_names():
    names = ["_metadata.json", "00000000000000000002.parquet", "00000000000000000010.parquet", "x"]
    assert highest_sequence_number(names) == 10
    assert highest_sequence_number([]) == 0


@pytest.mark.parametrize(
    "name, problem",
    [
        ("orders", None),
        ("Orders v2", None),
        ("naïve-ключ", None),
        ("", "empty"),
        ("..", "leave"),
        ("a/b", "'/'"),
        ("a\\b", "'\\\\'"),
        ("_hidden", "ignored by the mirror"),
        (".dot", "ignored by the mirror"),
        ("trailing.", "ends with"),
        (" padded", "space"),
        ("tab\there", "'\\t'"),
        ("x" * 129, "longer than 128"),
        ("sales.schema", "marks schema folders"),
        # Whatever percent-decodes a name once (the service, delta-rs) would read another folder.
        ("%2E%2E", "percent-decodes"),
        ("%62ase", "'%'"),
        ("%2F", "'%'"),
        ("100%", "'%'"),
        # A name listed from a file system in another encoding (Python keeps its bytes as surrogates).
        (b"s\xff".decode("utf-8", "surrogateescape"), "not UTF-8 text"),
    ],
)
def test_folder_name_problem(name, problem):
    found = folder_name_problem(name)
    if problem is None:
        assert found is None
    else:
        assert problem in found


def test_table_folder_path_with_and_without_schema_folder():
    assert table_folder_path("sales", "orders") == "sales.schema/orders"
    assert table_folder_path("", "orders") == "orders"


def test_scratch_path_only_takes_safe_run_ids():
    assert scratch_path("abc-123") == "_scratchPad/dbt-openmirror/abc-123"
    with pytest.raises(ValueError):
        scratch_path("../x")


def test_no_run_id_names_one_of_our_own_folders():
    """Discarding a run deletes its staged folder: an id read from an edited manifest, journal
    or lease must not name the manifest, the leases or a write probe, in any case."""
    for folder in (MANIFEST_FOLDER, LEASE_FOLDER, f"{PROBE_FOLDER_PREFIX}0a1b"):
        name = folder.rpartition("/")[2]
        for spelling in (name, name.upper()):
            with pytest.raises(ValueError, match="not manifest, leases or probe-"):
                scratch_path(spelling)
    assert scratch_path("probes") == "_scratchPad/dbt-openmirror/probes"


def test_metadata_is_strict_json_and_round_trips():
    text = metadata_json(["order_id", "line"])
    assert json.loads(text) == {"keyColumns": ["order_id", "line"]}
    assert table_metadata(text, "m").key_columns == ("order_id", "line")
    assert table_metadata("{}", "m").key_columns == ()


@pytest.mark.parametrize("text", ["{keyColumns: ['a']}", '{"keyColumns": "a"}', "[1]"])
def test_invalid_metadata_is_an_error_naming_the_file(text):
    with pytest.raises(PublishError, match="lz/t/_metadata.json"):
        table_metadata(text, "lz/t/_metadata.json")

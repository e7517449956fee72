"""`_metadata.json` and `_partnerEvents.json`, parsed once for the mirror, the validator and the
publisher: each documented field, and what is wrong with a bad one."""

import json

import pytest

from dbt.adapters.openmirror.rules.landing_zone import table_metadata
from dbt.adapters.openmirror.rules.metadata_files import (
    DeclaredColumn,
    DelimitedText,
    TableMetadata,
    parse_table_metadata,
)

CSV = {
    "keyColumns": ["id"],
    "FileFormat": "DelimitedText",
    "FileExtension": ".csv",
    "FileFormatTypeProperties": {"FirstRowAsHeader": True},
    "SchemaDefinition": {"Columns": [{"Name": "id", "DataType": "Int64", "IsNullable": False}]},
}


def test_every_documented_field():
    document = dict(CSV, fileDetectionStrategy="LastUpdateTimeFileDetection", isUpsertDefaultRowMarker=True)
    document["FileFormatTypeProperties"] = {
        "FirstRowAsHeader": True,
        "RowSeparator": "\r\n",
        "ColumnSeparator": "|",
        "QuoteCharacter": "'",
        "EscapeCharacter": "",
        "NullValue": "N/A",
        "Encoding": "ISO-8859-1",
    }
    parsed = parse_table_metadata(json.dumps(document))
    assert (parsed.errors, parsed.warnings) == ([], [])
    assert parsed.metadata == TableMetadata(
        ("id",),
        "LastUpdateTimeFileDetection",
        True,
        DelimitedText("csv", (DeclaredColumn("id", "Int64", False),), "|", "\r\n", "'", None, "N/A", "ISO-8859-1"),
    )
    assert parsed.metadata.extension == "csv" and parsed.metadata.file_format == "DelimitedText"
    assert parse_table_metadata("{}").metadata == TableMetadata()


@pytest.mark.parametrize(
    "change, message",
    [
        ({"FileFormatTypeProperties": {"FirstRowAsHeader": False}}, "FirstRowAsHeader must be true"),
        (
            {"FileFormatTypeProperties": {"FirstRowAsHeader": True, "RowSeparator": ";"}},
            "RowSeparator ';' cannot be read",
        ),
        (
            {"FileFormatTypeProperties": {"FirstRowAsHeader": True, "ColumnSeparator": "||"}},
            "ColumnSeparator must be one character",
        ),
        (
            {"FileFormatTypeProperties": {"FirstRowAsHeader": True, "Encoding": "klingon"}},
            "'klingon' is not a known encoding",
        ),
        ({"SchemaDefinition": {"Columns": [{"Name": "id", "DataType": "Int128"}]}}, "DataType of id is 'Int128'"),
        (
            {"SchemaDefinition": {"Columns": [{"Name": "v", "DataType": "String"}]}},
            "keyColumns ['id'] are not declared",
        ),
        (
            {
                "SchemaDefinition": {
                    "Columns": [{"Name": "id", "DataType": "String"}, {"Name": "ID", "DataType": "String"}]
                }
            },
            "declares ['ID', 'id'] more than once",
        ),
        ({"SchemaDefinition": None}, "SchemaDefinition.Columns must list the columns"),
        ({"FileFormat": "Avro"}, "FileFormat is 'Avro'"),
        ({"keyColumns": ["id", "ID"]}, "keyColumns lists ['ID', 'id'] more than once"),
    ],
)
def test_what_is_wrong_with_a_delimited_text_declaration(change, message):
    parsed = parse_table_metadata(json.dumps(dict(CSV, **change)))
    assert parsed.metadata is None and any(message in e for e in parsed.errors), parsed.errors


def test_the_publisher_reads_keys_through_the_same_parser():
    assert table_metadata('{"KeyColumns": ["a"]}', "m").key_columns == ("a",)
    assert table_metadata('{"keyColumns": ["a"], "isUpsertDefaultRowMarker": true}', "m").key_columns == ("a",)

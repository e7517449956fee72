import pytest

from dbt.adapters.openmirror.errors import KeyColumnsError
from dbt.adapters.openmirror.planning.keys import (
    check_key_types,
    lookalike_warning,
    raise_key_problems,
    resolve_key_columns,
    string_keys,
)
from dbt.adapters.openmirror.planning.schema_plan import ColumnSpec
from dbt.adapters.openmirror.run.response import publish_response


def test_key_columns_take_the_model_spelling():
    assert resolve_key_columns("m", ["ID", "Line"], ["id", "line", "x"]) == ["id", "line"]


def test_missing_key_column_lists_the_columns():
    with pytest.raises(KeyColumnsError, match="\\['nope'\\] are not in the model's output; its columns are \\['id'\\]"):
        resolve_key_columns("m", ["nope"], ["id"])


def test_no_problems_passes():
    assert raise_key_problems("m", ["id"], []) is None


def test_null_and_duplicate_messages_carry_examples():
    with pytest.raises(KeyColumnsError, match="Model 'm'.*NULL values, e.g. the row with id=NULL"):
        raise_key_problems("m", ["id"], [("NULL", "id=NULL", 1)])
    with pytest.raises(KeyColumnsError, match="not unique: id=7 appears in 3 rows"):
        raise_key_problems("m", ["id"], [("duplicate", "id=7", 3)])


def test_response_message_and_fields():
    response = publish_response({0: 3, 1: 2, 2: 1}, ["00000000000000000007.parquet"], "s.schema/t", "incremental")
    assert str(response) == "+3 ~2 -1 -> s.schema/t/00000000000000000007.parquet"
    assert response.warnings == []
    assert (response.inserts, response.updates, response.deletes, response.rows_affected) == (3, 2, 1, 6)
    assert response.to_dict()["files"] == ["00000000000000000007.parquet"]


def test_response_for_no_changes_several_files_and_rebuilds():
    assert str(publish_response({}, [], "t", "incremental")) == "+0 ~0 -0: no changes, no file in t"
    files = [f"{n:020d}.parquet" for n in (1, 2, 3)]
    response = publish_response({4: 5}, files, "s.schema/t", "rebuild", ["Model 'm': rebuilding s.schema/t: x"])
    assert str(response) == f"rebuilt: +0 ~0 -0 ^5 -> s.schema/t/{files[0]} .. {files[2]} (3 files)"
    assert response.to_dict()["warnings"] == ["Model 'm': rebuilding s.schema/t: x"]


def test_map_keys_are_refused_up_front():
    """Spark cannot compare or group maps, so such a key could never be checked or diffed."""
    with pytest.raises(KeyColumnsError) as failed:
        check_key_types("m", [ColumnSpec("id", "int"), ColumnSpec("attrs", "map<string,int>")])
    assert "Model 'm'" in str(failed.value) and "attrs" in str(failed.value) and "map<string,int>" in str(failed.value)


@pytest.mark.parametrize(
    "data_type",
    [
        "string collate UTF8_LCASE",
        "string collate UNICODE",
        "string collate UTF8_BINARY_RTRIM",
        "array<string collate UTF8_LCASE>",
    ],
)
def test_collated_string_keys_are_refused_up_front(data_type):
    """Spark compares them under the collation, the mirror byte for byte: 'A' then 'a' would be an
    UPDATE here and a second row there."""
    with pytest.raises(KeyColumnsError) as failed:
        check_key_types("m", [ColumnSpec("id", "int"), ColumnSpec("code", data_type)])
    message = str(failed.value)
    assert "Model 'm'" in message and "'code'" in message and data_type in message
    assert "collate(code, 'UTF8_BINARY')" in message
    assert check_key_types("m", [ColumnSpec("code", "string")]) == []
    assert check_key_types("m", [ColumnSpec("code", "string collate UTF8_BINARY")]) == []


@pytest.mark.parametrize("data_type", ["struct<x:double,y:int>", "array<float>", "struct<a:array<struct<b:double>>>"])
def test_complex_keys_holding_floats_are_refused_up_front(data_type):
    """The mirror matches a struct or array key by its JSON text, in which -0.0 and 0.0 differ
    while Spark takes them for one key: a change of sign would be an UPDATE of a key the mirror
    does not hold, which it inserts beside the old one."""
    with pytest.raises(KeyColumnsError) as failed:
        check_key_types("m", [ColumnSpec("id", "int"), ColumnSpec("k", data_type)])
    message = str(failed.value)
    assert "Model 'm'" in message and "'k'" in message and data_type in message and "decimal" in message
    assert check_key_types("m", [ColumnSpec("k", "struct<double:int,real:string>")]) == []


def test_complex_keys_holding_maps_are_refused_up_front():
    with pytest.raises(KeyColumnsError, match="maps cannot be compared or grouped"):
        check_key_types("m", [ColumnSpec("k", "struct<m:map<string,int>>")])
    assert check_key_types("m", [ColumnSpec("k", "struct<map:int>")]) == []


def test_floating_point_keys_are_named_in_a_warning():
    assert check_key_types("m", [ColumnSpec("id", "int"), ColumnSpec("s", "struct<a:int>")]) == []
    [warning] = check_key_types("m", [ColumnSpec("id", "int"), ColumnSpec("ratio", "double")])
    assert "Model 'm'" in warning and "'ratio'" in warning and "double" in warning
    assert "NaN" in warning and "-0.0" in warning


def test_example_key_values_can_be_hidden():
    with pytest.raises(KeyColumnsError) as failed:
        raise_key_problems("m", ["ssn"], [("duplicate", "ssn=123-45-6789", 2)], show_values=False)
    assert "123-45-6789" not in str(failed.value) and "show_key_values=false" in str(failed.value)
    with pytest.raises(KeyColumnsError) as failed:
        raise_key_problems("m", ["ssn"], [("NULL", "ssn=NULL, x=secret", 1)], show_values=False)
    assert "secret" not in str(failed.value)
    assert "secret" not in lookalike_warning("m", ["ssn"], ("ssn=secret", "ssn=Secret"), show_values=False)


def test_lookalike_keys_are_named_with_why_they_matter():
    warning = lookalike_warning("m", ["code"], ("code=ABC", "code=abc "), show_values=True)
    assert "Model 'm'" in warning and "'code=ABC' and 'code=abc '" in warning and "trailing spaces" in warning
    assert string_keys([ColumnSpec("id", "int"), ColumnSpec("code", "string"), ColumnSpec("c2", "varchar(3)")]) == [
        "code",
        "c2",
    ]

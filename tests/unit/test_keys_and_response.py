import pytest

from dbt.adapters.openmirror.errors import KeyColumnsError
from dbt.adapters.openmirror.keys import raise_key_problems, resolve_key_columns
from dbt.adapters.openmirror.response import publish_response


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
    assert str(response) == "+3 ~2 -1 -> 00000000000000000007.parquet"
    assert (response.inserts, response.updates, response.deletes, response.rows_affected) == (3, 2, 1, 6)
    assert response.to_dict()["files"] == ["00000000000000000007.parquet"]


def test_response_for_no_changes_several_files_and_rebuilds():
    assert str(publish_response({}, [], "t", "incremental")) == "+0 ~0 -0: no changes, no file"
    files = [f"{n:020d}.parquet" for n in (1, 2, 3)]
    message = str(publish_response({4: 5}, files, "t", "rebuild"))
    assert message == f"rebuilt: +0 ~0 -0 ^5 -> {files[0]} .. {files[2]} (3 files)"

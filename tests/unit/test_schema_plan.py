import re

import pytest

from dbt.adapters.openmirror.errors import SchemaChangeError
from dbt.adapters.openmirror.planning.schema_plan import (
    ColumnSpec,
    check_candidate_types,
    check_output_columns,
    plan_schema,
)

ID, NAME, SCORE = ColumnSpec("id", "int"), ColumnSpec("name", "string"), ColumnSpec("score", "int")


def test_complex_types_publish_as_strings():
    assert ColumnSpec("a", "struct<x:int>").published_type == "string"
    assert ColumnSpec("a", "ARRAY<string>").published_type == "string"
    assert ColumnSpec("a", "map<string,int>").is_complex
    assert ColumnSpec("a", "decimal(10,2)").published_type == "decimal(10,2)"


def test_no_snapshot_publishes_the_model_columns():
    plan = plan_schema("m", None, [ID, NAME], "fail")
    assert plan.columns == [ID, NAME] and not plan.kept and not plan.added


def test_same_columns_any_case_is_no_change():
    plan = plan_schema("m", [ColumnSpec("ID", "int"), NAME], [ID, NAME], "fail")
    assert not (plan.kept or plan.added or plan.rebuild_reason)


def test_append_new_columns_adds_and_keeps():
    plan = plan_schema("m", [ID, NAME], [ID, SCORE], "append_new_columns")
    assert plan.added == [SCORE] and plan.kept == [NAME] and plan.rebuild_reason is None


def test_struct_evolution_is_not_a_type_change():
    before = [ID, ColumnSpec("address", "struct<city:string>")]
    after = [ID, ColumnSpec("address", "struct<city:string,zip:int>")]
    assert plan_schema("m", before, after, "fail").rebuild_reason is None


def test_a_collation_is_not_part_of_the_published_type():
    """A Parquet file carries a string as a string, whatever its collation in Spark."""
    collated = ColumnSpec("name", "string collate UTF8_LCASE")
    assert collated.published_type == "string" and collated.is_collated
    assert plan_schema("m", [ID, collated], [ID, NAME], "fail").columns == [ID, NAME]


def test_type_change_fails_in_place_naming_column_and_types():
    with pytest.raises(SchemaChangeError) as error:
        plan_schema("m", [ID, SCORE], [ID, ColumnSpec("score", "bigint")], "append_new_columns")
    message = str(error.value)
    assert "Model 'm'" in message and "column 'score' int -> bigint" in message
    assert "--full-refresh" in message and "sync_all_columns" in message


def test_fail_refuses_any_change():
    with pytest.raises(SchemaChangeError, match="added \\['score'\\]"):
        plan_schema("m", [ID], [ID, SCORE], "fail")


@pytest.mark.parametrize(
    "after, reason",
    [
        ([ID, ColumnSpec("score", "string")], "column 'score' int -> string"),
        ([ID], "columns ['score'] were removed"),
    ],
)
def test_sync_all_columns_rebuilds(after, reason):
    plan = plan_schema("m", [ID, SCORE], after, "sync_all_columns")
    assert reason in plan.rebuild_reason


def test_sync_all_columns_appends_new_columns_in_place():
    plan = plan_schema("m", [ID], [ID, SCORE], "sync_all_columns")
    assert plan.rebuild_reason is None and plan.added == [SCORE]


def test_ignore_keeps_the_old_columns():
    plan = plan_schema("m", [ID, NAME], [ID, SCORE], "ignore")
    assert plan.columns == [ID] and plan.ignored == [SCORE] and plan.kept == [NAME]
    assert not plan.added and plan.rebuild_reason is None


def test_ignore_never_publishes_a_type_change():
    with pytest.raises(SchemaChangeError, match="not even with on_schema_change='ignore'"):
        plan_schema("m", [ID, SCORE], [ID, ColumnSpec("score", "string")], "ignore")


def test_a_column_respelled_in_case_keeps_the_mirrors_spelling():
    """Delta and Spark names are case-insensitive: `Name` -> `name` is the same column, and the
    mirror can hold only one spelling of it."""
    for on_schema_change in ("append_new_columns", "fail", "ignore"):
        plan = plan_schema("m", [ID, ColumnSpec("Name", "string")], [ID, NAME], on_schema_change)
        assert [c.published_name for c in plan.columns] == ["id", "Name"]
        assert plan.respelled == [("Name", "name")] and plan.rebuild_reason is None
        assert not (plan.added or plan.kept)


def test_the_published_spelling_is_remembered_beyond_the_snapshots_own():
    """The snapshot then holds the model's spelling; the record of published names decides."""
    plan = plan_schema("m", [ID, NAME], [ID, NAME], "append_new_columns", published_names=["ID", "Name"])
    assert [c.published_name for c in plan.columns] == ["ID", "Name"]
    kept = plan_schema("m", [ID, NAME], [ID], "append_new_columns", published_names=["id", "NAME"]).kept
    assert [c.published_name for c in kept] == ["NAME"]


def test_sync_all_columns_rebuilds_to_take_a_new_spelling():
    plan = plan_schema("m", [ID, ColumnSpec("Name", "string")], [ID, NAME], "sync_all_columns")
    assert "column 'Name' is now spelled 'name'" in plan.rebuild_reason


@pytest.mark.parametrize("name", ["__rowMarker__", "__ROWMARKER__", "__openmirror_rows"])
def test_the_row_marker_and_internal_names_are_reserved(name):
    with pytest.raises(SchemaChangeError, match=f"Model 'm': the output has a column '{name}'"):
        check_output_columns("m", [ID, ColumnSpec(name, "int")])
    check_output_columns("m", [ID, *(ColumnSpec(n, "int") for n in ("rowMarker", "__open"))])


@pytest.mark.parametrize(
    "data_type, advice",
    [
        ("void", "cast(null as string)"),
        ("interval day to second", "a bare count of months or microseconds"),
        ("time(6)", "cast it to string"),
        ("variant", "to_json"),
        ("geography(4326)", "WKT"),
    ],
)
def test_types_the_mirror_cannot_hold_are_refused(data_type, advice):
    expected = f"Model 'm': column 'v' is {re.escape(data_type)}: .*{re.escape(advice)}"
    with pytest.raises(SchemaChangeError, match=expected):
        check_output_columns("m", [ID, ColumnSpec("v", data_type)])
    check_output_columns("m", [ID, ColumnSpec("v", "timestamp"), ColumnSpec("w", "struct<i:interval day>")])


def test_candidates_keep_every_type_of_the_snapshot_they_merge_into():
    """A candidate run merges its rows into the snapshot with a `union all`, which matches
    columns by position: a struct whose fields changed (published as the same JSON text type) or
    a scalar type change would take the snapshot's names or type."""
    previous = [ColumnSpec("id", "int"), ColumnSpec("attrs", "struct<a:int>"), ColumnSpec("code", "string")]
    check_candidate_types("m", previous, [ColumnSpec("ID", "int"), *previous[1:]])
    for changed, described in [
        (ColumnSpec("attrs", "struct<b:int>"), "column 'attrs' struct<a:int> -> struct<b:int>"),
        (ColumnSpec("code", "int"), "column 'code' string -> int"),
    ]:
        candidates = [changed if c.name == changed.name else c for c in previous]
        with pytest.raises(SchemaChangeError, match=f"Model 'm': {re.escape(described)} among the rows it selected"):
            check_candidate_types("m", previous, candidates)


@pytest.mark.parametrize(
    "changed, rebuilds",
    [
        # The published type changes: only a rebuild of the mirrored table takes it.
        (ColumnSpec("code", "int"), True),
        # The file carries the same type (JSON text; a string without its collation): a run in full
        # publishes the values that changed, under any on_schema_change, and rebuilds nothing.
        (ColumnSpec("attrs", "struct<b:int>"), False),
        (ColumnSpec("code", "string collate unicode_ci"), False),
    ],
)
def test_a_type_change_among_candidates_is_refused_with_the_run_in_full_that_takes_it(changed, rebuilds):
    previous = [ColumnSpec("id", "int"), ColumnSpec("attrs", "struct<a:int>"), ColumnSpec("code", "string")]
    candidates = [changed if c.name == changed.name else c for c in previous]
    with pytest.raises(SchemaChangeError, match="a reconcile run") as refused:
        check_candidate_types("m", previous, candidates)
    message = str(refused.value)
    assert ("on_schema_change='sync_all_columns' rebuilds the mirrored table" in message) == rebuilds
    assert ("under any on_schema_change, rebuilding nothing" in message) == (not rebuilds)


@pytest.mark.parametrize(
    "data_type, faithful",
    [
        ("map<string,int>", True),
        ("map<bigint,array<map<decimal(10,2),string>>>", True),
        ("map<boolean, double>", True),
        ("map<timestamp,string>", False),
        ("map<date,string>", False),
        ("map<binary,string>", False),
        ("map<struct<x:int>,string>", False),
        ("array<map<array<int>,int>>", False),
        ("map<string,map<timestamp,int>>", False),
    ],
)
def test_maps_are_published_only_with_keys_their_json_writes_faithfully(data_type, faithful):
    columns = [ID, ColumnSpec("m", data_type)]
    if faithful:
        check_output_columns("m", columns)
    else:
        with pytest.raises(SchemaChangeError, match=r"column 'm' is .*a map is published as JSON.*transform_keys"):
            check_output_columns("m", columns)


def test_columns_named_alike_but_for_case_are_refused():
    with pytest.raises(SchemaChangeError, match="columns 'Val' and 'val', named alike but for case"):
        check_output_columns("m", [ID, ColumnSpec("Val", "int"), ColumnSpec("val", "int")])

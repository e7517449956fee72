"""The macros of macros/sql/ other than the hash diff's (test_hash_diff.py): quoting, the full load,
the whole-row diff, writing and counting the change files, and the snapshot's table statements."""

import pytest

from dbt.adapters.openmirror.planning.overlay import IN_BASE
from dbt.adapters.openmirror.planning.schema_plan import ColumnSpec, SchemaPlan
from tests.support.sql_macros import sql_macros

ID = ColumnSpec("id", "int")
NAME = ColumnSpec("my `odd` name", "string")
TAGS = ColumnSpec("tags", "array<string>")
macros = sql_macros()
#: Complex values are published as JSON text with timestamps in microseconds and UTC.
JSON = macros.openmirror_json_options().strip()


def test_complex_values_are_json_with_timestamps_in_microseconds_in_utc():
    assert JSON == (
        "map('timestampFormat', 'yyyy-MM-dd\\'T\\'HH:mm:ss.SSSSSSXXX', "
        "'timestampNTZFormat', 'yyyy-MM-dd\\'T\\'HH:mm:ss.SSSSSS', 'timeZone', 'UTC', 'ignoreNullFields', 'true')"
    )


def test_the_diff_tells_apart_what_the_files_tell_apart():
    """Spark's xxhash64 and `<=>` take 0.0 and -0.0 for one value, and `<=>` follows collations (of
    either side: the snapshot's column may be collated where the model's no longer is)."""
    same = {
        data_type: str(macros.openmirror_same_value("n", "o", "`v`", ColumnSpec("v", data_type))).strip()
        for data_type in ("double", "FLOAT", "string collate UTF8_LCASE", "string collate UTF8_BINARY", "string", "int")
    }
    zero_sign = "case when {0}.`v` = 0 then cast({0}.`v` as string) end"
    assert same == {
        "double": f"n.`v` <=> o.`v` and {zero_sign.format('n')} <=> {zero_sign.format('o')}",
        "FLOAT": f"n.`v` <=> o.`v` and {zero_sign.format('n')} <=> {zero_sign.format('o')}",
        "string collate UTF8_LCASE": "collate(n.`v`, 'UTF8_BINARY') <=> collate(o.`v`, 'UTF8_BINARY')",
        "string collate UTF8_BINARY": "collate(n.`v`, 'UTF8_BINARY') <=> collate(o.`v`, 'UTF8_BINARY')",
        "string": "collate(n.`v`, 'UTF8_BINARY') <=> collate(o.`v`, 'UTF8_BINARY')",
        "int": "n.`v` <=> o.`v`",
    }
    sql = change_rows(SchemaPlan(columns=[ID, ColumnSpec("d", "double")]), ["id"], "insert_update_delete")
    assert f"n.`d` <=> o.`d` and {zero_sign.format('n').replace('`v`', '`d`')}" in sql
    hashes = macros.openmirror_row_hash([ColumnSpec("d", "double")], 1).strip()
    assert hashes == "xxhash64(1, `d`, case when `d` = 0 then cast(`d` as string) end, (if(`d` is null, 1L, 0L)))"


def initial_load(plan, change_markers, position):
    return macros.openmirror_initial_load_sql(
        relation="s.new",
        columns=plan.columns,
        kept=plan.kept,
        change_markers=change_markers,
        position=position,
    )


def change_rows(plan, key_columns, change_markers, position="last"):
    return macros.openmirror_change_rows_sql(
        new_relation="s.new",
        previous_relation="s.old",
        columns=plan.columns,
        kept=plan.kept,
        added=plan.added,
        key_columns=key_columns,
        change_markers=change_markers,
        position=position,
    )


def test_quoting():
    assert macros.openmirror_quote("my `odd` name") == "`my ``odd`` name`"
    assert macros.openmirror_quoted_list(["a", "b`c"], prefix="n.") == "n.`a`, n.`b``c`"


def test_string_literals_escape_quotes_and_backslashes():
    assert macros.openmirror_string("it's a \\ path") == "'it\\'s a \\\\ path'"
    # The backslash is escaped first, so an escaped quote cannot be undone by the value.
    assert macros.openmirror_string("\\'") == "'\\\\\\''"
    assert macros.openmirror_string("") == "''"


def test_properties_are_string_pairs_in_their_order():
    assert macros.openmirror_properties({"b": "it's", "a": "7"}) == "'b' = 'it\\'s', 'a' = '7'"


def test_markers_per_setting():
    def markers(change_markers):
        return macros.openmirror_new_marker(change_markers), macros.openmirror_changed_marker(change_markers)

    assert markers("insert_update_delete") == ("0", "1")
    assert markers("upsert") == ("4", "4")
    assert macros.openmirror_delete_marker() == "2"


def test_a_full_load_is_insert_only_without_a_marker_column():
    """The service's direct staging path takes marker-free files; a full load only inserts."""
    plan = SchemaPlan(columns=[ID, NAME, TAGS])
    for position in ("last", "first"):
        sql = initial_load(plan, "insert_update_delete", position)
        assert sql.startswith("select\n  `id` as `id`,\n  case when encode(`my ``odd`` name`, 'UTF-8') <> cast(")
        assert "__rowMarker__" not in sql
        assert f"to_json(`tags`, {JSON}) as `tags`" in sql
        assert sql.endswith("\nfrom s.new")


@pytest.mark.parametrize(
    "column, checked",
    [
        (ColumnSpec("it's", "string"), "`it's`"),
        (ColumnSpec("code", "varchar(3)"), "`code`"),
        (ColumnSpec("name", "string collate UTF8_LCASE"), "collate(`name`, 'UTF8_BINARY')"),
        (ID, None),
        (ColumnSpec("raw", "binary"), None),
        (TAGS, None),  # to_json writes U+FFFD for bytes that are not UTF-8
    ],
)
def test_text_that_is_not_utf8_fails_the_write_naming_its_column(column, checked):
    quoted = column.name.replace("`", "``").join("``")
    for show_values in (True, False):
        sql = macros.openmirror_checked_value(quoted, column, show_values)
        if checked is None:
            assert sql == macros.openmirror_published_value(quoted, column).strip()
            continue
        # encode() reads such bytes as U+FFFD on every Spark version (is_valid_utf8 needs Spark 4).
        assert sql.startswith(f"case when encode({checked}, 'UTF-8') <> cast({checked} as binary) then raise_error(")
        assert macros.openmirror_string(f"column '{column.name}' holds text that is not valid UTF-8")[1:-1] in sql
        assert ("e.g." in sql) == show_values and ("values hidden: show_key_values=false" in sql) != show_values
        assert sql.endswith(f"else {checked} end")


def test_a_deleted_rows_key_is_not_checked_again():
    """It was published before (perhaps by a version without the check): refusing it would keep
    the row in the mirror for good."""
    plan = SchemaPlan(columns=[ColumnSpec("k", "string"), ColumnSpec("v", "string")])
    changed = macros.openmirror_changed_rows_sql(
        new_relation="s.new",
        changes="s.c",
        columns=plan.columns,
        kept=[],
        key_columns=["k"],
        change_markers="insert_update_delete",
        position="last",
    )
    present, deleted = changed.split("union all")
    assert present.count("raise_error(") == 2 and "raise_error(" not in deleted
    whole_rows = change_rows(plan, ["k"], "insert_update_delete")
    assert "cast(n.`k` as binary)" in whole_rows and "cast(o.`k` as binary)" not in whole_rows
    assert "else n.`k` end, o.`k`) as `k`" in whole_rows


def test_an_upsert_full_load_keeps_its_markers_so_a_replay_cannot_duplicate():
    plan = SchemaPlan(columns=[ID, NAME, TAGS])
    first = initial_load(plan, "upsert", "first")
    assert first.index("cast(4 as int) as `__rowMarker__`") < first.index("`id`")
    last = initial_load(plan, "upsert", "last")
    assert last.index("`id`") < last.index("cast(4 as int) as `__rowMarker__`")
    assert macros.openmirror_full_load_marked("upsert") == "True"
    assert macros.openmirror_full_load_marked("insert_update_delete") == "False"


def test_initial_load_publishes_kept_columns_as_null():
    sql = initial_load(SchemaPlan(columns=[ID], kept=[TAGS]), "insert_update_delete", "last")
    assert sql.startswith("select\n  `id` as `id`,\n  cast(null as string) as `tags`\nfrom")


def test_change_rows_compare_every_non_key_column_null_safely():
    sql = change_rows(SchemaPlan(columns=[ID, NAME, TAGS]), ["id"], "insert_update_delete")
    assert "full outer join s.old o on n.`id` = o.`id`" in sql
    assert "coalesce(n.`id`, o.`id`) as `id`" in sql  # deletes carry the old key
    assert "collate(n.`my ``odd`` name`, 'UTF8_BINARY') <=> collate(o.`my ``odd`` name`, 'UTF8_BINARY')" in sql
    assert f"to_json(n.`tags`, {JSON}) <=> to_json(o.`tags`, {JSON})" in sql
    assert "when o.`id` is null then 0 when n.`id` is null then 2 else 1 end" in sql


def test_change_rows_join_on_every_key_column():
    sql = change_rows(SchemaPlan(columns=[ID, NAME]), ["id", "my `odd` name"], "insert_update_delete")
    assert "on n.`id` = o.`id` and n.`my ``odd`` name` = o.`my ``odd`` name`" in sql
    assert "<=>" not in sql  # key columns are joined on, not compared


def test_added_and_kept_columns():
    score = ColumnSpec("score", "int")
    sql = change_rows(SchemaPlan(columns=[ID, score], kept=[NAME], added=[score]), ["id"], "upsert")
    assert "n.`score` is null" in sql
    assert "<=> o.`score`" not in sql  # the snapshot has no such column yet
    assert "cast(null as string) as `my ``odd`` name`" in sql
    assert "o.`my ``odd`` name` is null" in sql
    assert "then 4 when n.`id` is null then 2 else 4 end" in sql


def test_key_only_table_has_only_inserts_and_deletes():
    sql = change_rows(SchemaPlan(columns=[ID]), ["id"], "insert_update_delete")
    assert sql.rstrip().endswith("where o.`id` is null or n.`id` is null")


def test_write_and_count():
    written = macros.openmirror_write_files_sql(
        uri="file:///lz/_scratchPad/x",
        select_sql="select 1",
        compression="zstd",
        max_rows_per_file=1000,
        writers=3,
        shuffle=True,
    )
    assert written.startswith("insert overwrite directory 'file:///lz/_scratchPad/x'")
    assert "options (compression 'zstd', maxRecordsPerFile '1000')" in written
    assert "select /*+ REPARTITION(3) */ * from (\nselect 1\n) change_rows" in written
    for no_limit in (0, None):
        merged = macros.openmirror_write_files_sql("file:///x", "select 1", "none", no_limit, 2, False)
        assert "maxRecordsPerFile" not in merged
        assert "select /*+ COALESCE(2) */ * from" in merged
    assert macros.openmirror_write_files_sql("file:///it's", "select 1", "none", 0, 1, False).startswith(
        "insert overwrite directory 'file:///it\\'s'"
    )
    assert macros.openmirror_row_counts_sql(relations=["s.t"]) == "select (select count(*) from s.t)"
    assert macros.openmirror_row_counts_sql(relations=["s.t", "s.u"]) == (
        "select (select count(*) from s.t), (select count(*) from s.u)"
    )
    counted = macros.openmirror_marker_counts_sql(uri="file:///x", full_load=False, change_markers="upsert")
    assert "from parquet.`file:///x` group by `__rowMarker__`" in counted
    # A full load's rows are all new: counted without reading a column (it may have no marker).
    for change_markers, marker in (("insert_update_delete", 0), ("upsert", 4)):
        full = macros.openmirror_marker_counts_sql(uri="file:///x", full_load=True, change_markers=change_markers)
        assert full == f"select {marker} as marker, count(*) as row_count from parquet.`file:///x`"


def test_snapshot_record_and_kept_columns():
    record = macros.openmirror_snapshot_record_sql(
        relation="s.t",
        properties={"openmirror.table_folder": "it's.schema/t", "openmirror.sequence_number": "7"},
    )
    assert record == (
        "alter table s.t set tblproperties ('openmirror.table_folder' = 'it\\'s.schema/t', "
        "'openmirror.sequence_number' = '7')"
    )
    assert macros.openmirror_keep_columns_sql(relation="s.t", kept=[]) == ""
    assert macros.openmirror_keep_columns_sql(relation="s.t", kept=[NAME, TAGS]) == (
        "alter table s.t add columns (`my ``odd`` name` string, `tags` array<string>)"
    )


def test_key_lookalikes_fold_case_and_trailing_spaces_of_string_keys_only():
    grouped = macros.openmirror_key_lookalikes_sql(keys="s.h", key_columns=["id", "code"], string_keys=["code"])
    assert "`id` as `__openmirror_k1`, lower(rtrim(`code`)) as `__openmirror_k2`" in grouped
    assert "group by `__openmirror_k1`, `__openmirror_k2`\nhaving count(*) > 1 limit 1" in grouped
    joined = macros.openmirror_key_lookalikes_sql(
        keys="s.h",
        key_columns=["id", "code"],
        string_keys=["code"],
        new_keys="s.c",
        change_markers="insert_update_delete",
    )
    assert "from s.c c join s.h n on c.`id` = n.`id` and lower(rtrim(c.`code`)) = lower(rtrim(n.`code`))" in joined
    assert "and not (c.`id` <=> n.`id` and c.`code` <=> n.`code`)" in joined
    assert joined.endswith("where c.`__rowMarker__` = 0 limit 1")


def test_the_overlay_bit_is_named_alike_in_python_and_sql():
    assert sql_macros().openmirror_overlay_in_base().strip() == f"`{IN_BASE}`"

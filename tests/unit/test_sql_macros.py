from dbt.adapters.openmirror.change_sql import (
    change_rows_sql,
    initial_load_sql,
    marker_counts_sql,
    project_columns_sql,
    quote,
    row_count_sql,
    row_markers,
    sql_string,
    write_files_sql,
)
from dbt.adapters.openmirror.schema_plan import ColumnSpec, SchemaPlan

ID = ColumnSpec("id", "int")
NAME = ColumnSpec("my `odd` name", "string")
TAGS = ColumnSpec("tags", "array<string>")


def test_quoting():
    assert quote("my `odd` name") == "`my ``odd`` name`"
    assert sql_string("it's a \\ path") == "'it\\'s a \\\\ path'"


def test_markers_per_setting():
    assert row_markers("insert_update_delete") == (0, 1)
    assert row_markers("upsert") == (4, 4)


def test_initial_load_marks_every_row_and_places_the_marker():
    plan = SchemaPlan(columns=[ID, NAME, TAGS])
    last = initial_load_sql("s.new", plan, "insert_update_delete", "last")
    assert last.index("`id`") < last.index("cast(0 as int) as `__rowMarker__`")
    assert "to_json(`tags`) as `tags`" in last
    first = initial_load_sql("s.new", plan, "upsert", "first")
    assert first.index("cast(4 as int) as `__rowMarker__`") < first.index("`id`")


def test_change_rows_compare_every_non_key_column_null_safely():
    plan = SchemaPlan(columns=[ID, NAME, TAGS])
    sql = change_rows_sql("s.new", "s.old", plan, ["id"], "insert_update_delete", "last")
    assert "full outer join s.old o on n.`id` = o.`id`" in sql
    assert "coalesce(n.`id`, o.`id`) as `id`" in sql  # deletes carry the old key
    assert "n.`my ``odd`` name` <=> o.`my ``odd`` name`" in sql
    assert "to_json(n.`tags`) <=> to_json(o.`tags`)" in sql
    assert "when o.`id` is null then 0 when n.`id` is null then 2 else 1 end" in sql


def test_added_and_kept_columns():
    score = ColumnSpec("score", "int")
    plan = SchemaPlan(columns=[ID, score], kept=[NAME], added=[score])
    sql = change_rows_sql("s.new", "s.old", plan, ["id"], "upsert", "last")
    assert "n.`score` is null" in sql
    assert "cast(null as string) as `my ``odd`` name`" in sql
    assert "o.`my ``odd`` name` is null" in sql
    assert "then 4 when n.`id` is null then 2 else 4 end" in sql


def test_key_only_table_has_only_inserts_and_deletes():
    sql = change_rows_sql("s.new", "s.old", SchemaPlan(columns=[ID]), ["id"], "insert_update_delete", "last")
    assert sql.rstrip().endswith("where o.`id` is null or n.`id` is null")


def test_write_and_count():
    sql = write_files_sql("file:///lz/_scratchPad/x", "select 1", "zstd", 1000, 3, True)
    assert sql.startswith("insert overwrite directory 'file:///lz/_scratchPad/x'")
    assert "options (compression 'zstd', maxRecordsPerFile '1000')" in sql
    assert "select /*+ REPARTITION(3) */ * from (\nselect 1\n) change_rows" in sql
    merged = write_files_sql("file:///x", "select 1", "none", 0, 2, False)
    assert "maxRecordsPerFile" not in merged
    assert "select /*+ COALESCE(2) */ * from" in merged
    assert row_count_sql("s.t") == "select count(*) from s.t"
    assert "from parquet.`file:///x` group by `__rowMarker__`" in marker_counts_sql("file:///x")


def test_snapshot_record_and_kept_columns():
    from dbt.adapters.openmirror.change_sql import keep_columns_sql, snapshot_record_sql

    sql = snapshot_record_sql("s.t", {"openmirror.table_folder": "it's.schema/t", "openmirror.sequence_number": "7"})
    assert sql == ("alter table s.t set tblproperties ('openmirror.table_folder' = 'it\\'s.schema/t', "
                   "'openmirror.sequence_number' = '7')")
    assert keep_columns_sql("s.t", []) == ""
    assert keep_columns_sql("s.t", [NAME, TAGS]) == (
        "alter table s.t add columns (`my ``odd`` name` string, `tags` array<string>)"
    )


def test_project_columns_copies_only_the_named_columns():
    assert project_columns_sql("s.t__p", "s.t", ["id", "my col"]) == (
        "create table s.t__p using parquet as select `id`, `my col` from s.t"
    )

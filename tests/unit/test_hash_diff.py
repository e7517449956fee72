"""The hash diff: its decisions in hash_diff.py and its SQL in macros/sql/hash_diff.sql."""

import json

from dbt.adapters.openmirror.planning.hash_diff import (
    MAX_BUCKETS,
    MAX_WRITERS,
    ROWS_PER_BUCKET,
    ROWS_PER_WRITER,
    bucket_count,
    hashed_columns,
    key_types,
    probes_by_key_hash,
    writer_count,
)
from dbt.adapters.openmirror.planning.schema_plan import ColumnSpec, SchemaPlan
from tests.support.sql_macros import sql_macros

# Names the macros write literally.
HASH_1, HASH_2, ROWS = "`__openmirror_hash1`", "`__openmirror_hash2`", "`__openmirror_rows`"
macros = sql_macros()
JSON = macros.openmirror_json_options().strip()

ORDER = ColumnSpec("Order_ID", "bigint")
LINE = ColumnSpec("line", "int")
NAME = ColumnSpec("my `odd` name", "string")
TAGS = ColumnSpec("tags", "array<string>")
AMOUNT = ColumnSpec("amount", "decimal(12,2)")
PLAN = SchemaPlan(columns=[ORDER, TAGS, LINE, NAME, AMOUNT])
KEYS = ["Order_ID", "line"]


def signature(hashed):
    return macros.openmirror_hash_signature(hashed=hashed)


def test_hashed_columns_are_the_non_key_columns_in_name_order():
    assert hashed_columns(PLAN, ["order_id", "LINE"]) == [AMOUNT, NAME, TAGS]
    reordered = SchemaPlan(columns=[NAME, ORDER, AMOUNT, LINE, TAGS])
    assert signature(hashed_columns(reordered, KEYS)) == signature(hashed_columns(PLAN, KEYS))


def test_signature_names_the_formula_and_changes_with_a_published_type_or_a_column():
    covered = json.loads(signature([AMOUNT, NAME]))
    assert covered == {"formula": 3, "columns": [["amount", "decimal(12,2)"], ["my `odd` name", "string"]]}
    assert signature([AMOUNT, NAME]) != signature([ColumnSpec("amount", "decimal(14,2)"), NAME])
    assert signature([AMOUNT, NAME]) != signature([AMOUNT])
    # Complex values are hashed as the JSON they are published as.
    assert signature([TAGS]) == signature([ColumnSpec("tags", "string")])


def test_key_hashes_one_pass_with_a_null_mask_and_two_seeds_bucketed_and_sorted_by_the_key():
    sql = macros.openmirror_key_hashes_sql(
        target="s.t__h",
        relation="s.t__new",
        key_columns=KEYS,
        hashed=[AMOUNT, TAGS],
        properties={"openmirror.run_id": "r'1"},
        buckets=16,
    )
    assert sql.startswith(
        "create table s.t__h using parquet clustered by (`Order_ID`, `line`) sorted by (`Order_ID`, `line`)"
        " into 16 buckets\n"
        "tblproperties ('openmirror.run_id' = 'r\\'1') as"
    )
    # One file per bucket: the rows go to the writer of their bucket.
    assert "\nselect /*+ REPARTITION(16, `Order_ID`, `line`) */ `Order_ID`, `line`, xxhash64(" in sql
    # Which columns are NULL enters as a bit mask: Spark's hash functions skip NULL arguments.
    null_mask = "(if(`amount` is null, 1L, 0L) | if(`tags` is null, 2L, 0L))"
    assert f"xxhash64(1, `amount`, to_json(`tags`, {JSON}), {null_mask}) as {HASH_1}" in sql
    assert f"xxhash64(2, `amount`, to_json(`tags`, {JSON}), {null_mask}) as {HASH_2}" in sql
    assert sql.rstrip().endswith("from s.t__new")
    assert "group by" not in sql  # no shuffle: a map-only pass


def test_null_masks_take_62_columns_each():
    columns = [ColumnSpec(f"c{i}", "int") for i in range(63)]
    masks = macros.openmirror_null_masks(hashed=columns)
    first, second = masks.split("), (")
    assert first.count(" is null") == 62 and "if(`c61` is null, 2305843009213693952L, 0L)" in first
    assert second == "if(`c62` is null, 1L, 0L))"
    assert macros.openmirror_row_hash(hashed=[], seed=1) == "xxhash64(1)"


def test_key_problems_per_row_or_counted():
    per_row = macros.openmirror_key_problems_sql(relation="s.t__h", key_columns=["order_id", "line"], counted=False)
    assert "from s.t__h where `order_id` is null or `line` is null limit 1" in per_row
    assert "from s.t__h group by `order_id`, `line` having count(*) > 1 limit 1" in per_row
    assert "concat('order_id=', coalesce(cast(`order_id` as string), 'NULL'))" in per_row
    counted = macros.openmirror_key_problems_sql(relation="s.t__c", key_columns=["order_id", "line"], counted=True)
    assert f"{ROWS} as rows\n  from s.t__c where {ROWS} > 1 limit 1" in counted
    assert "group by" not in counted


def changed_keys(key_columns, change_markers):
    return macros.openmirror_changed_keys_sql(
        target="s.t__c",
        new_hashes="s.t__new_h",
        previous_hashes="s.t__h",
        key_columns=key_columns,
        change_markers=change_markers,
    )


def test_changed_keys_join_two_narrow_tables_count_and_mark_them():
    sql = changed_keys(KEYS, "insert_update_delete")
    assert f"count(*) as {ROWS}" in sql
    assert "from s.t__new_h group by `Order_ID`, `line`) n" in sql
    assert "full outer join s.t__h o on n.`Order_ID` = o.`Order_ID` and n.`line` = o.`line`" in sql
    assert f"when o.{HASH_1} is null then 0 when n.{HASH_1} is null then 2 else 1 end" in sql
    assert f"n.{ROWS} > 1" in sql  # repeated keys are kept for the key check
    assert f"n.{HASH_2} <> o.{HASH_2}" in sql
    assert "coalesce(n.`Order_ID`, o.`Order_ID`) as `Order_ID`" in sql
    upsert = changed_keys(KEYS, "upsert")
    assert f"then 4 when n.{HASH_1} is null then 2 else 4 end" in upsert


def test_changed_rows_read_back_only_changed_keys():
    plan = SchemaPlan(columns=[ORDER, LINE, TAGS], kept=[NAME])
    sql = macros.openmirror_changed_rows_sql(
        new_relation="s.t__new",
        changes="s.t__c",
        columns=plan.columns,
        kept=plan.kept,
        key_columns=KEYS,
        change_markers="insert_update_delete",
        position="first",
    )
    present, deleted = sql.split("union all")
    assert "from s.t__c c\njoin s.t__new n on c.`Order_ID` = n.`Order_ID` and c.`line` = n.`line`" in present
    assert "where c.`__rowMarker__` <> 2" in present
    marker = "cast(case when c.`__rowMarker__` = 0 then 0 else 1 end as int) as `__rowMarker__`"
    assert present.index(marker) < present.index("c.`Order_ID` as `Order_ID`")
    assert "cast(2 as int) as `__rowMarker__`" in deleted
    assert f"to_json(n.`tags`, {JSON}) as `tags`" in present
    assert "cast(null as string) as `my ``odd`` name`" in present
    # Deleted keys carry the key and NULLs, in the same column order.
    assert "`Order_ID` as `Order_ID`,\n  `line` as `line`,\n  cast(null as string) as `tags`" in deleted
    assert deleted.rstrip().endswith("from s.t__c where `__rowMarker__` = 2")


def test_complex_keys_are_published_as_json_in_every_file():
    """A struct key is JSON text in a full load, so it must be in change and delete rows too:
    otherwise the mirror sees its type change at file 2."""
    key = ColumnSpec("k", "struct<a:int,b:string>")
    plan = SchemaPlan(columns=[key, NAME])
    present, deleted = macros.openmirror_changed_rows_sql(
        new_relation="s.t__new",
        changes="s.t__c",
        columns=plan.columns,
        kept=[],
        key_columns=["k"],
        change_markers="insert_update_delete",
        position="last",
    ).split("union all")
    assert f"to_json(c.`k`, {JSON}) as `k`" in present and f"to_json(`k`, {JSON}) as `k`" in deleted
    whole_rows = macros.openmirror_change_rows_sql(
        new_relation="s.new",
        previous_relation="s.old",
        columns=plan.columns,
        kept=[],
        added=[],
        key_columns=["k"],
        change_markers="insert_update_delete",
        position="last",
    )
    assert f"coalesce(to_json(n.`k`, {JSON}), to_json(o.`k`, {JSON})) as `k`" in whole_rows
    initial = macros.openmirror_initial_load_sql(
        relation="s.new",
        columns=plan.columns,
        kept=[],
        change_markers="insert_update_delete",
        position="last",
    )
    assert f"to_json(`k`, {JSON}) as `k`" in initial


def test_columns_are_published_under_the_spelling_the_mirror_has():
    respelled = ColumnSpec("name", "string", published_as="Name")
    key = ColumnSpec("id", "int", published_as="ID")
    kept = ColumnSpec("Gone", "int", published_as="GONE")
    plan = SchemaPlan(columns=[key, respelled], kept=[kept])
    present, deleted = macros.openmirror_changed_rows_sql(
        new_relation="s.t__new",
        changes="s.t__c",
        columns=plan.columns,
        kept=plan.kept,
        key_columns=["ID"],
        change_markers="insert_update_delete",
        position="last",
    ).split("union all")
    assert "c.`id` as `ID`" in present and "else n.`name` end as `Name`" in present
    assert "cast(null as int) as `GONE`" in present
    assert "`id` as `ID`" in deleted and "cast(null as string) as `Name`" in deleted
    whole_rows = macros.openmirror_change_rows_sql(
        new_relation="s.new",
        previous_relation="s.old",
        columns=plan.columns,
        kept=plan.kept,
        added=[],
        key_columns=["ID"],
        change_markers="insert_update_delete",
        position="last",
    )
    assert "coalesce(n.`id`, o.`id`) as `ID`" in whole_rows and "else n.`name` end as `Name`" in whole_rows
    initial = macros.openmirror_initial_load_sql(
        relation="s.new",
        columns=plan.columns,
        kept=[],
        change_markers="insert_update_delete",
        position="last",
    )
    assert "else `name` end as `Name`" in initial


def test_bucket_count_is_a_power_of_two_by_rows():
    assert bucket_count(0) == 1
    assert bucket_count(ROWS_PER_BUCKET) == 1
    assert bucket_count(ROWS_PER_BUCKET + 1) == 2
    assert bucket_count(10 * ROWS_PER_BUCKET) == 16
    # A table growing or shrinking a little keeps its bucket count, so runs join without a shuffle.
    assert bucket_count(9 * ROWS_PER_BUCKET) == bucket_count(15 * ROWS_PER_BUCKET) == 16
    assert bucket_count(10**13) == MAX_BUCKETS


def test_writer_count_follows_the_change_count_and_file_size():
    assert writer_count(0, 0) == 1
    assert writer_count(ROWS_PER_WRITER, 0) == 1
    assert writer_count(ROWS_PER_WRITER + 1, 0) == 2
    assert writer_count(1000, 100) == 10
    assert writer_count(10**9, 0) == MAX_WRITERS


def test_sorted_bucket_scans_are_turned_on_and_reset():
    setting = "spark.sql.legacy.bucketedTableScan.outputOrdering"
    assert macros.openmirror_sorted_bucket_scans_sql(on=True) == f"set {setting}=true"
    assert macros.openmirror_sorted_bucket_scans_sql(on=False) == f"reset {setting}"


def test_a_large_side_probes_by_the_key_hash_unless_the_key_is_one_integer():
    assert probes_by_key_hash(["bigint", "int"])
    assert probes_by_key_hash(["string"])
    assert probes_by_key_hash(["decimal(12,2)"])
    assert not probes_by_key_hash(["bigint"])
    assert not probes_by_key_hash(["INT "])


def test_key_types_in_column_order_matched_without_case():
    columns = [ColumnSpec("b", "string"), ColumnSpec("ID", "int"), ColumnSpec("x", "double")]
    assert key_types(columns, ["id", "B"]) == ["string", "int"]

{#-
  The fast diff: per-row hashes kept next to the snapshot, so a run compares keys and hashes.
  One pass over the new output writes its key hashes table: the key and a 128-bit hash of each
  row, bucketed and sorted by the key. Joining it with the snapshot's key hashes table, written
  the same way by the previous run, finds the changed keys bucket by bucket without shuffling or
  sorting either side, and counts the rows per key on the way (the key check); only changed rows
  are then read back.

  Two xxhash64 values with different leading constants make the 128 bits. Spark's hash functions
  skip NULL arguments, so the row also contributes which columns are NULL, as bit masks (one
  bigint per 62 columns: cheaper than a flag per column): `(a, NULL)` and `(NULL, a)` hash
  differently. A changed row is missed only if both 64-bit hashes collide.
  `hashed` are the published non-key columns in name order (hash_diff.py).
-#}

{#- Bumped whenever openmirror_row_hash changes: hashes written by another formula are not trusted. -#}
{%- macro openmirror_hash_formula() -%}3{%- endmacro -%}

{%- macro openmirror_null_masks(hashed) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set masks = [] -%}
  {%- for chunk in hashed | batch(62) -%}
    {%- set bits = [] -%}
    {%- for column in chunk -%}
      {%- do bits.append('if(' ~ om.openmirror_quote(column.name) ~ ' is null, ' ~ 2 ** loop.index0 ~ 'L, 0L)') -%}
    {%- endfor -%}
    {%- do masks.append('(' ~ bits | join(' | ') ~ ')') -%}
  {%- endfor -%}
  {{ masks | join(', ') }}
{%- endmacro -%}

{%- macro openmirror_row_hash(hashed, seed) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set parts = [seed | string] -%}
  {%- for column in hashed -%}
    {%- set name = om.openmirror_quote(column.name) -%}
    {%- do parts.append(om.openmirror_published_value(name, column) | trim) -%}
    {%- set zero_sign = om.openmirror_zero_sign(name, column) | trim -%}
    {%- if zero_sign -%}{%- do parts.append(zero_sign) -%}{%- endif -%}
  {%- endfor -%}
  {%- if hashed -%}{%- do parts.append(om.openmirror_null_masks(hashed)) -%}{%- endif -%}
  xxhash64({{ parts | join(', ') }})
{%- endmacro -%}

{#- What a key hashes table's hashes cover: the formula and the columns with their published
    types. Two tables' hashes compare only under the same signature. -#}
{%- macro openmirror_hash_signature(hashed) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set columns = [] -%}
  {%- for column in hashed -%}{%- do columns.append([column.name | lower, column.published_type]) -%}{%- endfor -%}
  {{ {'formula': om.openmirror_hash_formula() | int, 'columns': columns} | tojson }}
{%- endmacro -%}

{#- The key and row hash of every row of `relation`, as a narrow table in `buckets` buckets by
    the key, sorted by the key within each. The REPARTITION hint uses the bucketing's own hash, so
    each bucket is one file. -#}
{%- macro openmirror_key_hashes_sql(target, relation, key_columns, hashed, properties, buckets) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set keys = om.openmirror_quoted_list(key_columns) -%}
create table {{ target }} using parquet clustered by ({{ keys }}) sorted by ({{ keys }}) into {{ buckets | int }} buckets
tblproperties ({{ om.openmirror_properties(properties) }}) as
select /*+ REPARTITION({{ buckets | int }}, {{ keys }}) */ {{ keys }}, {{ om.openmirror_row_hash(hashed, 1) }} as `__openmirror_hash1`, {{ om.openmirror_row_hash(hashed, 2) }} as `__openmirror_hash2`
from {{ relation }}
{%- endmacro -%}

{#- Spark reads a bucket written as one sorted file as sorted only when asked to (it lists the
    files while planning to know): the changed-keys join and the key count then merge the sorted
    buckets without sorting them again (half the join's time). The setting makes Spark trust the
    declared order of every bucketed table with sort columns, so it is on (`on`) only while the
    hash diff's statements run and is reset (to the session's configured value) after them. -#}
{%- macro openmirror_sorted_bucket_scans_sql(on) -%}
{%- if on -%}set spark.sql.legacy.bucketedTableScan.outputOrdering=true
{%- else -%}reset spark.sql.legacy.bucketedTableScan.outputOrdering{%- endif -%}
{%- endmacro -%}

{#- Keys that are new, changed or gone, with their marker, and keys the output repeats (with their
    row count, for the key check). Both tables are bucketed and sorted by the key, so the count
    and the join merge bucket by bucket; with different bucket counts Spark shuffles and sorts one
    side (still correct). -#}
{%- macro openmirror_changed_keys_sql(target, new_hashes, previous_hashes, key_columns, change_markers) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set either = [] -%}
  {%- for key in key_columns -%}
    {%- do either.append('coalesce(n.' ~ om.openmirror_quote(key) ~ ', o.' ~ om.openmirror_quote(key) ~ ') as ' ~ om.openmirror_quote(key)) -%}
  {%- endfor -%}
create table {{ target }} using parquet as
select {{ either | join(', ') }}, cast(case when o.`__openmirror_hash1` is null then {{ om.openmirror_new_marker(change_markers) }} when n.`__openmirror_hash1` is null then {{ om.openmirror_delete_marker() }} else {{ om.openmirror_changed_marker(change_markers) }} end as int) as `__rowMarker__`, n.`__openmirror_rows`
from (select {{ om.openmirror_quoted_list(key_columns) }}, count(*) as `__openmirror_rows`, max(`__openmirror_hash1`) as `__openmirror_hash1`, max(`__openmirror_hash2`) as `__openmirror_hash2`
  from {{ new_hashes }} group by {{ om.openmirror_quoted_list(key_columns) }}) n
full outer join {{ previous_hashes }} o on {{ om.openmirror_key_join('n', 'o', key_columns) }}
where o.`__openmirror_hash1` is null or n.`__openmirror_hash1` is null or n.`__openmirror_rows` > 1
  or n.`__openmirror_hash1` <> o.`__openmirror_hash1` or n.`__openmirror_hash2` <> o.`__openmirror_hash2`
{%- endmacro -%}

{#- The published rows of the new and changed keys, then the deleted keys with only the key.
    An inner join, so that Spark can broadcast the changed keys and stream the output past them
    (an outer join could only broadcast the output). The markers are written as literals, so the
    column is non-nullable in the Parquet schema, as on every other path. -#}
{%- macro openmirror_changed_rows_sql(new_relation, changes, columns, kept, key_columns, change_markers, position, show_values=true) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set keys = key_columns | map('lower') | list -%}
  {%- set present = [] -%}
  {%- set deleted = [] -%}
  {%- for column in columns -%}
    {%- set name = om.openmirror_quote(column.name) -%}
    {%- set published = ' as ' ~ om.openmirror_quote(column.published_name) -%}
    {%- if column.name | lower in keys -%}
      {#- Keys go through the published conversion too (a struct key is JSON text in every file). -#}
      {%- do present.append(om.openmirror_checked_value('c.' ~ name, column, show_values) | trim ~ published) -%}
      {#- A deleted row's key was published before: not checked again. -#}
      {%- do deleted.append(om.openmirror_published_value(name, column) | trim ~ published) -%}
    {%- else -%}
      {%- do present.append(om.openmirror_checked_value('n.' ~ name, column, show_values) | trim ~ published) -%}
      {%- do deleted.append(om.openmirror_null_of(column)) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- for column in kept -%}
    {%- do present.append(om.openmirror_null_of(column)) -%}
    {%- do deleted.append(om.openmirror_null_of(column)) -%}
  {%- endfor -%}
select
  {%- set new_marker = om.openmirror_new_marker(change_markers) %}
  {{ om.openmirror_with_marker(present, 'cast(case when c.`__rowMarker__` = ' ~ new_marker ~ ' then ' ~ new_marker
      ~ ' else ' ~ om.openmirror_changed_marker(change_markers) ~ ' end as int)', position) }}
from {{ changes }} c
join {{ new_relation }} n on {{ om.openmirror_key_join('c', 'n', key_columns) }}
where c.`__rowMarker__` <> {{ om.openmirror_delete_marker() }}
union all
select
  {{ om.openmirror_with_marker(deleted, 'cast(' ~ om.openmirror_delete_marker() ~ ' as int)', position) }}
from {{ changes }} where `__rowMarker__` = {{ om.openmirror_delete_marker() }}
{%- endmacro -%}

{#- Writing the change rows, counting them, and the table statements around the snapshot. -#}

{#- Spark writes the change rows as Parquet under `uri`, each file at most `max_rows_per_file`.
    `writers` tasks write the files: with `shuffle` the rows are spread evenly over them (a
    REPARTITION hint: the select still runs in parallel), without it the select's partitions are
    merged into at most that many (COALESCE: no shuffle, for a full load read straight from the
    output table). Files are numbered in name order; a key appears once per publish, so the order
    among them does not matter. -#}
{%- macro openmirror_write_files_sql(uri, select_sql, compression, max_rows_per_file, writers, shuffle) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set options = ['compression ' ~ om.openmirror_string(compression)] -%}
  {%- if max_rows_per_file -%}
    {%- do options.append('maxRecordsPerFile ' ~ om.openmirror_string(max_rows_per_file | string)) -%}
  {%- endif -%}
insert overwrite directory {{ om.openmirror_string(uri) }}
using parquet options ({{ options | join(', ') }})
select /*+ {{ 'REPARTITION' if shuffle else 'COALESCE' }}({{ writers | int }}) */ * from (
{{ select_sql }}
) change_rows
{%- endmacro -%}

{#- Rows per marker in the staged files; Spark reads only the marker column. A full load's rows
    are all new (and may carry no marker column): they are counted from the footers. -#}
{%- macro openmirror_marker_counts_sql(uri, full_load, change_markers) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {{ om.openmirror_count_markers_sql('parquet.' ~ om.openmirror_quote(uri), full_load, change_markers) }}
{%- endmacro -%}

{#- Rows per marker of `source` (a table, or a subquery with its alias). -#}
{%- macro openmirror_count_markers_sql(source, full_load, change_markers) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
{%- if full_load -%}
select {{ om.openmirror_new_marker(change_markers) }} as marker, count(*) as row_count from {{ source }}
{%- else -%}
select `__rowMarker__` as marker, count(*) as row_count
from {{ source }} group by `__rowMarker__`
{%- endif -%}
{%- endmacro -%}

{#- The row count of each relation, in one row: one statement, and Spark runs the counts at once. -#}
{%- macro openmirror_row_counts_sql(relations) -%}
select {% for relation in relations %}(select count(*) from {{ relation }}){{ ', ' if not loop.last }}{% endfor %}
{%- endmacro -%}

{#- Table properties as `'key' = 'value', ...`. A value longer than a metastore keeps is stored in
    parts, read back by metastore_limits.read_properties and openmirror_read_properties: the
    length and marker are spark/metastore_limits.py's (the same cases test the three). -#}
{%- macro openmirror_properties(properties) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set part_length, parts_marker = 4000, 'openmirror-parts:' -%}
  {%- set pairs = [] -%}
  {%- for key, value in properties.items() -%}
    {%- if value is string and value | length > part_length -%}
      {%- set count = ((value | length + part_length - 1) // part_length) -%}
      {%- do pairs.append(om.openmirror_string(key) ~ ' = ' ~ om.openmirror_string(parts_marker ~ count)) -%}
      {%- for index in range(count) -%}
        {%- do pairs.append(om.openmirror_string(key ~ '.part.' ~ index) ~ ' = '
            ~ om.openmirror_string(value[index * part_length:(index + 1) * part_length])) -%}
      {%- endfor -%}
    {%- else -%}
      {%- do pairs.append(om.openmirror_string(key) ~ ' = ' ~ om.openmirror_string(value)) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ pairs | join(', ') }}
{%- endmacro -%}

{#- Table properties that record which folder and file number (or staged run) a snapshot matches;
    `kind` 'view' for an overlaid snapshot's view. -#}
{%- macro openmirror_snapshot_record_sql(relation, properties, kind='table') -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
alter {{ 'view' if kind == 'view' else 'table' }} {{ relation }} set tblproperties ({{ om.openmirror_properties(properties) }})
{%- endmacro -%}

{#- Table properties no longer true (a held snapshot once its change is published). -#}
{%- macro openmirror_unset_properties_sql(relation, keys) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set quoted = [] -%}
  {%- for key in keys -%}{%- do quoted.append(om.openmirror_string(key)) -%}{%- endfor -%}
alter table {{ relation }} unset tblproperties if exists ({{ quoted | join(', ') }})
{%- endmacro -%}

{#- Columns the model dropped stay in the snapshot (NULL from now on), as the mirror keeps them.
    Nothing when no column was dropped (Spark rejects an empty column list). -#}
{%- macro openmirror_keep_columns_sql(relation, kept) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set columns = [] -%}
  {%- for column in kept -%}{%- do columns.append(om.openmirror_quote(column.name) ~ ' ' ~ column.data_type) -%}{%- endfor -%}
  {%- if columns -%}
alter table {{ relation }} add columns ({{ columns | join(', ') }})
  {%- endif -%}
{%- endmacro -%}

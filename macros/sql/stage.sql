{#- Writing the change rows, counting them, and the table statements around the snapshot. -#}

{#- Spark writes the change rows as Parquet under `uri`, each file at most `max_rows_per_file`.
    `writers` tasks write the files: with `shuffle` the rows are spread evenly over them (a
    REPARTITION hint: the select still runs in parallel), without it the select's partitions are
    merged into at most that many (COALESCE: no shuffle, for a full load read straight from the
    output table). Files are numbered in name order; a key appears once per publish, so the order
    among them does not matter. -#}
{%- macro openmirror_write_files_sql(uri, select_sql, compression, max_rows_per_file, writers, shuffle) -%}
  {%- set options = ['compression ' ~ dbt_openmirror.openmirror_string(compression)] -%}
  {%- if max_rows_per_file -%}
    {%- do options.append('maxRecordsPerFile ' ~ dbt_openmirror.openmirror_string(max_rows_per_file | string)) -%}
  {%- endif -%}
insert overwrite directory {{ dbt_openmirror.openmirror_string(uri) }}
using parquet options ({{ options | join(', ') }})
select /*+ {{ 'REPARTITION' if shuffle else 'COALESCE' }}({{ writers | int }}) */ * from (
{{ select_sql }}
) change_rows
{%- endmacro -%}

{#- Rows per marker in the staged files; Spark reads only the marker column. -#}
{%- macro openmirror_marker_counts_sql(uri) -%}
select `__rowMarker__` as marker, count(*) as row_count
from parquet.{{ dbt_openmirror.openmirror_quote(uri) }} group by `__rowMarker__`
{%- endmacro -%}

{%- macro openmirror_row_count_sql(relation) -%}
select count(*) from {{ relation }}
{%- endmacro -%}

{%- macro openmirror_properties(properties) -%}
  {%- set pairs = [] -%}
  {%- for key, value in properties.items() -%}
    {%- do pairs.append(dbt_openmirror.openmirror_string(key) ~ ' = ' ~ dbt_openmirror.openmirror_string(value)) -%}
  {%- endfor -%}
  {{ pairs | join(', ') }}
{%- endmacro -%}

{#- Table properties that record which folder and file number (or staged run) a snapshot matches. -#}
{%- macro openmirror_snapshot_record_sql(relation, properties) -%}
alter table {{ relation }} set tblproperties ({{ dbt_openmirror.openmirror_properties(properties) }})
{%- endmacro -%}

{#- Columns the model dropped stay in the snapshot (NULL from now on), as the mirror keeps them.
    Nothing when no column was dropped (Spark rejects an empty column list). -#}
{%- macro openmirror_keep_columns_sql(relation, kept) -%}
  {%- set columns = [] -%}
  {%- for column in kept -%}{%- do columns.append(dbt_openmirror.openmirror_quote(column.name) ~ ' ' ~ column.data_type) -%}{%- endfor -%}
  {%- if columns -%}
alter table {{ relation }} add columns ({{ columns | join(', ') }})
  {%- endif -%}
{%- endmacro -%}

{#- A copy of `source` with only `columns` (Parquet tables cannot drop columns in place). -#}
{%- macro openmirror_project_columns_sql(target, source, columns) -%}
create table {{ target }} using parquet as select {{ dbt_openmirror.openmirror_quoted_list(columns) }} from {{ source }}
{%- endmacro -%}

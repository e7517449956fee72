{#- What the plugin asks Spark about tables and the session: the statements its Python runs
    besides the ones that build, diff and stage (every statement lives in macros/sql/). -#}

{#- The tables of `schema` whose names match `pattern` (names joined by '|'). -#}
{%- macro openmirror_show_tables_sql(schema, pattern) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
show table extended in {{ schema }} like {{ om.openmirror_string(pattern) }}
{%- endmacro -%}

{%- macro openmirror_show_properties_sql(relation) -%}
show tblproperties {{ relation }}
{%- endmacro -%}

{%- macro openmirror_spark_master_sql() -%}
set spark.master
{%- endmacro -%}

{#- One of the settings Spark writes the mirror's Parquet files with (spark/parquet_writes.py). -#}
{%- macro openmirror_spark_setting_sql(key, value) -%}
set {{ key }}={{ value }}
{%- endmacro -%}

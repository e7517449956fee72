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

{#- A relation's columns, then other sections (run/statements.py, described_columns). -#}
{%- macro openmirror_describe_sql(relation) -%}
describe table {{ relation }}
{%- endmacro -%}

{#- The whole types of `names`, columns of `relation` whose type DESCRIBE cut short: `typeof`
    names every field. Spark folds it to a constant, and an aggregate over no rows still returns
    one: nothing of the relation is read (a view's query, an overlaid snapshot's join). -#}
{%- macro openmirror_whole_types_sql(relation, names) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
select {% for name in names %}typeof(first({{ om.openmirror_quote(name) }})){{ ', ' if not loop.last }}{% endfor %}
from (select {{ om.openmirror_quoted_list(names) }} from {{ relation }} limit 0)
{%- endmacro -%}

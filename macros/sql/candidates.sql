{#- Incremental open_mirror models (planning/candidates.py). -#}

{#- The complete output from what the model selected: its rows without those flagged deleted, and,
    when the model selected only candidates, the snapshot's rows whose keys are not among them. A
    column the snapshot does not have yet is NULL on its rows; one the model no longer selects is
    left out, as a run in full would. Keys are never NULL (checked before). -#}
{%- macro openmirror_complete_output_sql(target, model_output, snapshot, columns, snapshot_columns, key_columns, delete_flag) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set present = snapshot_columns | map('lower') | list -%}
  {%- set names = [] -%}
  {%- set from_snapshot = [] -%}
  {%- for column in columns -%}
    {%- set name = om.openmirror_quote(column.name) -%}
    {%- do names.append(name) -%}
    {%- if column.name | lower in present -%}
      {%- do from_snapshot.append('s.' ~ name) -%}
    {%- else -%}
      {%- do from_snapshot.append('cast(null as ' ~ column.data_type ~ ') as ' ~ name) -%}
    {%- endif -%}
  {%- endfor -%}
create table {{ target }} using parquet as
select {{ names | join(', ') }} from {{ model_output }}
{%- if delete_flag %}
where not coalesce({{ om.openmirror_quote(delete_flag) }}, false)
{%- endif %}
{%- if snapshot %}
union all
select {{ from_snapshot | join(', ') }} from {{ snapshot }} s
left anti join {{ model_output }} c on {{ om.openmirror_key_join('s', 'c', key_columns) }}
{%- endif %}
{%- endmacro -%}

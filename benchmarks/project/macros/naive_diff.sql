{#-
  The diff a notebook writes by hand: build the new output, then compare whole rows of it with the
  whole previous snapshot (EXCEPT both ways), mark inserts/updates/deletes by key, write the change
  rows as Parquet, and make the new output the snapshot. No key check, no numbering, no journal.
-#}
{% materialization naive_diff, adapter='openmirror' %}
  {%- set target = this.incorporate(type='table') -%}
  {%- set new = make_intermediate_relation(target, suffix='__naive_new') -%}
  {%- set existing = load_cached_relation(this) -%}
  {%- set out = var('naive_out') ~ '/' ~ invocation_id -%}
  {%- set keys = config.get('unique_key') -%}
  {{ drop_relation_if_exists(load_cached_relation(new)) }}

  {%- call statement('build') -%}{{ create_table_as(False, new, compiled_code) }}{%- endcall -%}
  {%- set columns = adapter.get_columns_in_relation(new) | map(attribute='column') | list -%}
  {%- set on = [] -%}{%- for k in keys -%}{%- do on.append('c.' ~ k ~ ' = o.' ~ k) -%}{%- endfor -%}

  {%- call statement('main') -%}
    insert overwrite directory '{{ out }}' using parquet
    {%- if existing is none %}
    select *, cast(0 as int) as __rowMarker__ from {{ new }}
    {%- else %}
    select c.*, cast(case when o.{{ keys[0] }} is null then 0 else 1 end as int) as __rowMarker__
    from (select * from {{ new }} except select * from {{ existing }}) c
    left join (select {{ keys | join(', ') }} from {{ existing }}) o on {{ on | join(' and ') }}
    union all
    select {% for col in columns %}{{ 'c.' ~ col if col in keys else 'null' }} as {{ col }}, {% endfor %}cast(2 as int)
    from (select * from {{ existing }} except select * from {{ new }}) c
    left anti join {{ new }} o on {{ on | join(' and ') }}
    {%- endif %}
  {%- endcall -%}

  {%- if existing is not none -%}{{ adapter.drop_relation(existing) }}{%- endif -%}
  {{ adapter.rename_relation(new, target) }}
  {{ return({'relations': [target]}) }}
{% endmaterialization %}

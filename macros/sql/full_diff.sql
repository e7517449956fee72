{#- A full load, and the diff of whole rows against the snapshot (no key hashes needed). -#}

{#- Every row of the model as a new row: the first file of a table folder. Insert-only, so
    without `__rowMarker__` (the service's direct staging path takes marker-free files), unless
    change_markers='upsert' asks that no file, applied twice, can duplicate rows. -#}
{%- macro openmirror_initial_load_sql(relation, columns, kept, change_markers, position, show_values=true) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set select_list = [] -%}
  {%- for column in columns -%}
    {%- do select_list.append(om.openmirror_checked_value(om.openmirror_quote(column.name), column, show_values) | trim
        ~ ' as ' ~ om.openmirror_quote(column.published_name)) -%}
  {%- endfor -%}
  {%- for column in kept -%}{%- do select_list.append(om.openmirror_null_of(column)) -%}{%- endfor -%}
select
{%- if om.openmirror_full_load_marked(change_markers) == 'True' %}
  {{ om.openmirror_with_marker(select_list, 'cast(' ~ om.openmirror_new_marker(change_markers) ~ ' as int)', position) }}
{%- else %}
  {{ select_list | join(',\n  ') }}
{%- endif %}
from {{ relation }}
{%- endmacro -%}

{#- New, changed and vanished keys between the snapshot and the model, with their markers.
    Keys are never NULL on either side (checked before), so a NULL key column on one side of the
    full outer join means the key is absent there. Deleted rows carry only their key. -#}
{%- macro openmirror_change_rows_sql(new_relation, previous_relation, columns, kept, added, key_columns, change_markers, position, show_values=true) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set keys = key_columns | map('lower') | list -%}
  {%- set added_names = [] -%}
  {%- for column in added -%}{%- do added_names.append(column.name | lower) -%}{%- endfor -%}
  {%- set probe = om.openmirror_quote(key_columns[0]) -%}
  {%- set select_list = [] -%}
  {%- set unchanged = [] -%}
  {%- for column in columns -%}
    {%- set name = om.openmirror_quote(column.name) -%}
    {%- set published = ' as ' ~ om.openmirror_quote(column.published_name) -%}
    {%- if column.name | lower in keys -%}
      {#- A deleted row's key (o) was published before: only the model's (n) is checked. -#}
      {%- do select_list.append('coalesce(' ~ om.openmirror_checked_value('n.' ~ name, column, show_values) | trim ~ ', '
          ~ om.openmirror_published_value('o.' ~ name, column) | trim ~ ')' ~ published) -%}
    {%- else -%}
      {%- do select_list.append(om.openmirror_checked_value('n.' ~ name, column, show_values) | trim ~ published) -%}
      {%- if column.name | lower in added_names -%}
        {%- do unchanged.append('n.' ~ name ~ ' is null') -%}
      {%- else -%}
        {%- do unchanged.append(om.openmirror_same_value('n', 'o', name, column) | trim) -%}
      {%- endif -%}
    {%- endif -%}
  {%- endfor -%}
  {%- for column in kept -%}
    {%- do select_list.append(om.openmirror_null_of(column)) -%}
    {%- do unchanged.append('o.' ~ om.openmirror_quote(column.name) ~ ' is null') -%}
  {%- endfor -%}
  {%- set marker = 'cast(case when o.' ~ probe ~ ' is null then ' ~ om.openmirror_new_marker(change_markers)
      ~ ' when n.' ~ probe ~ ' is null then ' ~ om.openmirror_delete_marker()
      ~ ' else ' ~ om.openmirror_changed_marker(change_markers) ~ ' end as int)' -%}
select
  {{ om.openmirror_with_marker(select_list, marker, position) }}
from {{ new_relation }} n
full outer join {{ previous_relation }} o on {{ om.openmirror_key_join('n', 'o', key_columns) }}
where o.{{ probe }} is null or n.{{ probe }} is null
{%- if unchanged %}
  or not ({{ unchanged | join(' and ') }})
{%- endif -%}
{%- endmacro -%}

{#- A key as text for messages: `id=7, region=eu` (columns of `alias`, or unqualified). -#}
{%- macro openmirror_key_example(key_columns, alias='') -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set parts = [] -%}
  {%- for key in key_columns -%}
    {%- do parts.append('concat(' ~ om.openmirror_string(key ~ '=') ~ ', coalesce(cast(' ~ (alias ~ '.' if alias else '') ~ om.openmirror_quote(key) ~ " as string), 'NULL'))") -%}
  {%- endfor -%}
  concat_ws(', ', {{ parts | join(', ') }})
{%- endmacro -%}

{#- At most one example each of a NULL key and of a duplicated key: (problem, example, rows).
    `relation` has a row per output row, or (`counted`) a row per key with its row count in
    `__openmirror_rows`. -#}
{%- macro openmirror_key_problems_sql(relation, key_columns, counted) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set nulls = [] -%}
  {%- for key in key_columns -%}{%- do nulls.append(om.openmirror_quote(key) ~ ' is null') -%}{%- endfor -%}
  {%- set example = om.openmirror_key_example(key_columns) -%}
select * from (select 'NULL' as problem, {{ example }} as example, 1 as rows
  from {{ relation }} where {{ nulls | join(' or ') }} limit 1)
union all
select * from (select 'duplicate' as problem, {{ example }} as example,
{%- if counted %} `__openmirror_rows` as rows
  from {{ relation }} where `__openmirror_rows` > 1
{%- else %} count(*) as rows
  from {{ relation }} group by {{ om.openmirror_quoted_list(key_columns) }} having count(*) > 1
{%- endif %} limit 1)
{%- endmacro -%}

{#- Two keys that differ only in the case or trailing spaces of `string_keys`: (one, other), at
    most one pair. `keys` has a row per key (checked unique). With `new_keys` (the changed keys
    table), only its new keys (by `change_markers`) are compared with every key of `keys` (Spark
    broadcasts the few new keys and scans `keys` once); otherwise all of `keys` are grouped. -#}
{%- macro openmirror_key_lookalikes_sql(keys, key_columns, string_keys, new_keys=none, change_markers=none) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set folded = string_keys | map('lower') | list -%}
  {#- Each key column as compared: case and trailing spaces folded for string keys. -#}
  {%- set normalized = {'': [], 'c': [], 'n': []} -%}
  {%- for key in key_columns -%}
    {%- for alias in normalized -%}
      {%- set column = (alias ~ '.' if alias else '') ~ om.openmirror_quote(key) -%}
      {%- do normalized[alias].append('lower(rtrim(' ~ column ~ '))' if key | lower in folded else column) -%}
    {%- endfor -%}
  {%- endfor -%}
{%- if new_keys is none -%}
  {%- set grouped = [] -%}
  {%- for expression in normalized[''] -%}{%- do grouped.append(expression ~ ' as `__openmirror_k' ~ loop.index ~ '`') -%}{%- endfor -%}
select min(example) as one, max(example) as other
from (select {{ grouped | join(', ') }}, {{ om.openmirror_key_example(key_columns) }} as example from {{ keys }})
group by {% for key in key_columns %}`__openmirror_k{{ loop.index }}`{{ ', ' if not loop.last }}{% endfor %}
having count(*) > 1 limit 1
{%- else -%}
  {%- set same, exact = [], [] -%}
  {%- for key in key_columns -%}
    {%- do same.append(normalized['c'][loop.index0] ~ ' = ' ~ normalized['n'][loop.index0]) -%}
    {%- do exact.append('c.' ~ om.openmirror_quote(key) ~ ' <=> n.' ~ om.openmirror_quote(key)) -%}
  {%- endfor -%}
select {{ om.openmirror_key_example(key_columns, 'c') }} as one, {{ om.openmirror_key_example(key_columns, 'n') }} as other
from {{ new_keys }} c join {{ keys }} n on {{ same | join(' and ') }} and not ({{ exact | join(' and ') }})
where c.`__rowMarker__` = {{ om.openmirror_new_marker(change_markers) }} limit 1
{%- endif -%}
{%- endmacro -%}

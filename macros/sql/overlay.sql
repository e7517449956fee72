{#- Snapshots overlaid by candidate runs (planning/overlay.py): a base table, an overlay with
    the latest state of every key changed since, and {{ this }} a view of both. Keys are never
    NULL (checked before). -#}

{#- The overlay's own columns, after the model's: the row's key hashes, whether it is deleted, and
    whether the base holds its key (only those keys hide a base row, so readers of the view
    anti-join the base with them alone: none, when the overlay holds only inserts). -#}
{%- macro openmirror_overlay_deleted() -%}`__openmirror_deleted`{%- endmacro -%}
{%- macro openmirror_overlay_in_base() -%}`__openmirror_in_base`{%- endmacro -%}

{#- The overlay's keys that hide a base row, as a relation to anti-join the base with. A NULL bit
    is an overlay written before the bit, whose view hid the base row of every overlay key. -#}
{%- macro openmirror_overlay_hiding(overlay) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
(select * from {{ overlay }} where coalesce({{ om.openmirror_overlay_in_base() }}, true))
{%- endmacro -%}

{#- An overlay written before the bit (found by a recovery that makes it the snapshot) gets the
    column, NULL in every row. -#}
{%- macro openmirror_add_in_base_sql(overlay) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
alter table {{ overlay }} add columns ({{ om.openmirror_overlay_in_base() }} boolean)
{%- endmacro -%}

{#- An overlay row's state after the model's columns, from the relation aliased `alias` (the
    overlay, or the changed keys, which carry it): its key hashes, deleted flag and in_base bit. -#}
{%- macro openmirror_overlay_state(alias) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
{{ alias }}.`__openmirror_hash1`, {{ alias }}.`__openmirror_hash2`, {{ alias }}.{{ om.openmirror_overlay_deleted() }}, {{ alias }}.{{ om.openmirror_overlay_in_base() }}
{%- endmacro -%}

{#- The candidates whose keys changed (`changes`, which carries their state), and the current
    overlay's rows whose keys did not change: a candidate as published leaves the snapshot's
    state of its key as it was. `columns` are the published columns (the model's without the
    delete flag). -#}
{%- macro openmirror_overlay_sql(target, candidates, changes, previous_overlay, columns, key_columns, by_key_hash) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set names = [] -%}
  {%- for column in columns -%}{%- do names.append(om.openmirror_quote(column.name)) -%}{%- endfor -%}
create table {{ target }} using parquet as
select {% for name in names %}c.{{ name }}, {% endfor %}{{ om.openmirror_overlay_state('k') }}
from {{ candidates }} c join {{ changes }} k on {{ om.openmirror_probe_join('c', 'k', key_columns, by_key_hash) }}
{%- if previous_overlay %}
union all
select {% for name in names %}o.{{ name }}, {% endfor %}{{ om.openmirror_overlay_state('o') }}
from {{ previous_overlay }} o left anti join {{ changes }} k on {{ om.openmirror_probe_join('o', 'k', key_columns, by_key_hash) }}
{%- endif %}
{%- endmacro -%}

{#- The candidates' changed keys with their marker: a key the snapshot does not hold (or holds
    deleted) is new, a flagged key it holds is deleted, a key whose hashes differ is changed;
    candidates as published are left out. Each changed key carries the state the overlay takes:
    the candidate's key hashes and deleted flag, and whether the base holds the key. Written
    before the overlay, so that a run whose candidates are all as published knows it before
    writing anything. The snapshot's state of a
    key is the overlay's, else the base's key hashes; both are narrowed to the candidates' keys first (a semi join that streams
    them past the candidates' keys), so nothing large is shuffled. `by_key_hash`: see
    `openmirror_probe_join`. -#}
{%- macro openmirror_overlay_changes_sql(target, candidates, previous_overlay, base_hashes, key_columns, hashed, delete_flag, change_markers, by_key_hash) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set deleted = om.openmirror_overlay_deleted() -%}
  {%- set base_keys = [] -%}
  {%- for key in key_columns -%}{%- do base_keys.append('h.' ~ om.openmirror_quote(key)) -%}{%- endfor -%}
  {%- if previous_overlay -%}
    {%- set alive = '(case when o.`__openmirror_hash1` is not null then not o.' ~ deleted ~ ' else b.`__openmirror_hash1` is not null end)' -%}
    {%- set was = 'coalesce(o.{0}, b.{0})' -%}
  {%- else -%}
    {%- set alive = '(b.`__openmirror_hash1` is not null)' -%}
    {%- set was = 'b.{0}' -%}
  {%- endif -%}
create table {{ target }} using parquet as
with c as (
  select {{ om.openmirror_quoted_list(key_columns) }}, {{ om.openmirror_row_hash(hashed, 1) }} as `__openmirror_hash1`,
    {{ om.openmirror_row_hash(hashed, 2) }} as `__openmirror_hash2`,
    {{ 'coalesce(' ~ om.openmirror_quote(delete_flag) ~ ', false)' if delete_flag else 'false' }} as {{ deleted }}
  from {{ candidates }}
),
{%- if previous_overlay %}
o as (
  select p.* from {{ previous_overlay }} p left semi join c on {{ om.openmirror_probe_join('p', 'c', key_columns, by_key_hash) }}
),
{%- endif %}
b as (
  select {{ base_keys | join(', ') }}, h.`__openmirror_hash1`, h.`__openmirror_hash2` from {{ base_hashes }} h
  left semi join c on {{ om.openmirror_probe_join('h', 'c', key_columns, by_key_hash) }}
)
select {% for key in key_columns %}c.{{ om.openmirror_quote(key) }}, {% endfor -%}
  cast(case when not {{ alive }} then {{ om.openmirror_new_marker(change_markers) }}
    when c.{{ deleted }} then {{ om.openmirror_delete_marker() }}
    else {{ om.openmirror_changed_marker(change_markers) }} end as int) as `__rowMarker__`,
  c.`__openmirror_hash1`, c.`__openmirror_hash2`, c.{{ deleted }}, b.`__openmirror_hash1` is not null as {{ om.openmirror_overlay_in_base() }}
from c
{%- if previous_overlay %}
left join o on {{ om.openmirror_key_join('c', 'o', key_columns) }}
{%- endif %}
left join b on {{ om.openmirror_key_join('c', 'b', key_columns) }}
where (not c.{{ deleted }} and not {{ alive }})
  or (c.{{ deleted }} and {{ alive }})
  or (not c.{{ deleted }} and {{ alive }} and (c.`__openmirror_hash1` <> {{ was.format('`__openmirror_hash1`') }}
    or c.`__openmirror_hash2` <> {{ was.format('`__openmirror_hash2`') }}))
{%- endmacro -%}

{#- {{ this }} as the base's rows whose keys the overlay does not hide, and the overlay's rows not
    deleted; `properties` are the snapshot's record. -#}
{%- macro openmirror_overlay_view_sql(target, base, overlay, columns, key_columns, properties, by_key_hash) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set names = [] -%}
  {%- for column in columns -%}{%- do names.append(om.openmirror_quote(column)) -%}{%- endfor -%}
create or replace view {{ target }} tblproperties ({{ om.openmirror_properties(properties) }}) as
select {% for name in names %}b.{{ name }}{{ ', ' if not loop.last }}{% endfor %}
from {{ base }} b left anti join {{ om.openmirror_overlay_hiding(overlay) }} o on {{ om.openmirror_probe_join('b', 'o', key_columns, by_key_hash) }}
union all
select {{ names | join(', ') }} from {{ overlay }} where not {{ om.openmirror_overlay_deleted() }}
{%- endmacro -%}

{#- An overlaid snapshot's key hashes, as a relation to join: the base's for the keys the overlay
    does not hide, and the overlay's own for its live keys (the overlay carries its rows' hashes). -#}
{%- macro openmirror_overlaid_hashes_sql(base_hashes, overlay, key_columns, by_key_hash) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set hashes = '`__openmirror_hash1`, `__openmirror_hash2`' -%}
(select {{ om.openmirror_quoted_list(key_columns, 'b.') }}, b.{{ hashes | replace(', ', ', b.') }} from {{ base_hashes }} b
  left anti join {{ om.openmirror_overlay_hiding(overlay) }} o on {{ om.openmirror_probe_join('b', 'o', key_columns, by_key_hash) }}
 union all
 select {{ om.openmirror_quoted_list(key_columns) }}, {{ hashes }} from {{ overlay }} where not {{ om.openmirror_overlay_deleted() }})
{%- endmacro -%}

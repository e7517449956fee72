{#-
  Pieces every change-row select shares. They take plain values (names, column descriptions
  with `name`, `data_type`, `published_type`, `is_complex` and `is_text`) and render SQL text only, so the
  plugin (through the adapter) and the package (on a stock Spark connection) render the same SQL.

  Macros here call each other through `om`: dbt resolves an installed package's macros only as
  `dbt_openmirror.<name>`, and a plugin's include project's only as `dbt.<name>`, hence
  `{% set om = dbt_openmirror if dbt_openmirror is defined else dbt %}` at the top of each caller.
-#}

{%- macro openmirror_quote(name) -%}
  `{{ name | replace('`', '``') }}`
{%- endmacro -%}

{%- macro openmirror_string(value) -%}
  '{{ value | replace('\\', '\\\\') | replace("'", "\\'") }}'
{%- endmacro -%}

{#- The marker of a new key and of a changed row under a `change_markers` setting. -#}
{%- macro openmirror_new_marker(change_markers) -%}
  {{ 4 if change_markers == 'upsert' else 0 }}
{%- endmacro -%}

{%- macro openmirror_changed_marker(change_markers) -%}
  {{ 4 if change_markers == 'upsert' else 1 }}
{%- endmacro -%}

{%- macro openmirror_delete_marker() -%}2{%- endmacro -%}

{#- Whether a full load carries `__rowMarker__`: only upserts need it (a marker-free row is an
    INSERT, and INSERTs applied twice duplicate). Renders 'True' or 'False'. -#}
{%- macro openmirror_full_load_marked(change_markers) -%}
  {{ change_markers == 'upsert' }}
{%- endmacro -%}

{#- to_json's options: every one a session setting would otherwise decide (the time zone, whether
    NULL fields are written: spark.sql.jsonGenerator.ignoreNullFields), since the text is what
    the mirror compares, also as a struct key. -#}
{%- macro openmirror_json_options() -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  map('timestampFormat', {{ om.openmirror_string("yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX") }}, 'timestampNTZFormat', {{ om.openmirror_string("yyyy-MM-dd'T'HH:mm:ss.SSSSSS") }}, 'timeZone', 'UTC', 'ignoreNullFields', 'true')
{%- endmacro -%}

{#- The value a Parquet file carries: complex values travel as JSON text (maps have no equality
    in Spark, and JSON text compares every complex type the same way), their timestamps in
    microseconds and UTC, as flat timestamps are (to_json's default keeps milliseconds and writes
    the session's time zone, so the text would change with the session); a collated string as its
    characters (a file has no collations, `<=>` would follow the collation, and the change rows'
    union needs one type). -#}
{%- macro openmirror_published_value(expression, column) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- if column.is_complex -%}
    to_json({{ expression }}, {{ om.openmirror_json_options() }})
  {%- elif column.is_collated -%}
    collate({{ expression }}, 'UTF8_BINARY')
  {%- else -%}
    {{ expression }}
  {%- endif -%}
{%- endmacro -%}

{#- What the diff compares of a float besides its published value: the sign of a zero, which
    xxhash64 and `<=>` ignore (0.0 and -0.0 are one value to them) although the file carries it;
    as text, for zeros only. Empty for other columns. -#}
{%- macro openmirror_zero_sign(expression, column) -%}
  {%- if column.is_floating -%}
    case when {{ expression }} = 0 then cast({{ expression }} as string) end
  {%- endif -%}
{%- endmacro -%}

{#- Whether a column holds the same value in the rows aliased `new` and `old` (NULLs equal), as
    the files would tell: its published values, byte for byte also when only one side is collated
    (the snapshot's column, when the model dropped a collation), and a float's zero sign. -#}
{%- macro openmirror_same_value(new, old, name, column) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set as_text = not column.is_complex and column.published_type == 'string' -%}
  {%- set sides, signs = [], [] -%}
  {%- for value in (new ~ '.' ~ name, old ~ '.' ~ name) -%}
    {%- do sides.append("collate(" ~ value ~ ", 'UTF8_BINARY')" if as_text else om.openmirror_published_value(value, column) | trim) -%}
    {%- do signs.append(om.openmirror_zero_sign(value, column) | trim) -%}
  {%- endfor -%}
  {{ sides[0] }} <=> {{ sides[1] }}{% if signs[0] %} and {{ signs[0] }} <=> {{ signs[1] }}{% endif -%}
{%- endmacro -%}

{#- The value a change file carries of a column the model gives it now (not a deleted row's key,
    published before). Text that is not valid UTF-8 (cast from binary) fails the write: Parquet
    readers refuse such a file (DuckDB refuses it whole), so the mirror could stop at it. Spark
    reads such bytes as U+FFFD when it converts them (`encode` does, on every Spark version; Spark
    4's `is_valid_utf8` is not on Spark 3.5). Complex values need no check: to_json writes U+FFFD
    itself. The value is shown unless `show_values` is false (show_key_values). -#}
{%- macro openmirror_checked_value(expression, column, show_values) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set value = om.openmirror_published_value(expression, column) | trim -%}
  {%- if column.is_text -%}
    {%- set shown = [om.openmirror_string("column '" ~ column.name ~ "' holds text that is not valid UTF-8, which "
        ~ "Parquet readers refuse")] -%}
    {%- if show_values -%}
      {%- do shown.extend([om.openmirror_string(": e.g. '"), "left(cast(encode(" ~ value ~ ", 'UTF-8') as string), 60)",
          om.openmirror_string("' (U+FFFD marks the bytes)")]) -%}
    {%- else -%}
      {%- do shown.append(om.openmirror_string(" (values hidden: show_key_values=false)")) -%}
    {%- endif -%}
    {%- do shown.append(om.openmirror_string(". Nothing was published. Repair it in the model: "
        ~ "decode(binary, '<its charset>') reads bytes of another encoding.")) -%}
    case when encode({{ value }}, 'UTF-8') <> cast({{ value }} as binary) then raise_error(concat({{ shown | join(', ') }})) else {{ value }} end
  {%- else -%}
    {{ value }}
  {%- endif -%}
{%- endmacro -%}

{%- macro openmirror_null_of(column) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  cast(null as {{ column.published_type }}) as {{ om.openmirror_quote(column.published_name) }}
{%- endmacro -%}

{#- The select list with `__rowMarker__` first or last. -#}
{%- macro openmirror_with_marker(columns, marker, position) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set marker_column = marker ~ ' as ' ~ om.openmirror_quote('__rowMarker__') -%}
  {%- set ordered = [marker_column] + columns if position == 'first' else columns + [marker_column] -%}
  {{ ordered | join(',\n  ') }}
{%- endmacro -%}

{%- macro openmirror_key_join(left, right, key_columns) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set pairs = [] -%}
  {%- for key in key_columns -%}
    {%- do pairs.append(left ~ '.' ~ om.openmirror_quote(key) ~ ' = ' ~ right ~ '.' ~ om.openmirror_quote(key)) -%}
  {%- endfor -%}
  {{ pairs | join(' and ') }}
{%- endmacro -%}

{#- The join of a large table (`probe`) with a small one's keys (`build`). With `by_key_hash`
    (planning/hash_diff.py, `probes_by_key_hash`), Spark joins on one 64-bit hash of the key and
    checks the key itself as a condition (hashes collide); `if(…, true, false)` keeps the planner
    from taking the key columns as join keys again. Both sides' keys have the same types. -#}
{%- macro openmirror_probe_join(probe, build, key_columns, by_key_hash) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- if by_key_hash -%}
xxhash64({{ om.openmirror_quoted_list(key_columns, probe ~ '.') }}) = xxhash64({{ om.openmirror_quoted_list(key_columns, build ~ '.') }})
  and if({{ om.openmirror_key_join(probe, build, key_columns) }}, true, false)
  {%- else -%}
{{ om.openmirror_key_join(probe, build, key_columns) }}
  {%- endif -%}
{%- endmacro -%}

{%- macro openmirror_quoted_list(names, prefix='') -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set quoted = [] -%}
  {%- for name in names -%}{%- do quoted.append(prefix ~ om.openmirror_quote(name)) -%}{%- endfor -%}
  {{ quoted | join(', ') }}
{%- endmacro -%}

{#- Package mode: the key columns, the key check and the column changes, in Jinja (the plugin
    decides these in Python: keys.py, schema_plan.py). -#}

{#- Columns as the shared SQL macros take them (name, data_type, published_type, is_complex,
    published_name). -#}
{%- macro openmirror_column_specs(columns) -%}
  {%- set specs = [] -%}
  {%- for column in columns -%}
    {%- set data_type = column.dtype | trim | lower -%}
    {%- set is_complex = data_type.startswith(('struct<', 'array<', 'map<')) -%}
    {%- do specs.append({
        'name': column.column, 'data_type': column.dtype, 'is_complex': is_complex,
        'published_type': 'string' if is_complex else data_type, 'published_name': column.column,
    }) -%}
  {%- endfor -%}
  {{ return(specs) }}
{%- endmacro -%}

{#- The spec published under the mirror's spelling of its name (`spelling`: lower name -> name). -#}
{%- macro openmirror_as_published(spec, spelling) -%}
  {{ return({'name': spec.name, 'data_type': spec.data_type, 'is_complex': spec.is_complex,
      'published_type': spec.published_type, 'published_name': spelling.get(spec.name | lower, spec.name)}) }}
{%- endmacro -%}

{#- Lower name -> the name the mirror knows it by: the snapshot's record of published names, or
    its own column names. -#}
{%- macro openmirror_published_spelling(published_names, previous) -%}
  {%- set spelling = {} -%}
  {%- for name in (published_names or previous | map(attribute='name') | list) -%}
    {%- do spelling.update({name | lower: name}) -%}
  {%- endfor -%}
  {{ return(spelling) }}
{%- endmacro -%}

{#- The model's own spelling of each key column (Spark matches names case-insensitively). -#}
{%- macro openmirror_resolve_keys(unique_key, specs) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- for spec in specs -%}
    {%- if spec.name | lower == '__rowmarker__' or (spec.name | lower).startswith('__openmirror_') -%}
      {%- do om.openmirror_fail("the output has a column '" ~ spec.name ~ "'; __rowMarker__ (any letter case) is the "
          ~ "row marker dbt-openmirror writes and names starting with '__openmirror_' are its own. "
          ~ "Rename the column in the model.") -%}
    {%- endif -%}
  {%- endfor -%}
  {%- set by_lower = {} -%}
  {%- for spec in specs -%}{%- do by_lower.update({spec.name | lower: spec.name}) -%}{%- endfor -%}
  {%- set resolved = [] -%}
  {%- for key in unique_key -%}
    {%- if key | lower not in by_lower -%}
      {%- do om.openmirror_fail("unique_key column(s) ['" ~ key ~ "'] are not in the model's output; its "
          ~ "columns are " ~ specs | map(attribute='name') | list) -%}
    {%- endif -%}
    {%- do resolved.append(by_lower[key | lower]) -%}
  {%- endfor -%}
  {{ return(resolved) }}
{%- endmacro -%}

{#- Fail on the first NULL or duplicated key, before anything is staged: in the output's key hashes,
    or (`counted`) in the changed keys, which carry each key's row count. `sorted_buckets`: the
    relation is a key hashes table (openmirror_diff_query). -#}
{%- macro openmirror_check_keys(relation, key_columns, counted, sorted_buckets) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set problems = om.openmirror_diff_query(om.openmirror_key_problems_sql(relation, key_columns, counted), sorted_buckets) -%}
  {%- for problem in problems.rows -%}
    {%- if problem[0] == 'NULL' -%}
      {%- do om.openmirror_fail("unique_key " ~ key_columns ~ " has NULL values, e.g. the row with "
          ~ problem[1] ~ ". The mirror needs every key column set; filter or coalesce them.") -%}
    {%- else -%}
      {%- do om.openmirror_fail("unique_key " ~ key_columns ~ " is not unique: " ~ problem[1] ~ " appears in "
          ~ problem[2] ~ " rows. Each key must identify one row of the model's output.") -%}
    {%- endif -%}
  {%- endfor -%}
{%- endmacro -%}

{#- Compare the snapshot's columns with the model's: {'columns', 'kept', 'added', 'respelled',
    'rebuild_reason'} (schema_plan.py's rules). Removed columns stay in the snapshot and are
    published as NULL; added ones are published; a changed type stops the mirror's table, so it
    fails unless on_schema_change rebuilds. Names are case-insensitive: a column respelled in case
    keeps the mirror's spelling, or sync_all_columns rebuilds to take the new one. -#}
{%- macro openmirror_schema_plan(previous, current, on_schema_change, published_names) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set spelling = om.openmirror_published_spelling(published_names, previous) -%}
  {%- set previous_types = {} -%}
  {%- for column in previous -%}{%- do previous_types.update({column.name | lower: column.published_type}) -%}{%- endfor -%}
  {%- set current_names = current | map(attribute='name') | map('lower') | list -%}
  {%- set added, kept, retyped, published, respelled = [], [], [], [], [] -%}
  {%- for column in current -%}
    {%- set spec = om.openmirror_as_published(column, spelling) -%}
    {%- do published.append(spec) -%}
    {%- if spec.published_name != spec.name -%}{%- do respelled.append([spec.published_name, spec.name]) -%}{%- endif -%}
    {%- if column.name | lower not in previous_types -%}
      {%- do added.append(column) -%}
    {%- elif previous_types[column.name | lower] != column.published_type -%}
      {%- do retyped.append("column '" ~ column.name ~ "' " ~ previous_types[column.name | lower] ~ " -> " ~ column.published_type) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- for column in previous if column.name | lower not in current_names -%}
    {%- do kept.append(om.openmirror_as_published(column, spelling)) -%}
  {%- endfor -%}
  {%- if not (added or kept or retyped or respelled) -%}
    {{ return({'columns': current, 'kept': [], 'added': [], 'respelled': [], 'rebuild_reason': none}) }}
  {%- endif -%}
  {%- if (added or kept or retyped) and on_schema_change == 'fail' -%}
    {%- do om.openmirror_fail("columns changed (added " ~ added | map(attribute='name') | list ~ ", removed "
        ~ kept | map(attribute='name') | list ~ ", retyped " ~ retyped ~ ") and on_schema_change='fail'. Set "
        ~ "on_schema_change='append_new_columns' to publish added columns, 'sync_all_columns' to rebuild "
        ~ "the mirrored table, or run with --full-refresh.") -%}
  {%- endif -%}
  {%- if on_schema_change == 'sync_all_columns' and (retyped or kept or respelled) -%}
    {%- set reasons = retyped + (["columns " ~ kept | map(attribute='name') | list ~ " were removed"] if kept else []) -%}
    {%- for old, new in respelled -%}{%- do reasons.append("column '" ~ old ~ "' is now spelled '" ~ new ~ "'") -%}{%- endfor -%}
    {{ return({'columns': current, 'kept': [], 'added': added, 'respelled': [], 'rebuild_reason': reasons | join('; ')}) }}
  {%- endif -%}
  {%- if retyped -%}
    {%- do om.openmirror_fail(retyped | join('; ') ~ ". The mirror stops replicating a table whose column type "
        ~ "changes, so this is not published in place. Run with --full-refresh to rebuild the mirrored "
        ~ "table, or set on_schema_change='sync_all_columns' to rebuild automatically.") -%}
  {%- endif -%}
  {{ return({'columns': published, 'kept': kept, 'added': added, 'respelled': respelled, 'rebuild_reason': none}) }}
{%- endmacro -%}

{#- Package mode: the key columns, the key check, the column changes and the run plan, in Jinja
    (the plugin decides these in Python: keys.py, schema_plan.py, run_plan.py; the same case
    tables test both, tests/unit/test_package_decisions.py). -#}

{#- Columns as the shared SQL macros take them (name, data_type, published_type, is_complex,
    is_text, is_floating, is_collated, published_name). -#}
{%- macro openmirror_column_specs(columns) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set specs = [] -%}
  {%- for column in columns -%}
    {%- set data_type = column.dtype | trim | lower -%}
    {%- set is_complex = data_type.startswith(('struct<', 'array<', 'map<')) -%}
    {%- set is_collated = not is_complex and modules.re.search(om.openmirror_constants().non_binary_collation, data_type) is not none -%}
    {%- do specs.append({
        'name': column.column, 'data_type': column.dtype, 'is_complex': is_complex,
        'is_text': modules.re.match(om.openmirror_constants().text_types | join('|'), data_type) is not none,
        'is_floating': data_type in om.openmirror_constants().floating_point_types, 'is_collated': is_collated,
        'published_type': 'string' if is_complex else modules.re.sub(om.openmirror_constants().collation_clause, '', data_type),
        'published_name': column.column,
    }) -%}
  {%- endfor -%}
  {{ return(specs) }}
{%- endmacro -%}

{#- The column specs of `relation` (the plugin's AdapterCatalog.columns): the rows of DESCRIBE before
    its first row without a type (dbt-spark's list ends at a name starting with '#'), with whole
    types where DESCRIBE cut a struct short. -#}
{%- macro openmirror_relation_specs(relation) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set listed = namespace(ended=false) -%}
  {%- set columns = [] -%}
  {%- for row in run_query(om.openmirror_describe_sql(relation)).rows -%}
    {%- set listed.ended = listed.ended or not row[1] -%}
    {%- if not listed.ended -%}{%- do columns.append({'column': row[0], 'dtype': row[1]}) -%}{%- endif -%}
  {%- endfor -%}
  {%- set shortened, shortened_type = [], om.openmirror_constants().shortened_type -%}
  {%- for column in columns if modules.re.search(shortened_type, column.dtype) -%}
    {%- do shortened.append(column.column) -%}
  {%- endfor -%}
  {%- if shortened -%}
    {%- set whole = run_query(om.openmirror_whole_types_sql(relation, shortened)).rows[0] -%}
    {%- for column in columns if column.column in shortened -%}
      {%- do column.update({'dtype': whole[shortened.index(column.column)]}) -%}
    {%- endfor -%}
  {%- endif -%}
  {{ return(om.openmirror_column_specs(columns)) }}
{%- endmacro -%}

{#- The spec published under the mirror's spelling of its name (`spelling`: lower name -> name). -#}
{%- macro openmirror_as_published(spec, spelling) -%}
  {{ return({'name': spec.name, 'data_type': spec.data_type, 'is_complex': spec.is_complex, 'is_text': spec.is_text,
      'is_floating': spec.is_floating, 'is_collated': spec.is_collated,
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
  {%- set reserved = om.openmirror_constants().reserved -%}
  {%- set unpublishable = om.openmirror_constants().unpublishable_types -%}
  {%- set spelled = {} -%}
  {%- for spec in specs -%}
    {%- set type_word = modules.re.split(unpublishable.type_word, spec.data_type | trim | lower, 1)[0] -%}
    {%- set other = spelled.get(spec.name | lower) -%}
    {%- do spelled.update({spec.name | lower: other if other is not none else spec.name}) -%}
    {%- if other is not none -%}
      {%- do om.openmirror_fail("the output has columns '" ~ other ~ "' and '" ~ spec.name ~ "', named alike but "
          ~ "for case: the mirror's column names are case-insensitive, so one table cannot hold both. Rename one in the model.") -%}
    {%- elif spec.name | lower == reserved.row_marker_lower -%}
      {%- do om.openmirror_fail("the output has a column '" ~ spec.name ~ "'. The mirror reads " ~ reserved.row_marker
          ~ " (in any letter case) as the row marker that dbt-openmirror writes itself; rename the column in the model.") -%}
    {%- elif (spec.name | lower).startswith(reserved.internal_prefix) -%}
      {%- do om.openmirror_fail("the output has a column '" ~ spec.name ~ "'; names starting with '"
          ~ reserved.internal_prefix ~ "' are dbt-openmirror's own. Rename the column in the model.") -%}
    {%- elif type_word in unpublishable.reasons -%}
      {%- do om.openmirror_fail("column '" ~ spec.name ~ "' is " ~ spec.data_type | trim ~ ": "
          ~ unpublishable.reasons[type_word] ~ ". Nothing was published.") -%}
    {%- elif modules.re.findall(unpublishable.map_start, spec.data_type, modules.re.IGNORECASE) | length
          != modules.re.findall(unpublishable.faithful_map_key, spec.data_type, modules.re.IGNORECASE) | length -%}
      {%- do om.openmirror_fail("column '" ~ spec.name ~ "' is " ~ spec.data_type | trim ~ ": a map is published as "
          ~ "JSON, whose keys Spark writes as text only from strings, numbers and booleans (dates and timestamps come "
          ~ "as raw counts, binary, struct and array keys as names that change every run). Convert the keys in the "
          ~ "model, e.g. transform_keys(m, (k, v) -> date_format(k, 'yyyy-MM-dd')). Nothing was published.") -%}
    {%- endif -%}
  {%- endfor -%}
  {%- set by_lower = {} -%}
  {%- for spec in specs -%}{%- do by_lower.update({spec.name | lower: spec.name}) -%}{%- endfor -%}
  {%- set missing = [] -%}
  {%- for key in unique_key if key | lower not in by_lower -%}{%- do missing.append(key) -%}{%- endfor -%}
  {%- if missing -%}
    {%- do om.openmirror_fail("unique_key column(s) " ~ missing ~ " are not in the model's output; its "
        ~ "columns are " ~ specs | map(attribute='name') | list) -%}
  {%- endif -%}
  {%- set resolved = [] -%}
  {%- for key in unique_key -%}{%- do resolved.append(by_lower[key | lower]) -%}{%- endfor -%}
  {{ return(resolved) }}
{%- endmacro -%}

{#- keys.check_key_types: a map cannot identify rows; floating-point keys are fragile (warnings). -#}
{%- macro openmirror_check_key_types(specs, key_columns) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set warnings = [] -%}
  {%- for key in key_columns -%}
    {%- for spec in specs if spec.name == key -%}
      {%- set data_type = spec.data_type | trim | lower -%}
      {%- if 'map<' in data_type -%}
        {%- do om.openmirror_fail("unique_key column '" ~ key ~ "' is " ~ spec.data_type ~ "; maps cannot be "
            ~ "compared or grouped, so they cannot identify rows. Use other key columns.") -%}
      {%- elif spec.is_complex and modules.re.search(om.openmirror_constants().nested_float, data_type | replace(' ', '')) -%}
        {%- do om.openmirror_fail("unique_key column '" ~ key ~ "' is " ~ spec.data_type ~ ". The mirror matches a "
            ~ "struct or array key by its JSON text, in which -0.0 and 0.0 differ although Spark takes them for one "
            ~ "key: a change of sign would leave the old key in the mirror beside the new one. Cast its "
            ~ "floating-point parts to decimal, or key on other columns.") -%}
      {%- elif modules.re.search(om.openmirror_constants().non_binary_collation, data_type) -%}
        {%- do om.openmirror_fail("unique_key column '" ~ key ~ "' is " ~ spec.data_type ~ ". The mirror compares "
            ~ "keys byte for byte, so keys equal under this collation (e.g. 'A' and 'a', or 'a' and 'a ') would be one row here and "
            ~ "two in the mirror, and updates and deletes would miss. Key on collate(" ~ key ~ ", 'UTF8_BINARY'), or "
            ~ "normalise the key (e.g. upper(...)) if such keys mean the same thing.") -%}
      {%- elif spec.is_floating -%}
        {%- do warnings.append("Model '" ~ model.name ~ "': unique_key column '" ~ key ~ "' is " ~ spec.data_type
            ~ ". Floating-point keys are fragile: NaN and -0.0 / 0.0 may match or not depending on who compares "
            ~ "them (the mirror's MERGE, the SQL endpoint, Spark), so an update or delete can miss its row. "
            ~ "Prefer an integer, decimal or string key.") -%}
      {%- endif -%}
    {%- endfor -%}
  {%- endfor -%}
  {{ return(warnings) }}
{%- endmacro -%}

{#- keys.string_keys: the key columns whose values the mirror's SQL may compare ignoring case or
    trailing spaces. -#}
{%- macro openmirror_string_keys(specs, key_columns) -%}
  {{ return(specs | selectattr('is_text') | map(attribute='name') | select('in', key_columns) | list) }}
{%- endmacro -%}

{#- keys.lookalike_warning: two keys that differ only in case or trailing spaces. -#}
{%- macro openmirror_lookalike_warning(key_columns, pair, show_values) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set shown = ("'" ~ pair[0] ~ "' and '" ~ pair[1] ~ "'") if show_values
      else "two keys " ~ om.openmirror_constants().hidden_values -%}
  {{ return("Model '" ~ model.name ~ "': unique_key " ~ (key_columns | list) ~ " has keys that differ only in letter "
      ~ "case or trailing spaces: " ~ shown ~ ". The mirror keeps them apart, but its SQL analytics endpoint "
      ~ "ignores trailing spaces when it compares strings (and letter case under a case-insensitive "
      ~ "collation), so queries there may see two rows for one key. Normalise the key in the model (e.g. "
      ~ "upper(trim(...))) if they mean the same thing.") }}
{%- endmacro -%}

{#- Warn about string keys that differ only in case or trailing spaces, as the plugin does: among
    all keys (`keys`, a row per key), or between this run's changed keys (`new_keys`) and all keys. -#}
{%- macro openmirror_warn_key_lookalikes(specs, key_columns, keys, settings, new_keys=none) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set strings = om.openmirror_string_keys(specs, key_columns) -%}
  {%- if strings -%}
    {%- set pairs = om.openmirror_diff_query(om.openmirror_key_lookalikes_sql(keys, key_columns, strings,
        new_keys, settings.change_markers), false) -%}
    {%- for pair in pairs.rows -%}
      {%- do exceptions.warn(om.openmirror_lookalike_warning(key_columns, pair, settings.show_key_values)) -%}
    {%- endfor -%}
  {%- endif -%}
{%- endmacro -%}

{#- Fail on the first NULL or duplicated key, before anything is staged: in the output's key hashes,
    or (`counted`) in the changed keys, which carry each key's row count. `sorted_buckets`: the
    relation is a key hashes table (openmirror_diff_query). Example values only when `show_values`
    (model config show_key_values). -#}
{%- macro openmirror_check_keys(relation, key_columns, counted, sorted_buckets, show_values) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set problems = om.openmirror_diff_query(om.openmirror_key_problems_sql(relation, key_columns, counted), sorted_buckets) -%}
  {%- do om.openmirror_raise_key_problems(key_columns, problems.rows, show_values) -%}
{%- endmacro -%}

{#- keys.raise_key_problems: fail on the first problem row (problem, example, rows). -#}
{%- macro openmirror_raise_key_problems(key_columns, problems, show_values) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set hidden = om.openmirror_constants().hidden_values -%}
  {%- for problem in problems -%}
    {%- if problem[0] == 'NULL' -%}
      {%- do om.openmirror_fail("unique_key " ~ (key_columns | list) ~ " has NULL values"
          ~ (", e.g. the row with " ~ problem[1] if show_values else " " ~ hidden)
          ~ ". The mirror needs every key column set; filter or coalesce them.") -%}
    {%- else -%}
      {%- do om.openmirror_fail("unique_key " ~ (key_columns | list) ~ " is not unique: "
          ~ (problem[1] if show_values else 'a key ' ~ hidden) ~ " appears in "
          ~ problem[2] ~ " rows. Each key must identify one row of the model's output.") -%}
    {%- endif -%}
  {%- endfor -%}
{%- endmacro -%}

{#- Compare the snapshot's columns with the model's: {'columns', 'kept', 'added', 'respelled',
    'rebuild_reason'} (schema_plan.py's rules). Removed columns stay in the snapshot and are
    published as NULL; added ones are published; a changed type stops the mirror's table, so it
    fails unless on_schema_change rebuilds. Names are case-insensitive: a column respelled in case
    keeps the mirror's spelling, or sync_all_columns rebuilds to take the new one. -#}
{%- macro openmirror_schema_plan(previous, current, on_schema_change, published_names, key_columns=[]) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set spelling = om.openmirror_published_spelling(published_names, previous) -%}
  {%- set key_names = key_columns | map('lower') | list -%}
  {%- set previous_types = {} -%}
  {%- for column in previous -%}{%- do previous_types.update({column.name | lower: om.openmirror_compared_type(column, key_names)}) -%}{%- endfor -%}
  {%- set current_names = current | map(attribute='name') | map('lower') | list -%}
  {%- set added, kept, retyped, published, respelled = [], [], [], [], [] -%}
  {%- for column in current -%}
    {%- set spec = om.openmirror_as_published(column, spelling) -%}
    {%- do published.append(spec) -%}
    {%- if spec.published_name != spec.name -%}{%- do respelled.append([spec.published_name, spec.name]) -%}{%- endif -%}
    {%- set kind = om.openmirror_compared_type(column, key_names) -%}
    {%- if column.name | lower not in previous_types -%}
      {%- do added.append(column) -%}
    {%- elif previous_types[column.name | lower] != kind -%}
      {%- do retyped.append("column '" ~ column.name ~ "' " ~ previous_types[column.name | lower] ~ " -> " ~ kind) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- for column in previous if column.name | lower not in current_names -%}
    {%- do kept.append(om.openmirror_as_published(column, spelling)) -%}
  {%- endfor -%}
  {%- if not (added or kept or retyped or respelled) -%}
    {{ return({'columns': current, 'kept': [], 'added': [], 'respelled': [], 'rebuild_reason': none}) }}
  {%- endif -%}
  {%- if (added or kept or retyped) and on_schema_change == 'fail' -%}
    {%- set parts = (["added " ~ added | map(attribute='name') | list] if added else [])
        + (["removed " ~ kept | map(attribute='name') | list] if kept else [])
        + (["retyped: " ~ retyped | join('; ')] if retyped else []) -%}
    {%- do om.openmirror_fail("columns changed (" ~ parts | join(', ') ~ ") and on_schema_change='fail'. Set "
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
        ~ "changes, and matches a struct or array key by its JSON text, which the type decides; so this is not "
        ~ "published in place (not even with on_schema_change='ignore'). Run with "
        ~ "--full-refresh to rebuild the mirrored table, or set on_schema_change='sync_all_columns' to rebuild "
        ~ "automatically.") -%}
  {%- endif -%}
  {{ return({'columns': published, 'kept': kept, 'added': added, 'respelled': respelled, 'rebuild_reason': none}) }}
{%- endmacro -%}

{#- schema_plan.compared_type: what a change of the column's type is judged by (`key_names` in lower case). -#}
{%- macro openmirror_compared_type(column, key_names) -%}
  {{ return(column.data_type | trim if column.is_complex and column.name | lower in key_names else column.published_type) }}
{%- endmacro -%}

{#- The names the snapshot records its columns were published under (a list of names), or none:
    run_plan.snapshot_record's rule. -#}
{%- macro openmirror_published_names(snapshot) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set names = fromjson(snapshot.get(om.openmirror_constants().properties.published_columns, 'null')) -%}
  {%- if names is sequence and names is not string and names is not mapping and not (names | reject('string') | list) -%}
    {{ return(names | list) }}
  {%- endif -%}
  {{ return(none) }}
{%- endmacro -%}

{#- Why the snapshot's columns (`previous`) are not the ones it records as published
    (`published_names`, none: not recorded), or '' when they are: run_plan._columns_altered's rule. -#}
{%- macro openmirror_columns_altered(published_names, previous) -%}
  {%- if published_names is none or previous is none -%}
    {{ return('') }}
  {%- endif -%}
  {%- set recorded = published_names | map('lower') | list -%}
  {%- set found = previous | map(attribute='name') | map('lower') | list -%}
  {%- set added, dropped = [], [] -%}
  {%- for column in previous if column.name | lower not in recorded -%}{%- do added.append(column.name) -%}{%- endfor -%}
  {%- for name in published_names if name | lower not in found -%}{%- do dropped.append(name) -%}{%- endfor -%}
  {%- if not (added or dropped) -%}
    {{ return('') }}
  {%- endif -%}
  {%- set changes = (["added " ~ added] if added else []) + (["dropped " ~ dropped] if dropped else []) -%}
  {{ return("the snapshot's columns were changed outside dbt-openmirror's runs (" ~ changes | join(', ')
      ~ "), so it no longer records what the mirror holds") }}
{%- endmacro -%}

{#- How a run stages, from `{{ this }}`'s properties (`snapshot`, none without `{{ this }}`) alone:
    {'load': 'full' or 'incremental', 'reason', 'plan' (openmirror_schema_plan), 'key_columns'
    (as the table declares them)}. run_plan.plan_run's rules, but for the table folder's: dbt
    cannot see the landing zone, so `dbt-openmirror publish` checks the chain of runs instead. -#}
{%- macro openmirror_package_run_plan(snapshot, previous, columns, key_columns, settings, full_refresh) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set constants = om.openmirror_constants() -%}
  {%- set keys, loads, reasons = constants.properties, constants.loads, constants.reasons -%}
  {%- set first = snapshot is none -%}
  {%- set snapshot = snapshot if snapshot is not none else {} -%}
  {%- set published_names = om.openmirror_published_names(snapshot) -%}
  {%- set spelling = om.openmirror_published_spelling(published_names, previous or []) -%}
  {%- set published_keys = [] -%}
  {%- for key in key_columns -%}{%- do published_keys.append(spelling.get(key | lower, key)) -%}{%- endfor -%}
  {%- set full_plan = {'columns': columns, 'kept': [], 'added': [], 'respelled': [], 'rebuild_reason': none} -%}
  {%- set full = {'load': loads.full, 'plan': full_plan, 'key_columns': key_columns} -%}
  {%- if first or snapshot.get(keys.created_by) == constants.empty_run -%}
    {{ return(dict(full, reason=reasons.first_publish)) }}
  {%- elif full_refresh -%}
    {{ return(dict(full, reason=reasons.full_refresh)) }}
  {%- elif not snapshot.get(keys.staged_run_id) -%}
    {{ return(dict(full, reason='no snapshot records a staged run')) }}
  {%- endif -%}
  {%- set declared = fromjson(snapshot.get(keys.key_columns, 'null')) -%}
  {%- if declared is not none and declared != published_keys -%}
    {%- do om.openmirror_fail("unique_key is now " ~ published_keys ~ " but the mirrored table was declared with "
        ~ "keyColumns " ~ declared ~ ". The mirror can never change a table's key in place; run with "
        ~ "--full-refresh to rebuild the mirrored table with the new key.") -%}
  {%- endif -%}
  {%- set landing_zone = snapshot.get(keys.landing_zone) -%}
  {%- set table_folder = snapshot.get(keys.table_folder) -%}
  {%- set left = '; that table folder is left as last published (delete it to drop its mirrored table)' -%}
  {%- if landing_zone is not none and landing_zone != settings.landing_zone -%}
    {{ return(dict(full, reason='the snapshot was staged for ' ~ landing_zone ~ '/' ~ table_folder ~ ', not for '
        ~ settings.landing_zone ~ '/' ~ settings.table_folder ~ left)) }}
  {%- elif table_folder != settings.table_folder -%}
    {{ return(dict(full, reason='the snapshot was published to ' ~ table_folder ~ ', not ' ~ settings.table_folder ~ left)) }}
  {%- endif -%}
  {%- set altered = om.openmirror_columns_altered(published_names, previous) -%}
  {%- if altered -%}
    {{ return(dict(full, reason=altered)) }}
  {%- endif -%}
  {%- set plan = om.openmirror_schema_plan(previous, columns, settings.on_schema_change, published_names, key_columns) -%}
  {%- if plan.rebuild_reason -%}
    {{ return(dict(full, reason="on_schema_change='sync_all_columns': " ~ plan.rebuild_reason)) }}
  {%- endif -%}
  {{ return({'load': loads.incremental, 'reason': '', 'plan': plan, 'key_columns': published_keys}) }}
{%- endmacro -%}

{#- A relation's table properties (none: no relation, no properties), long values joined. -#}
{%- macro openmirror_table_properties(relation) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set stored = {} -%}
  {%- if relation is not none -%}
    {%- for row in fetch_tbl_properties(relation).rows -%}{%- do stored.update({row[0]: row[1]}) -%}{%- endfor -%}
  {%- endif -%}
  {{ return(om.openmirror_read_properties(stored)) }}
{%- endmacro -%}

{#- metastore_limits.read_properties in Jinja (the same cases test both). -#}
{%- macro openmirror_read_properties(stored) -%}
  {%- set limits = (dbt_openmirror if dbt_openmirror is defined else dbt).openmirror_constants().metastore -%}
  {%- set properties = {} -%}
  {%- for key, value in stored.items() -%}
    {%- set part = modules.re.fullmatch(limits.part_key, key) -%}
    {%- if not (part and part.group('key') in stored) -%}
      {%- if value.startswith(limits.parts_marker) -%}
        {%- set parts = [] -%}
        {%- for index in range(value[limits.parts_marker | length:] | int) -%}
          {%- do parts.append(stored[key ~ '.part.' ~ index]) -%}
        {%- endfor -%}
        {%- set value = parts | join('') -%}
      {%- endif -%}
      {%- do properties.update({key: value}) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(properties) }}
{%- endmacro -%}

{#- What the output records when it becomes `{{ this }}`: the run it reflects, where it was staged
    for, its declared key and the names its columns are published under; a run held for its tests
    also the manifest the on-run-end hook settles it in (`held_manifest`). -#}
{%- macro openmirror_snapshot_properties(run_id, settings, key_columns, plan, held_manifest, rows) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set keys = om.openmirror_constants().properties -%}
  {%- set properties = {
      keys.staged_run_id: run_id, keys.landing_zone: settings.landing_zone, keys.rows: rows | string,
      keys.table_folder: settings.table_folder, keys.key_columns: tojson(key_columns),
      keys.published_columns: tojson((plan.columns + plan.kept) | map(attribute='published_name') | list)} -%}
  {%- if held_manifest -%}
    {%- do properties.update({keys.held: 'true', keys.manifest: held_manifest}) -%}
  {%- endif -%}
  {{ return(properties) }}
{%- endmacro -%}

{#- A table of the snapshot is read as the snapshot only while it holds the rows its run recorded:
    one whose files were lost reads as empty (planning/run_plan.py snapshot_rows_problem says why). -#}
{%- macro openmirror_snapshot_rows_problem(table, recorded, counted) -%}
  {%- if recorded is none or counted == recorded -%}{{ return(none) }}{%- endif -%}
  {{ return("Model '" ~ model.name ~ "': " ~ table ~ " holds " ~ counted ~ " rows, but the run that wrote it left "
      ~ recorded ~ ": its files were lost or changed outside dbt-openmirror (a folder deleted or moved, rows written by "
      ~ "hand), and a diff against it would be wrong. Nothing was published. Run `dbt run --full-refresh -s "
      ~ model.name ~ "` to load the table folder again.") }}
{%- endmacro -%}

{#- Why `relation` (`{{ this }}`, or its key hashes: a row per row) cannot be read as the snapshot
    whose record `properties` holds, or none. -#}
{%- macro openmirror_snapshot_table_problem(relation, properties) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set recorded = properties.get(om.openmirror_constants().properties.rows, '') | string -%}
  {%- if not recorded.isdigit() -%}{{ return(none) }}{%- endif -%}
  {{ return(om.openmirror_snapshot_rows_problem(relation | string, recorded | int, om.openmirror_row_count(relation))) }}
{%- endmacro -%}

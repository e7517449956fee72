{#-
  Package mode's manifest: one row per state a staged run reaches, in a Parquet table stored in
  the landing zone's _scratchPad (the mirror ignores it), so that `dbt-openmirror publish` reads it
  without Spark and appends its own `published` rows beside Spark's. States: `staging` (files
  written, snapshot not yet advanced), `staged` (snapshot advanced: ready to publish), `discarded`
  (the run stopped before its snapshot advanced), `published`. The columns and states are
  package/publish.py's (MANIFEST_SCHEMA), rendered into openmirror_constants().
-#}

{#- One manifest per landing zone, stored in it (`dbt-openmirror publish <landing zone>` reads it
    there): the var's landing zone keeps the plain name, a model's own `landing_zone` gets a
    table named after it. -#}
{%- macro openmirror_manifest_relation(settings) -%}
  {%- set shared = (var('openmirror_landing_zone', none) or '').rstrip('/') -%}
  {%- set identifier = 'openmirror_manifest' if settings.landing_zone == shared
      else 'openmirror_manifest_' ~ local_md5(settings.landing_zone)[:12] -%}
  {{ return(api.Relation.create(schema=settings.manifest_schema, identifier=identifier, type='table')) }}
{%- endmacro -%}

{%- macro openmirror_ensure_manifest(manifest, settings) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- call statement('openmirror_manifest') -%}
    {{ om.openmirror_manifest_ddl(manifest, settings.landing_zone) }}
  {%- endcall -%}
  {%- do om.openmirror_check_manifest_landing_zone(manifest, settings) -%}
  {#- A manifest created by an earlier version lacks the columns added since (null in its rows). -#}
  {%- set present = adapter.get_columns_in_relation(manifest) | map(attribute='name') | map('lower') | list -%}
  {%- set missing = [] -%}
  {%- for name, data_type in om.openmirror_constants().manifest_columns if name not in present -%}
    {%- do missing.append(name ~ ' ' ~ data_type) -%}
  {%- endfor -%}
  {%- if missing -%}
    {%- call statement('openmirror_manifest_columns') -%}
      alter table {{ manifest }} add columns ({{ missing | join(', ') }})
    {%- endcall -%}
  {%- endif -%}
  {#- `dbt-openmirror publish` adds files to the table's folder behind Spark's back. -#}
  {%- call statement('openmirror_manifest_refresh') -%}refresh table {{ manifest }}{%- endcall -%}
{%- endmacro -%}

{%- macro openmirror_manifest_ddl(manifest, landing_zone) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set constants = om.openmirror_constants() -%}
  {%- set columns = [] -%}
  {%- for name, data_type in constants.manifest_columns -%}{%- do columns.append(name ~ ' ' ~ data_type) -%}{%- endfor -%}
  create table if not exists {{ manifest }} ({{ columns | join(', ') }})
  using parquet location {{ om.openmirror_string(om.openmirror_manifest_location(landing_zone)) }}
  tblproperties ({{ om.openmirror_string(constants.properties.manifest_landing_zone) }} = {{ om.openmirror_string(landing_zone) }})
{%- endmacro -%}

{#- Where a run stages its files (landing_zone.scratch_path): only the run id is in the name, and
    it is checked, so no path Spark overwrites can leave the landing zone's staging folder. -#}
{%- macro openmirror_staged_folder(run_id) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set constants = om.openmirror_constants() -%}
  {%- if run_id is not string or not modules.re.fullmatch(constants.run_id_pattern, run_id) -%}
    {%- do om.openmirror_fail("run id " ~ tojson(run_id) ~ " must be " ~ constants.run_id_rule ~ " (it names "
        ~ "the run's staged folder); nothing was staged") -%}
  {%- endif -%}
  {{ return(constants.staging_root ~ '/' ~ run_id) }}
{%- endmacro -%}

{%- macro openmirror_manifest_location(landing_zone) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {{ return(landing_zone ~ '/' ~ om.openmirror_constants().manifest_folder) }}
{%- endmacro -%}

{#- A run recorded in a manifest stored in another landing zone would never be published: the
    manifest table must belong to the landing zone the model stages into. Manifests created
    before they recorded it are recognised by their location. -#}
{%- macro openmirror_check_manifest_landing_zone(manifest, settings) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set properties = om.openmirror_table_properties(manifest) -%}
  {%- set recorded = properties.get(om.openmirror_constants().properties.manifest_landing_zone) -%}
  {%- set kept_for = 'the landing zone ' ~ recorded -%}
  {%- if recorded is none -%}
    {%- set location = [] -%}
    {%- for row in run_query('describe table extended ' ~ manifest).rows if row[0] == 'Location' -%}
      {%- do location.append(row[1]) -%}
    {%- endfor -%}
    {%- set found = om.openmirror_plain_location(location[0] if location else '') -%}
    {%- if found == om.openmirror_plain_location(om.openmirror_manifest_location(settings.landing_zone)) -%}
      {%- call statement('openmirror_manifest_landing_zone') -%}
        alter table {{ manifest }} set tblproperties ({{ om.openmirror_string(om.openmirror_constants().properties.manifest_landing_zone) }} = {{ om.openmirror_string(settings.landing_zone) }})
      {%- endcall -%}
      {%- set recorded = settings.landing_zone -%}
    {%- else -%}
      {%- set kept_for = 'the folder ' ~ (location[0] if location else '(no location)') -%}
    {%- endif -%}
  {%- endif -%}
  {%- if recorded != settings.landing_zone -%}
    {%- do om.openmirror_fail("the manifest table " ~ manifest ~ " is kept in " ~ kept_for ~ ", but this "
        ~ "model stages into the landing zone " ~ settings.landing_zone ~ ", whose `dbt-openmirror publish` "
        ~ "would never see the run. Nothing was staged. Publish what waits there first, then drop the "
        ~ "table (its files stay), or give these models a manifest schema of their own (var "
        ~ "openmirror_manifest_schema)") -%}
  {%- endif -%}
{%- endmacro -%}

{#- A location as Spark shows it (`file:/x`) and as written (`/x`, `file:///x/`), alike. -#}
{%- macro openmirror_plain_location(location) -%}
  {%- set plain = location.rstrip('/') -%}
  {%- if plain.startswith('file:') -%}
    {%- set plain = '/' ~ plain[5:].lstrip('/') -%}
  {%- endif -%}
  {{ return(plain) }}
{%- endmacro -%}

{#- Runs of this table folder still `staging`: a run stopped between writing its files and
    advancing the snapshot, or between advancing it and recording that. -#}
{%- macro openmirror_unfinished_runs(manifest, table_folder) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set states = om.openmirror_constants().states -%}
  {%- set rows = run_query(
      "select run_id from " ~ manifest ~ " where table_folder = " ~ om.openmirror_string(table_folder)
      ~ " group by run_id having max(case when state = " ~ om.openmirror_string(states.staging) ~ " then 0 else 1 end) = 0") -%}
  {{ return(rows.columns[0].values() | list) }}
{%- endmacro -%}

{%- macro openmirror_next_staged_sequence(manifest, table_folder) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set rows = run_query(
      "select coalesce(max(staged_sequence), 0) + 1 from " ~ manifest ~ " where table_folder = "
      ~ om.openmirror_string(table_folder)) -%}
  {{ return(rows.rows[0][0] | int) }}
{%- endmacro -%}

{#- One manifest row; `run` holds every column but the state and the time. -#}
{%- macro openmirror_record_run(manifest, run, state) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- call statement('openmirror_record_' ~ state) -%}
    insert into {{ manifest }} select {{ om.openmirror_manifest_values(run, state) | join(', ') }}
  {%- endcall -%}
  {%- do om.openmirror_check_recorded(manifest, [run.run_id], state) -%}
{%- endmacro -%}

{#- Spark's file commit is not safe for two statements appending to one table at once (one job's
    cleanup removes what the other is still writing, and that one may end without error and
    without its rows): with several dbt threads, models append to the manifest together. A row
    that did not arrive fails the model, as if it had stopped there; its next run settles it. -#}
{%- macro openmirror_check_recorded(manifest, run_ids, state, copied_from=none) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- call statement('openmirror_manifest_refresh') -%}refresh table {{ manifest }}{%- endcall -%}
  {%- set quoted = [] -%}
  {%- for run_id in run_ids -%}{%- do quoted.append(om.openmirror_string(run_id)) -%}{%- endfor -%}
  {%- set rows = run_query("select distinct state, run_id from " ~ manifest ~ " where state in ("
      ~ om.openmirror_string(state) ~ ", " ~ om.openmirror_string(copied_from or state) ~ ") and run_id in ("
      ~ quoted | join(', ') ~ ")").rows -%}
  {%- set found, sources = [], [] -%}
  {%- for row in rows -%}
    {%- if row[0] == state -%}{%- do found.append(row[1]) -%}{%- endif -%}
    {%- if row[0] == (copied_from or state) -%}{%- do sources.append(row[1]) -%}{%- endif -%}
  {%- endfor -%}
  {#- A row copied from another (settle_runs) is expected only where that one is there. -#}
  {%- set missing = [] -%}
  {%- for run_id in run_ids if run_id not in found and (copied_from is none or run_id in sources) -%}
    {%- do missing.append(run_id) -%}
  {%- endfor -%}
  {%- if missing -%}
    {%- do exceptions.raise_compiler_error("the manifest row '" ~ state ~ "' of run " ~ missing | join(', ') ~ " was not written: "
        ~ "another model appended to " ~ manifest ~ " at the same time, and Spark's file commit lost this row. "
        ~ "Run the model again (its next run settles this one); with several dbt threads on a Spark without a "
        ~ "transactional commit, set threads: 1 for package mode") -%}
  {%- endif -%}
{%- endmacro -%}

{#- The manifest row's values as SQL, in the table's column order. -#}
{%- macro openmirror_manifest_values(run, state) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set row = {} -%}
  {%- do row.update(run) -%}
  {%- do row.update({'state': state}) -%}
  {%- set values = [] -%}
  {%- for name, data_type in om.openmirror_constants().manifest_columns -%}
    {%- if name == 'recorded_at' -%}
      {%- do values.append('current_timestamp()') -%}
    {%- elif row[name] is none -%}
      {%- do values.append('cast(null as ' ~ data_type ~ ')') -%}
    {%- elif data_type == 'string' -%}
      {%- do values.append(om.openmirror_string(row[name])) -%}
    {%- else -%}
      {%- do values.append('cast(' ~ (row[name] | int) ~ ' as ' ~ data_type ~ ')') -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(values) }}
{%- endmacro -%}

{#- Mark runs as `staged` or `discarded` by copying their `staging` row (or, `from_state`, another). -#}
{%- macro openmirror_settle_runs(manifest, run_ids, state, from_state=none) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set from_state = from_state or om.openmirror_constants().states.staging -%}
  {%- set copied = [] -%}
  {%- for name, _ in om.openmirror_constants().manifest_columns -%}
    {%- do copied.append(om.openmirror_string(state) if name == 'state' else 'current_timestamp()' if name == 'recorded_at' else name) -%}
  {%- endfor -%}
  {%- if run_ids -%}
    {%- set quoted = [] -%}
    {%- for run_id in run_ids -%}{%- do quoted.append(om.openmirror_string(run_id)) -%}{%- endfor -%}
    {%- call statement('openmirror_settle_' ~ state) -%}
      insert into {{ manifest }}
      select {{ copied | join(', ') }}
      from {{ manifest }} where state = {{ om.openmirror_string(from_state) }} and run_id in ({{ quoted | join(', ') }})
    {%- endcall -%}
    {%- do om.openmirror_check_recorded(manifest, run_ids, state, copied_from=from_state) -%}
  {%- endif -%}
{%- endmacro -%}

{#- Runs of this table folder held for their tests (publish='after_tests') and not settled since. -#}
{%- macro openmirror_held_runs(manifest, table_folder) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set states = om.openmirror_constants().states -%}
  {%- set rows = run_query(
      "select run_id from " ~ manifest ~ " where table_folder = " ~ om.openmirror_string(table_folder)
      ~ " group by run_id having max(case when state in (" ~ om.openmirror_string(states.staging) ~ ", "
      ~ om.openmirror_string(states.held) ~ ") then 0 else 1 end) = 0"
      ~ " and max(case when state = " ~ om.openmirror_string(states.held) ~ " then 1 else 0 end) = 1") -%}
  {{ return(rows.columns[0].values() | list) }}
{%- endmacro -%}

{#- `+inserts ~updates -deletes ^upserts` (response.describe_change) of rows (marker, row count).
    The markers are read by item: `markers.update` would be the dict's method. -#}
{%- macro openmirror_change_counts(rows) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set markers = om.openmirror_constants().markers -%}
  {%- set counts = {} -%}
  {%- for row in rows -%}{%- do counts.update({row[0] | int: row[1] | int}) -%}{%- endfor -%}
  {%- set upserts = counts.get(markers['upsert'], 0) -%}
  {{ return('+' ~ counts.get(markers['insert'], 0) ~ ' ~' ~ counts.get(markers['update'], 0) ~ ' -'
      ~ counts.get(markers['delete'], 0) ~ (' ^' ~ upserts if upserts else '')) }}
{%- endmacro -%}

{#- response.empty_output_warning: a run whose empty output deletes every row of the table. -#}
{%- macro openmirror_empty_output_warning(table_folder) -%}
  {{ return("Model '" ~ model.name ~ "': its output is empty, so this run deletes every row of " ~ table_folder
      ~ " (was an input built with --empty, or emptied?); --warn-error stops such a run before it publishes") }}
{%- endmacro -%}

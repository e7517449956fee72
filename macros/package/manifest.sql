{#-
  Package mode's manifest: one row per state a staged run reaches, in a Parquet table stored in
  the landing zone's _scratchPad (the mirror ignores it), so that `dbt-openmirror publish` reads it
  without Spark and appends its own `published` rows beside Spark's. States: `staging` (files
  written, snapshot not yet advanced), `staged` (snapshot advanced: ready to publish), `discarded`
  (the run stopped before its snapshot advanced), `published`. The columns are mirrored in
  package_publish.py.
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
    create table if not exists {{ manifest }} (
      run_id string, model string, table_folder string, key_columns string, base_run_id string,
      load string, reason string, staged_sequence bigint, staged_folder string, rows bigint,
      marker_counts string, state string, recorded_at timestamp
    ) using parquet location {{ om.openmirror_string(om.openmirror_manifest_location(settings.landing_zone)) }}
    tblproperties ('openmirror.landing_zone' = {{ om.openmirror_string(settings.landing_zone) }})
  {%- endcall -%}
  {%- do om.openmirror_check_manifest_landing_zone(manifest, settings) -%}
  {#- `dbt-openmirror publish` adds files to the table's folder behind Spark's back. -#}
  {%- call statement('openmirror_manifest_refresh') -%}refresh table {{ manifest }}{%- endcall -%}
{%- endmacro -%}

{%- macro openmirror_manifest_location(landing_zone) -%}
  {{ return(landing_zone ~ '/_scratchPad/dbt-openmirror/manifest') }}
{%- endmacro -%}

{#- A run recorded in a manifest stored in another landing zone would never be published: the
    manifest table must belong to the landing zone the model stages into. Manifests created
    before they recorded it are recognised by their location. -#}
{%- macro openmirror_check_manifest_landing_zone(manifest, settings) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set properties = {} -%}
  {%- for row in fetch_tbl_properties(manifest).rows -%}{%- do properties.update({row[0]: row[1]}) -%}{%- endfor -%}
  {%- set recorded = properties.get('openmirror.landing_zone') -%}
  {%- set kept_for = 'the landing zone ' ~ recorded -%}
  {%- if recorded is none -%}
    {%- set location = [] -%}
    {%- for row in run_query('describe table extended ' ~ manifest).rows if row[0] == 'Location' -%}
      {%- do location.append(row[1]) -%}
    {%- endfor -%}
    {%- set found = om.openmirror_plain_location(location[0] if location else '') -%}
    {%- if found == om.openmirror_plain_location(om.openmirror_manifest_location(settings.landing_zone)) -%}
      {%- call statement('openmirror_manifest_landing_zone') -%}
        alter table {{ manifest }} set tblproperties ('openmirror.landing_zone' = {{ om.openmirror_string(settings.landing_zone) }})
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
  {%- set rows = run_query(
      "select run_id from " ~ manifest ~ " where table_folder = " ~ om.openmirror_string(table_folder)
      ~ " group by run_id having max(case when state = 'staging' then 0 else 1 end) = 0") -%}
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
    insert into {{ manifest }}
    select {{ om.openmirror_string(run.run_id) }}, {{ om.openmirror_string(run.model) }},
      {{ om.openmirror_string(run.table_folder) }}, {{ om.openmirror_string(run.key_columns) }},
      {{ om.openmirror_string(run.base_run_id) if run.base_run_id else 'cast(null as string)' }},
      {{ om.openmirror_string(run.load) }}, {{ om.openmirror_string(run.reason) }},
      cast({{ run.staged_sequence }} as bigint), {{ om.openmirror_string(run.staged_folder) }},
      cast({{ run.rows }} as bigint), {{ om.openmirror_string(run.marker_counts) }},
      {{ om.openmirror_string(state) }}, current_timestamp()
  {%- endcall -%}
{%- endmacro -%}

{#- Mark runs as `staged` or `discarded` by copying their `staging` row (or, `from_state`, another). -#}
{%- macro openmirror_settle_runs(manifest, run_ids, state, from_state='staging') -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- if run_ids -%}
    {%- set quoted = [] -%}
    {%- for run_id in run_ids -%}{%- do quoted.append(om.openmirror_string(run_id)) -%}{%- endfor -%}
    {%- call statement('openmirror_settle_' ~ state) -%}
      insert into {{ manifest }}
      select run_id, model, table_folder, key_columns, base_run_id, load, reason, staged_sequence,
        staged_folder, rows, marker_counts, {{ om.openmirror_string(state) }}, current_timestamp()
      from {{ manifest }} where state = {{ om.openmirror_string(from_state) }} and run_id in ({{ quoted | join(', ') }})
    {%- endcall -%}
  {%- endif -%}
{%- endmacro -%}

{#- Runs of this table folder held for their tests (publish='after_tests') and not settled since. -#}
{%- macro openmirror_held_runs(manifest, table_folder) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set rows = run_query(
      "select run_id from " ~ manifest ~ " where table_folder = " ~ om.openmirror_string(table_folder)
      ~ " group by run_id having max(case when state in ('staging', 'held') then 0 else 1 end) = 0"
      ~ " and max(case when state = 'held' then 1 else 0 end) = 1") -%}
  {{ return(rows.columns[0].values() | list) }}
{%- endmacro -%}

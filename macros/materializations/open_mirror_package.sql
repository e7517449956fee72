{#-
  open_mirror as a dbt package, on a stock Spark or Databricks connection (dbt Cloud), where the
  dbt-openmirror plugin cannot be installed. Spark builds the model output, diffs it against the
  snapshot {{ this }} and stages the change rows as Parquet in the landing zone's _scratchPad; the
  manifest records the staged run, and `dbt-openmirror publish` (outside dbt) moves the files into
  the table folder with the plugin's publisher. The SQL is the plugin's (macros/sql); the few
  decisions the plugin makes in Python are made here in Jinja (macros/package).

  Order, so that an interrupted run never loses or repeats changes: stage the files, record the
  run as `staging`, advance {{ this }} (it records the run id), record the run as `staged`. A run
  left `staging` is settled by the next one: `staged` if {{ this }} carries its id, else discarded.
-#}
{% materialization open_mirror, adapter='spark', supported_languages=['sql'] %}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}

  {%- do om.openmirror_check_vars() -%}
  {%- do om.openmirror_log_full_refresh_overridden() -%}
  {%- do om.openmirror_check_internal_names(graph.nodes) -%}
  {%- set settings = om.openmirror_package_settings() -%}
  {%- set constants = om.openmirror_constants() -%}
  {%- set keys, states, loads = constants.properties, constants.states, constants.loads -%}
  {%- set full_refresh = should_full_refresh() -%}
  {%- set dry_run = om.openmirror_var_flag('openmirror_dry_run', var('openmirror_dry_run', false)) -%}
  {%- set held = settings.publish == 'after_tests' -%}
  {%- if held and not om.openmirror_audit_hook_configured(graph.nodes) -%}
    {%- do om.openmirror_fail("publish='after_tests' holds the change until the model's tests passed, which "
        ~ "is decided at the end of the invocation: add on-run-end: [\"{{ dbt_openmirror.openmirror_publish_audited(results) }}\"] "
        ~ "to dbt_project.yml. Nothing was staged.") -%}
  {%- endif -%}
  {#- A change held for tests this invocation does not run could never be published: only reported. -#}
  {%- set partial_output = om.openmirror_partial_output(model.depends_on.nodes, graph) -%}
  {%- set unaudited = om.openmirror_unaudited_reason(settings.publish, dry_run or partial_output, model.unique_id,
                                                      graph.nodes, om.openmirror_selection()) -%}
  {%- if unaudited -%}
    {%- do exceptions.warn("Model '" ~ model.name ~ "': " ~ unaudited) -%}
    {%- set dry_run = true -%}
  {%- endif -%}
  {#- Every run here is in full, so a reconcile changes nothing; its value is still checked, as in the plugin. -#}
  {%- do om.openmirror_var_flag('openmirror_reconcile', var('openmirror_reconcile', false)) -%}
  {%- set target_relation = this.incorporate(type='table') -%}
  {#- A run that stages nothing (a dry run, --empty, --sample) builds beside the names a staging run uses. -#}
  {%- set prefix = '__om_check' if (dry_run or partial_output) else '__om' -%}
  {%- set new_relation = make_intermediate_relation(target_relation, suffix=prefix ~ '_new') -%}
  {%- set backup_relation = make_backup_relation(target_relation, 'table') -%}
  {#- Key hashes of the output and of the snapshot, and this run's changed keys (macros/sql/hash_diff.sql). -#}
  {%- set new_hashes = make_intermediate_relation(target_relation, suffix=prefix ~ '_new_hashes') -%}
  {%- set previous_hashes = make_intermediate_relation(target_relation, suffix='__om_hashes') -%}
  {%- set changes_relation = make_intermediate_relation(target_relation, suffix=prefix ~ '_changes') -%}
  {%- set run_id = om.openmirror_package_run_id(model.unique_id) -%}
  {%- set staged_folder = om.openmirror_staged_folder(run_id) -%}
  {%- if partial_output -%}
    {{ return(om.openmirror_package_partial_run(settings, target_relation, new_relation, partial_output)) }}
  {%- endif -%}

  {#- 0. The manifest, and what an interrupted run of this table left. -#}
  {%- set manifest = om.openmirror_manifest_relation(settings) -%}
  {%- if not dry_run -%}
    {%- do om.openmirror_ensure_manifest(manifest, settings) -%}
  {%- endif -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- if existing_relation is not none and existing_relation.type != 'table' -%}
    {{ adapter.drop_relation(existing_relation) }}
    {%- set existing_relation = none -%}
  {%- endif -%}
  {%- set snapshot = om.openmirror_table_properties(existing_relation) -%}
  {%- set snapshot_run = snapshot.get(keys.staged_run_id) -%}
  {%- if not dry_run -%}
    {%- set unfinished = om.openmirror_unfinished_runs(manifest, settings.table_folder) -%}
    {%- do om.openmirror_settle_runs(manifest, unfinished | select('equalto', snapshot_run) | list, states.staged) -%}
    {%- do om.openmirror_settle_runs(manifest, unfinished | reject('equalto', snapshot_run) | list, states.discarded) -%}
    {#- A run held for its tests whose invocation stopped before its end: never published. -#}
    {%- for held_run in om.openmirror_held_runs(manifest, settings.table_folder) -%}
      {%- do exceptions.warn("Model '" ~ model.name ~ "': run " ~ held_run ~ " held a change to " ~ settings.table_folder
          ~ " for its tests and stopped before the end of its invocation; the change was not published and is "
          ~ "discarded, and the snapshot is back where it was") -%}
      {%- if snapshot.get(keys.held) == 'true' and snapshot_run == held_run -%}
        {%- do om.openmirror_restore_audit_base(target_relation) -%}
      {%- endif -%}
      {%- do om.openmirror_settle_runs(manifest, [held_run], states.discarded, from_state=states.held) -%}
    {%- endfor -%}
    {%- set existing_relation = load_cached_relation(this) -%}
    {%- set snapshot = om.openmirror_table_properties(existing_relation) -%}
    {%- set snapshot_run = snapshot.get(keys.staged_run_id) -%}
  {%- endif -%}
  {{ drop_relation_if_exists(load_cached_relation(new_relation)) }}
  {{ drop_relation_if_exists(load_cached_relation(backup_relation)) }}

  {{ run_hooks(pre_hooks) }}

  {#- 1. The model output; its keys are checked before anything is staged. -#}
  {%- set output = om.openmirror_package_build_output(settings, new_relation) -%}
  {%- set columns, key_columns = output.columns, output.key_columns -%}
  {%- set key_list = tojson(key_columns) -%}
  {%- set hashed = om.openmirror_hashed_columns(columns, key_columns) -%}
  {#- The key check reads the narrow, bucketed key hashes, or (var openmirror_key_hashes: false,
      where managed tables cannot be Parquet) the output itself. -#}
  {%- set output_rows = om.openmirror_row_count(new_relation) -%}
  {%- if settings.key_hashes -%}
    {%- do om.openmirror_write_key_hashes(new_relation, output_rows, new_hashes, key_columns, hashed, run_id) -%}
  {%- endif -%}
  {%- set keyed_rows = new_hashes if settings.key_hashes else new_relation -%}

  {#- 2. Changes against the snapshot, or a full load when there is none to trust. The snapshot
      records the landing zone and folder it was staged for, and the names published. -#}
  {%- set previous = om.openmirror_relation_specs(existing_relation) if existing_relation is not none else [] -%}
  {%- set run_plan = om.openmirror_package_run_plan(snapshot if existing_relation is not none else none, previous,
      columns, key_columns, settings, full_refresh) -%}
  {%- set load, reason, plan = run_plan.load, run_plan.reason, run_plan.plan -%}
  {%- set key_columns = run_plan.key_columns -%}
  {%- set key_list = tojson(key_columns) -%}
  {%- for old, new in plan.respelled -%}
    {%- do exceptions.warn("Model '" ~ model.name ~ "': column '" ~ new ~ "' is published as '" ~ old ~ "', the "
        ~ "spelling the mirrored table has (column names are case-insensitive there and a table holds one "
        ~ "spelling); on_schema_change='sync_all_columns' rebuilds the table to take the new spelling") -%}
  {%- endfor -%}
  {%- if load == loads.full and reason not in constants.reasons.values() -%}
    {%- do exceptions.warn("Model '" ~ model.name ~ "': staging " ~ settings.table_folder ~ " in full: " ~ reason) -%}
  {%- endif -%}
  {%- if output_rows == 0 and load == loads.incremental and om.openmirror_row_count(existing_relation) > 0 -%}
    {%- do exceptions.warn(om.openmirror_empty_output_warning(settings.table_folder)) -%}
  {%- endif -%}
  {#- Keys are checked before anything is staged: while joining the key hashes (counted), or on
      every row. -#}
  {%- if load == loads.full -%}
    {%- do om.openmirror_check_keys(keyed_rows, key_columns, false, settings.key_hashes, settings.show_key_values) -%}
    {%- do om.openmirror_warn_key_lookalikes(columns, key_columns, keyed_rows, settings) -%}
    {%- set change_rows = om.openmirror_initial_load_sql(new_relation, plan.columns, [], settings.change_markers,
        settings.row_marker_position, settings.show_key_values) -%}
    {%- set writers, shuffle = om.openmirror_writer_count(output_rows, settings.max_rows_per_file), false -%}
  {%- elif settings.key_hashes and om.openmirror_hashes_match(previous_hashes, snapshot_run, hashed)
      and om.openmirror_snapshot_table_problem(previous_hashes, snapshot) is none -%}
    {%- do adapter.drop_relation(changes_relation) -%}
    {%- do om.openmirror_diff_query(om.openmirror_changed_keys_sql(changes_relation, new_hashes, previous_hashes,
        key_columns, settings.change_markers), true) -%}
    {%- do om.openmirror_check_keys(changes_relation, key_columns, true, false, settings.show_key_values) -%}
    {%- do om.openmirror_warn_key_lookalikes(columns, key_columns, keyed_rows, settings, changes_relation) -%}
    {%- set change_rows = om.openmirror_changed_rows_sql(new_relation, changes_relation, plan.columns, plan.kept, key_columns,
        settings.change_markers, settings.row_marker_position, settings.show_key_values) -%}
    {%- set writers, shuffle = om.openmirror_writer_count(om.openmirror_row_count(changes_relation), settings.max_rows_per_file), true -%}
  {%- else -%}
    {%- set problem = om.openmirror_snapshot_table_problem(existing_relation, snapshot) -%}
    {%- if problem is not none -%}{%- do exceptions.raise_compiler_error(problem) -%}{%- endif -%}
    {%- do om.openmirror_check_keys(keyed_rows, key_columns, false, settings.key_hashes, settings.show_key_values) -%}
    {%- do om.openmirror_warn_key_lookalikes(columns, key_columns, keyed_rows, settings) -%}
    {%- set change_rows = om.openmirror_change_rows_sql(new_relation, existing_relation, plan.columns, plan.kept, plan.added,
        key_columns, settings.change_markers, settings.row_marker_position, settings.show_key_values) -%}
    {%- set writers, shuffle = 1, true -%}
  {%- endif -%}

  {%- if dry_run -%}
    {{ return(om.openmirror_package_dry_run(settings, load, reason, change_rows, [new_relation, new_hashes, changes_relation])) }}
  {%- endif -%}

  {#- 3. Spark stages the change rows where the mirror does not look; the manifest records them. -#}
  {%- for key, value in constants.parquet_write_settings.items() -%}
    {%- call statement('parquet_write_settings') -%}{{ om.openmirror_spark_setting_sql(key, value) }}{%- endcall -%}
  {%- endfor -%}
  {%- call statement('stage_change_rows') -%}
    {{ om.openmirror_write_files_sql(settings.landing_zone ~ '/' ~ staged_folder, change_rows,
        settings.parquet_compression, settings.max_rows_per_file, writers, shuffle) }}
  {%- endcall -%}
  {%- set counts = {} -%}
  {%- for row in run_query(om.openmirror_marker_counts_sql(settings.landing_zone ~ '/' ~ staged_folder,
      load == loads.full, settings.change_markers)).rows -%}
    {%- do counts.update({row[0] | string: row[1] | int}) -%}
  {%- endfor -%}
  {%- set run = {
      'run_id': run_id, 'model': model.name, 'table_folder': settings.table_folder, 'key_columns': key_list,
      'base_run_id': snapshot_run if load == loads.incremental else none, 'load': load, 'reason': reason,
      'staged_sequence': om.openmirror_next_staged_sequence(manifest, settings.table_folder),
      'staged_folder': staged_folder, 'rows': counts.values() | sum, 'marker_counts': tojson(counts),
      'relation': target_relation | string,
  } -%}
  {%- do om.openmirror_record_run(manifest, run, states.staging) -%}

  {#- 4. The output, recording this run, becomes the snapshot; then the run is ready to publish. -#}
  {%- if plan.kept -%}
    {%- call statement('keep_dropped_columns') -%}{{ om.openmirror_keep_columns_sql(new_relation, plan.kept) }}{%- endcall -%}
  {%- endif -%}
  {%- set properties = om.openmirror_snapshot_properties(run_id, settings, key_columns, plan,
      manifest | string if held else none, output_rows) -%}
  {%- call statement('record_snapshot') -%}
    {{ om.openmirror_snapshot_record_sql(new_relation, properties) }}
  {%- endcall -%}
  {%- set aside = om.openmirror_audit_base(target_relation) if held else {'snapshot': backup_relation} -%}
  {%- if existing_relation is not none -%}
    {%- do adapter.drop_relation(aside.snapshot) -%}
    {{ adapter.rename_relation(existing_relation, aside.snapshot) }}
  {%- endif -%}
  {{ adapter.rename_relation(new_relation, target_relation) }}
  {%- if existing_relation is not none and not held -%}
    {{ adapter.drop_relation(backup_relation) }}
  {%- endif -%}
  {%- if held and settings.key_hashes and load_cached_relation(previous_hashes) is not none -%}
    {%- do adapter.drop_relation(aside.hashes) -%}
    {%- do adapter.rename_relation(previous_hashes, aside.hashes) -%}
  {%- endif -%}
  {%- if settings.key_hashes -%}
    {%- do om.openmirror_replace_key_hashes(new_hashes, previous_hashes, changes_relation) -%}
  {%- endif -%}
  {%- do om.openmirror_record_run(manifest, run, states.held if held else states.staged) -%}
  {%- set rows = run.rows ~ (' row' if run.rows == 1 else ' rows') -%}
  {%- set staged_message = 'STAGED ' ~ rows ~ ' (' ~ load ~ ') for ' ~ settings.table_folder -%}
  {%- do store_raw_result(name='main', message=('HELD ' ~ rows ~ ' (' ~ load ~ ') for ' ~ settings.table_folder
      ~ ', staged after its tests pass') if held else staged_message, code='HELD' if held else 'STAGED', rows_affected=run.rows) -%}

  {%- do om.openmirror_finish(target_relation, existing_relation) -%}

  {{ return({'relations': [target_relation]}) }}

{% endmaterialization %}


{#- The model's rows as `new_relation`, its columns and its key columns resolved and checked. -#}
{%- macro openmirror_package_build_output(settings, new_relation) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- call statement('build_model_output') -%}
    {{ create_table_as(False, new_relation, compiled_code) }}
  {%- endcall -%}
  {%- set columns = om.openmirror_relation_specs(new_relation) -%}
  {%- set key_columns = om.openmirror_resolve_keys(settings.unique_key, columns) -%}
  {%- for warning in om.openmirror_check_key_types(columns, key_columns) -%}{%- do exceptions.warn(warning) -%}{%- endfor -%}
  {{ return({'columns': columns, 'key_columns': key_columns}) }}
{%- endmacro -%}

{#- `dbt run --empty` built the output without rows, `--sample` with some (`partial_output` says
    which): its columns and key are checked, nothing is staged, and `{{ this }}` stays as it was
    (created from those rows, recorded as an empty run's, only when there is none). -#}
{%- macro openmirror_package_partial_run(settings, target_relation, new_relation, partial_output) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set constants = om.openmirror_constants() -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {{ drop_relation_if_exists(load_cached_relation(new_relation)) }}
  {{ run_hooks(pre_hooks) }}
  {%- set output = om.openmirror_package_build_output(settings, new_relation) -%}
  {%- set columns, key_columns = output.columns, output.key_columns -%}
  {%- if existing_relation is none -%}
    {%- call statement('record_empty_run') -%}
      {{ om.openmirror_snapshot_record_sql(new_relation, {constants.properties.created_by: constants.empty_run}) }}
    {%- endcall -%}
    {{ adapter.rename_relation(new_relation, target_relation) }}
  {%- else -%}
    {%- set previous = om.openmirror_relation_specs(existing_relation) -%}
    {%- do om.openmirror_schema_plan(previous, columns, settings.on_schema_change,
        om.openmirror_published_names(om.openmirror_table_properties(existing_relation)), key_columns) -%}
    {{ adapter.drop_relation(new_relation) }}
  {%- endif -%}
  {%- do store_raw_result(name='main', message=partial_output ~ ': columns and unique_key checked, nothing staged for '
      ~ settings.table_folder, code='EMPTY' if partial_output == '--empty' else 'SAMPLE', rows_affected=0) -%}
  {%- do om.openmirror_finish(target_relation, existing_relation) -%}
  {{ return({'relations': [target_relation]}) }}
{%- endmacro -%}

{#- A dry run: the rows per marker the run would stage for the table folder, nothing written to
    the landing zone; the relations it built beside the real ones are dropped. -#}
{%- macro openmirror_package_dry_run(settings, load, reason, change_rows, built) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set rows = run_query(om.openmirror_count_markers_sql('(' ~ change_rows ~ ') change_rows',
      load == om.openmirror_constants().loads.full, settings.change_markers)).rows -%}
  {%- for relation in built -%}{%- do adapter.drop_relation(relation) -%}{%- endfor -%}
  {%- do store_raw_result(name='main', message='dry run, nothing written: ' ~ om.openmirror_change_counts(rows)
      ~ ' would be staged (' ~ load ~ (': ' ~ reason if reason else '') ~ ') for ' ~ settings.table_folder,
      code='DRY_RUN', rows_affected=rows | map(attribute=1) | map('int') | sum) -%}
  {{ return({'relations': []}) }}
{%- endmacro -%}

{#-
  open_mirror: publish a model into an open mirroring landing zone.
  Spark builds the model output, diffs it against the snapshot {{ this }} and writes the change
  rows as Parquet into the landing zone's _scratchPad; the adapter then renames them into the
  table folder's next numbers, and the output becomes the new snapshot. Decisions live in the
  adapter's Python helpers; this macro only sequences them.
  Three runs publish differently: `--empty` checks the columns and key and publishes nothing; a
  dry run (var openmirror_dry_run) reports what it would publish and writes nothing to the landing
  zone; publish='after_tests' holds the change until the invocation's end, where the on-run-end
  hook publishes it if the model's tests passed.
-#}
{% materialization open_mirror, adapter='openmirror', supported_languages=['sql'] %}

  {%- set mirror = adapter.openmirror_config(model.name, this.schema, this.identifier, {
      'unique_key': config.get('unique_key'),
      'mirror_schema': config.get('mirror_schema'),
      'mirror_table': config.get('mirror_table'),
      'parquet_compression': config.get('parquet_compression'),
      'change_markers': config.get('change_markers'),
      'row_marker_position': config.get('row_marker_position'),
      'max_rows_per_file': config.get('max_rows_per_file'),
      'lease_ttl_seconds': config.get('lease_ttl_seconds'),
      'lease_wait_seconds': config.get('lease_wait_seconds'),
      'rebuild_wait_seconds': config.get('rebuild_wait_seconds'),
      'publish': config.get('publish'),
      'show_key_values': config.get('show_key_values'),
      'on_schema_change': config.get('on_schema_change') if 'on_schema_change' in model.unrendered_config else none,
  }) -%}
  {%- do adapter.openmirror_check_audit_hook(mirror, graph) -%}
  {%- set full_refresh = should_full_refresh() -%}
  {%- set dry_run = adapter.openmirror_is_dry_run(var('openmirror_dry_run', false)) -%}
  {%- set target_relation = this.incorporate(type='table') -%}
  {#- A run that publishes nothing builds beside the names a publishing run uses (it takes no lease). -#}
  {%- set prefix = '__om_check' if (dry_run or flags.EMPTY) else '__om' -%}
  {%- set new_relation = make_intermediate_relation(target_relation, suffix=prefix ~ '_new') -%}
  {%- set backup_relation = make_backup_relation(target_relation, 'table') -%}
  {#- Key hashes of the output and of the snapshot (see hash_diff.py), and this run's changed keys. -#}
  {%- set new_hashes = make_intermediate_relation(target_relation, suffix=prefix ~ '_new_hashes') -%}
  {%- set previous_hashes = make_intermediate_relation(target_relation, suffix='__om_hashes') -%}
  {%- set changes_relation = make_intermediate_relation(target_relation, suffix=prefix ~ '_changes') -%}

  {#- 0. One run publishes a table at a time; it first finishes what an interrupted run left. -#}
  {%- set run_id = adapter.openmirror_run_id() -%}
  {%- if not (dry_run or flags.EMPTY) -%}
    {%- do adapter.openmirror_acquire_lease(mirror, run_id) -%}
    {%- do adapter.openmirror_recover(mirror, target_relation, new_relation, backup_relation) -%}
  {%- endif -%}

  {%- set existing_relation = load_cached_relation(this) -%}
  {{ drop_relation_if_exists(load_cached_relation(new_relation)) }}
  {{ drop_relation_if_exists(load_cached_relation(backup_relation)) }}
  {%- if existing_relation is not none and existing_relation.type != 'table' -%}
    {{ adapter.drop_relation(existing_relation) }}
    {%- set existing_relation = none -%}
  {%- endif -%}

  {{ run_hooks(pre_hooks) }}

  {#- 1. The model output; its keys are checked before anything reaches the landing zone. -#}
  {%- call statement('build_model_output') -%}
    {{ create_table_as(False, new_relation, compiled_code) }}
  {%- endcall -%}
  {%- set new_columns = adapter.get_columns_in_relation(new_relation) -%}
  {%- set previous_columns = adapter.get_columns_in_relation(existing_relation) if existing_relation is not none else none -%}
  {%- if flags.EMPTY -%}
    {{ return(openmirror_finish_empty_run(mirror, target_relation, existing_relation, new_relation, new_columns, previous_columns)) }}
  {%- endif -%}
  {%- set model_keys = adapter.openmirror_key_columns(mirror, new_columns) -%}

  {#- 2. A change file against the snapshot, or a full load when they cannot be trusted. -#}
  {%- set state = adapter.openmirror_table_state(mirror) -%}
  {%- set snapshot = adapter.openmirror_snapshot_record(existing_relation) -%}
  {%- set plan = adapter.openmirror_plan_run(mirror, target_relation, model_keys, state, snapshot, full_refresh, previous_columns, new_columns) -%}
  {%- set key_columns = plan.key_columns -%}
  {%- do adapter.openmirror_drop_ignored_columns(new_relation, plan) -%}
  {%- set output_rows = adapter.openmirror_key_hashes(mirror, plan, new_relation, new_hashes, key_columns, run_id) -%}
  {%- set relations = {
      'new': new_relation, 'previous': existing_relation, 'target': target_relation,
      'backup': backup_relation, 'new_hashes': new_hashes, 'previous_hashes': previous_hashes,
      'changes': changes_relation,
  } -%}
  {%- set change_rows = adapter.openmirror_change_sql(mirror, plan, key_columns, snapshot, relations, output_rows) -%}
  {%- if dry_run -%}
    {%- do store_result('main', response=adapter.openmirror_dry_run(mirror, plan, state, change_rows)) -%}
    {%- for relation in (new_relation, new_hashes, changes_relation) -%}{%- do adapter.drop_relation(relation) -%}{%- endfor -%}
    {{ return({'relations': []}) }}
  {%- endif -%}

  {#- 3. Spark stages the change rows as Parquet where the mirror does not look (the landing
       zone's _scratchPad, or a local folder whose files are then uploaded there). -#}
  {%- set staging = adapter.openmirror_staging(run_id) -%}
  {%- call statement('parquet_timestamps') -%}
    set spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS
  {%- endcall -%}
  {%- call statement('stage_change_rows') -%}
    {{ adapter.openmirror_write_sql(mirror, staging.uri, change_rows) }}
  {%- endcall -%}
  {%- set counts = adapter.openmirror_marker_counts(mirror, plan, staging.uri) -%}
  {%- do adapter.openmirror_land_staged_files(staging) -%}
  {%- set pending = adapter.openmirror_prepare(mirror, plan, staging, state, counts, run_id, target_relation) -%}

  {#- 4. The output records the number it will match, then is published and becomes the
       snapshot (or, held for its tests, becomes the snapshot and waits for the hook). -#}
  {%- set keep_columns = adapter.openmirror_keep_columns_sql(new_relation, plan) -%}
  {%- if keep_columns -%}
    {%- call statement('keep_dropped_columns') -%}{{ keep_columns }}{%- endcall -%}
  {%- endif -%}
  {%- call statement('record_snapshot') -%}
    {{ adapter.openmirror_snapshot_record_sql(new_relation, mirror, plan, pending) }}
  {%- endcall -%}
  {%- if mirror.publish == 'after_tests' -%}
    {%- set published = adapter.openmirror_hold_for_audit(mirror, pending, relations, model.unique_id) -%}
  {%- else -%}
    {%- set published = adapter.openmirror_publish(mirror, pending, relations) -%}
    {%- do adapter.openmirror_release_lease(mirror) -%}
  {%- endif -%}
  {%- do store_result('main', response=adapter.openmirror_response(mirror, plan, counts, published.names)) -%}

  {%- do openmirror_finish(target_relation, existing_relation) -%}

  {{ return({'relations': [target_relation]}) }}

{% endmaterialization %}


{#- `dbt run --empty`: the output was built without rows and checked; nothing is published, and
    `{{ this }}` stays what was published (created empty, unrecorded, only when there is none, so
    that downstream models can still be built). -#}
{%- macro openmirror_finish_empty_run(mirror, target_relation, existing_relation, new_relation, new_columns, previous_columns) -%}
  {%- set response = adapter.openmirror_check_empty_run(mirror, new_columns, previous_columns) -%}
  {%- if existing_relation is none -%}
    {{ adapter.rename_relation(new_relation, target_relation) }}
  {%- else -%}
    {{ adapter.drop_relation(new_relation) }}
  {%- endif -%}
  {%- do store_result('main', response=response) -%}
  {%- do openmirror_finish(target_relation, existing_relation) -%}
  {{ return({'relations': [target_relation]}) }}
{%- endmacro -%}

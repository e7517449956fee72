{#-
  open_mirror: publish a model into an open mirroring landing zone.
  Spark builds the model output; the adapter's MirrorRun (run/mirror_run.py) diffs it against the
  snapshot {{ this }}, stages the change rows as Parquet in the landing zone's _scratchPad, renames
  them into the table folder's next numbers and makes the output the new snapshot. This macro
  compiles the model, runs its hooks, keeps dbt's relation cache and returns the relations.
  A full-diff run whose model reads exactly what its snapshot was built from builds nothing and
  publishes nothing (spark/model_inputs.py). Three runs publish differently: `--empty`, and
  `--sample` of an input with an `event_time`, build part of the rows, which are checked and not
  published; a dry run (var openmirror_dry_run) reports what it would publish and writes nothing to the landing
  zone; publish='after_tests' holds the change until the invocation's end, where the on-run-end
  hook publishes it if the model's tests passed.
-#}
{% materialization open_mirror, adapter='openmirror', supported_languages=['sql'] %}

  {#- 0. The run takes its table's lease and finishes what an interrupted run left. Before it:
      vars named like ours, and other models named like this one's own tables (macros/package/settings.sql). -#}
  {%- do openmirror_check_vars() -%}
  {%- do openmirror_log_full_refresh_overridden() -%}
  {%- do openmirror_check_internal_names(graph.nodes) -%}
  {#- The configs are read and checked in Python (run/config.py), from dbt's `config` itself. -#}
  {%- set run = adapter.openmirror_start(
      model.name, model.unique_id, this, config, model.unrendered_config,
      should_full_refresh(), var('openmirror_dry_run', false),
      openmirror_partial_output(model.depends_on.nodes, graph), graph, openmirror_selection()) -%}
  {%- set new_relation = run.relations.new_output -%}

  {%- set existing_relation = load_cached_relation(this) -%}
  {{ drop_relation_if_exists(load_cached_relation(new_relation)) }}
  {{ drop_relation_if_exists(load_cached_relation(run.relations.backup)) }}
  {%- if existing_relation is not none and not run.is_snapshot(existing_relation) -%}
    {{ adapter.drop_relation(existing_relation) }}
    {%- set existing_relation = none -%}
  {%- endif -%}

  {{ run_hooks(pre_hooks) }}

  {#- 1. The model output, unless the model reads what its snapshot was built from. -#}
  {%- if not adapter.openmirror_inputs_unchanged(
      run, existing_relation, compiled_code, model, var('openmirror_reconcile', false)) -%}
    {%- call statement('build_model_output') -%}
      {%- if run.builds_output_view(compiled_code) -%}
        {{ create_view_as(new_relation, compiled_code) }}
      {%- else -%}
        {{ create_table_as(False, new_relation, compiled_code) }}
      {%- endif -%}
    {%- endcall -%}
  {%- endif -%}

  {#- 2. Published (or held for its tests), checked (--empty) or reported (dry run). -#}
  {%- do store_result('main', response=adapter.openmirror_publish(run, existing_relation)) -%}
  {%- if run.dry_run -%}
    {{ return({'relations': []}) }}
  {%- endif -%}

  {#- A table, or the view of a snapshot a candidate run overlaid (planning/overlay.py). -#}
  {%- set target_relation = run.snapshot_relation() -%}
  {%- do openmirror_finish(target_relation, existing_relation) -%}

  {{ return({'relations': [target_relation]}) }}

{% endmaterialization %}

{#-
  is_incremental(), as dbt-core defines it, and also true in an `open_mirror` model on the plugin
  whose snapshot {{ this }} is a complete earlier output (planning/candidates.py): the model then
  selects only candidate rows, which its run merges into the snapshot. The plugin's macros take
  precedence over dbt-core's; package mode (a stock Spark connection) keeps dbt-core's answer.
-#}
{% macro is_incremental() %}
  {%- if not execute -%}
    {{ return(false) }}
  {%- endif -%}
  {%- if model.resource_type == 'unit_test' -%}
    {#- A unit test must override is_incremental(); dbt checks that when parsing only for models
        that call its own macro, so this one says it as dbt does (the test has no `this` to ask). -#}
    {%- set tested = model.tested_node_unique_id.split('.')[2] -%}
    {{ exceptions.raise_compiler_error("Boolean override for 'is_incremental' must be provided for unit test '"
        ~ model.name ~ "' in model '" ~ tested ~ "': add `overrides: {macros: {is_incremental: true}}` "
        ~ "(with a `this` input) or `false` to the unit test.") }}
  {%- endif -%}
  {%- if model.config.materialized == 'open_mirror' and adapter.type() == 'openmirror' -%}
    {{ return(adapter.openmirror_is_incremental(
        model.name, model.unique_id, this, config, model.unrendered_config,
        should_full_refresh(), var('openmirror_reconcile', false))) }}
  {%- endif -%}
  {#- dbt-core's own definition (global_project/macros/materializations/models/incremental). -#}
  {%- set relation = adapter.get_relation(this.database, this.schema, this.table) -%}
  {{ return(relation is not none
            and relation.type == 'table'
            and model.config.materialized == 'incremental'
            and not should_full_refresh()) }}
{% endmacro %}

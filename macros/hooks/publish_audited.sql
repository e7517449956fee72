{#-
  Write-audit-publish (model config publish='after_tests'): the change a model staged is
  published at the end of the invocation, and only if the model's tests passed. A project that
  uses it runs this as a hook:
    on-run-end: ["{{ openmirror_publish_audited(results) }}"]
-#}
{%- macro openmirror_publish_audited(results) -%}
  {#- The plugin's macros are dbt's own (no namespace); the package's are dbt_openmirror's. -#}
  {%- set namespace = 'dbt_openmirror' if dbt_openmirror is defined else none -%}
  {{ return(adapter.dispatch('openmirror_publish_audited', namespace)(results)) }}
{%- endmacro -%}

{#- The plugin holds the changes and their leases in the adapter. -#}
{%- macro openmirror__openmirror_publish_audited(results) -%}
  {%- for line in adapter.openmirror_finish_audits(results, graph) -%}
    {%- do log(line, info=True) -%}
  {%- endfor -%}
{%- endmacro -%}

{#-
  Write-audit-publish (model config publish='after_tests'): the change a model staged is
  published at the end of the invocation, and only if the model's tests passed. A project that
  uses it runs this as a hook (in package mode the macro is the package's:
  `dbt_openmirror.openmirror_publish_audited(results)`):
    on-run-end: ["{{ openmirror_publish_audited(results) }}"]
  The plugin holds the changes and their leases in the adapter; package mode holds them in the
  manifest (macros/package/audit.sql).
-#}
{%- macro openmirror_publish_audited(results) -%}
  {%- if adapter.type() == 'openmirror' -%}
    {%- for line in adapter.openmirror_finish_audits(results, graph) -%}
      {%- do log(line, info=True) -%}
    {%- endfor -%}
  {%- else -%}
    {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
    {%- do om.openmirror_package_finish_audits(results) -%}
  {%- endif -%}
{%- endmacro -%}

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
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- if adapter.type() == 'openmirror' -%}
    {%- set finished = adapter.openmirror_finish_audits(results, graph) -%}
    {%- for line in finished.lines -%}
      {%- do log(line, info=True) -%}
    {%- endfor -%}
    {#- The hook's statement fails with what failed, so dbt counts and records the hook's error
        (a query would not run: dbt-spark's session cursor runs queries only when fetched; a
        declaration evaluates its default at once, on the driver). -#}
    {%- if finished.failures -%}
      declare or replace variable openmirror_hook_failed string default raise_error({{ om.openmirror_string(finished.failures | join('; ')) }})
    {%- endif -%}
  {%- else -%}
    {%- do om.openmirror_package_finish_audits(results) -%}
  {%- endif -%}
{%- endmacro -%}

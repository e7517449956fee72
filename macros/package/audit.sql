{#- Package mode's write-audit-publish: see macros/hooks/publish_audited.sql. -#}
{%- macro openmirror_package_finish_audits(results) -%}
{%- endmacro -%}

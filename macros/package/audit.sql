{#- Package mode's write-audit-publish: see macros/hooks/publish_audited.sql. -#}
{%- macro openmirror_package_finish_audits(results) -%}
  {%- do exceptions.raise_compiler_error("publish='after_tests' is not available in package mode yet") -%}
{%- endmacro -%}

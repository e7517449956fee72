{#- What both open_mirror materializations do once the output is {{ this }}: post-hooks, grants
    (the table is new each run, so grants are applied afresh) and persisted docs. -#}
{%- macro openmirror_finish(target_relation, existing_relation) -%}
  {{ run_hooks(post_hooks) }}
  {%- set should_revoke = should_revoke(existing_relation, full_refresh_mode=True) -%}
  {%- do apply_grants(target_relation, config.get('grants'), should_revoke) -%}
  {%- do persist_docs(target_relation, model) -%}
{%- endmacro -%}

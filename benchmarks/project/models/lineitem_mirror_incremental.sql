-- (e) An incremental open_mirror model (--model incremental): the same candidates as (d), flagged
-- deletes published as deletes.
{{ config(materialized='open_mirror', unique_key=['l_orderkey', 'l_linenumber'], mirror_schema='bench',
          delete_flag='deleted') }}
select * from bench.lineitem_src
{% if is_incremental() %} where updated_at > (select max(updated_at) from {{ this }}) {% endif %}

-- (c) open_mirror.
{{ config(materialized='open_mirror', unique_key=['l_orderkey', 'l_linenumber'], mirror_schema='bench') }}
select * from {{ source('bench', 'lineitem_src') }}

-- (c) open_mirror.
{{ config(materialized='open_mirror', unique_key=['l_orderkey', 'l_linenumber'], mirror_schema='bench') }}
{{ var('model_sql') }}

-- (d) open_mirror in package mode (stages; the benchmark then publishes).
{{ config(materialized='open_mirror', unique_key=['l_orderkey', 'l_linenumber'], mirror_schema='bench') }}
{{ var('model_sql') }}

-- (d) The floor for incremental models (--model incremental): dbt-spark's `incremental`, appending
-- the rows changed since the last run (Parquet has no MERGE; Delta would merge by key).
{{ config(materialized='incremental', incremental_strategy='append', file_format='parquet') }}
select * from bench.lineitem_src
{% if is_incremental() %} where updated_at > (select max(updated_at) from {{ this }}) {% endif %}

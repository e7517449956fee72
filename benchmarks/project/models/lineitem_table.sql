-- (a) The floor: dbt-spark's plain `table` materialization of the model.
{{ config(materialized='table', file_format='parquet') }}
{{ var('model_sql') }}

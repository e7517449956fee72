{{ config(materialized='open_mirror', unique_key='payment_id', change_markers='upsert', parquet_compression='zstd') }}

select payment_id, order_id, method, amount
from {{ ref('stg_payments') }}

{{ config(materialized='view') }}

select
  id as order_id,
  customer_id,
  ordered_at,
  status
from {{ ref('raw_orders') }}

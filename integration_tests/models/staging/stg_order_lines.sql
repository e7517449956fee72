{{ config(materialized='view') }}

select
  order_id,
  line_number,
  sku,
  quantity,
  unit_price,
  quantity * unit_price as line_total
from {{ ref('raw_order_lines') }}

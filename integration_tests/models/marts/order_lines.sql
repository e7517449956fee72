{#- A composite key, published into its own schema folder: sales.schema/order_lines. -#}
{{ config(materialized='open_mirror', unique_key=['order_id', 'line_number'], mirror_schema='sales') }}

select order_id, line_number, sku, quantity, unit_price, line_total
from {{ ref('stg_order_lines') }}

{{ config(materialized='open_mirror', unique_key='order_id') }}

with lines as (
  select order_id, sum(line_total) as order_total, collect_list(sku) as skus
  from {{ ref('stg_order_lines') }}
  group by order_id
),

paid as (
  select order_id, sum(amount) as amount_paid
  from {{ ref('stg_payments') }}
  group by order_id
)

select
  o.order_id,
  o.customer_id,
  o.ordered_at,
  cast(o.ordered_at as date) as order_date,
  o.status,
  coalesce(l.order_total, 0) as order_total,
  coalesce(p.amount_paid, 0) as amount_paid,
  coalesce(p.amount_paid, 0) >= coalesce(l.order_total, 0) as is_paid,
  array_sort(l.skus) as skus
from {{ ref('stg_orders') }} o
left join lines l on l.order_id = o.order_id
left join paid p on p.order_id = o.order_id

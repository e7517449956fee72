{{ config(materialized='open_mirror', unique_key='customer_id') }}

{%- set has_tier = 'loyalty_tier' in (adapter.get_columns_in_relation(ref('stg_customers')) | map(attribute='column') | list) -%}

with orders as (
  select customer_id, count(*) as order_count, min(ordered_at) as first_order_at
  from {{ ref('stg_orders') }}
  group by customer_id
)

select
  c.customer_id,
  concat(c.first_name, ' ', c.last_name) as full_name,
  c.email,
  c.signed_up_at,
  coalesce(o.order_count, 0) as order_count,
  o.first_order_at
  {%- if has_tier %},
  c.loyalty_tier
  {%- endif %}
from {{ ref('stg_customers') }} c
left join orders o on o.customer_id = c.customer_id

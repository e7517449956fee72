{{ config(materialized='view') }}

{#- Loyalty tiers arrive in the source on day 3 of the scenario: a column added mid-life. -#}
{%- set source_columns = adapter.get_columns_in_relation(ref('raw_customers')) | map(attribute='column') | list -%}

select
  id as customer_id,
  first_name,
  last_name,
  email,
  signed_up_at
  {%- if 'loyalty_tier' in source_columns %},
  loyalty_tier
  {%- endif %}
from {{ ref('raw_customers') }}

select
  id as customer_id,
  first_name,
  last_name,
  email,
  signed_up_at
from {{ ref('raw_customers') }}

-- (b) A change file diffed by hand: EXCEPT both ways over whole rows of the previous snapshot.
{{ config(materialized='naive_diff', unique_key=['l_orderkey', 'l_linenumber']) }}
{{ var('model_sql') }}

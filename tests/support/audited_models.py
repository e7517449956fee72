"""Two models that publish only after their tests pass (`publish='after_tests'`), and their tests:
shared by the plugin's and the package's write-audit-publish tests."""

AUDITED = """
{{ config(materialized='open_mirror', unique_key='id', publish='after_tests') }}
select * from {{ target.schema }}.src_{{ this.identifier }}
"""
SCHEMA_HEADER = """
version: 2
models:
"""
ORDERS_TESTS = """
  - name: orders
    columns:
      - name: amount
        tests: [not_null]
"""
AUDITED_TESTS = (
    SCHEMA_HEADER
    + ORDERS_TESTS
    + """
  - name: payments
    columns:
      - name: amount
        tests: [not_null]
"""
)

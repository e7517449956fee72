"""Two models that publish only after their tests pass (`publish='after_tests'`), and their tests:
shared by the plugin's and the package's write-audit-publish tests."""

AUDITED = """
{{ config(materialized='open_mirror', unique_key='id', publish='after_tests') }}
select * from {{ target.schema }}.src_{{ this.identifier }}
"""
AUDITED_TESTS = """
version: 2
models:
  - name: orders
    columns:
      - name: amount
        tests: [not_null]
  - name: payments
    columns:
      - name: amount
        tests: [not_null]
"""

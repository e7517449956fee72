"""The `dbt-openmirror` command and what it runs outside dbt: validator, status, webhook receiver, local mirror."""

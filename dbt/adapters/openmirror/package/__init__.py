"""Package mode: publishing what a stock dbt-spark project staged."""

"""Why some of dbt's adapter suites, or some of their cases, do not run under `type: openmirror`
on a Spark session with Parquet; shared by the suite modules."""

MERGE_NEEDS_DELTA = (
    "dbt-spark's MERGE (snapshots; incremental with unique_key, predicates or "
    "merge_exclude_columns; clone) needs file_format delta or hudi, whose jars come from Maven, "
    "which cannot be reached here"
)
DROP_COLUMN_NEEDS_DELTA = "dbt-spark drops columns only from Delta tables"

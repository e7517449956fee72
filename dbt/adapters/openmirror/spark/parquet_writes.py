"""How Spark must write the Parquet files the mirror reads: timestamps as microseconds (Spark
writes INT96 unless told, and milliseconds would drop digits) and dates in the proleptic Gregorian
calendar (LEGACY rebasing shifts values before 1582 for every reader but Spark).

The adapter sets these before it writes files (`openmirror_spark_setting_sql`). A profile that
sets them otherwise is refused: dbt-spark applies a session profile's parameters again before
every statement, over the adapter's. Whoever else sets them (a hook, a cluster's defaults), the
staged files' footers are checked before anything is published (`written_problems`)."""

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

PARQUET_WRITE_SETTINGS = {
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
}
#: The footer key Spark writes into a file whose dates and timestamps it rebased to the legacy
#: hybrid calendar. (`org.apache.spark.legacyINT96` is written under int96RebaseModeInWrite=LEGACY
#: whether or not the file has an INT96 column; one that has is refused by its unit, nanoseconds.)
LEGACY_CALENDAR_KEY = b"org.apache.spark.legacyDateTime"


def conflicting_settings(parameters: Mapping[str, Any]) -> list[str]:
    """The profile's `server_side_parameters` that would make Spark write other files, each with
    the value the adapter needs."""
    return [
        f"{key}={parameters[key]} (the mirror's files need {needed})"
        for key, needed in PARQUET_WRITE_SETTINGS.items()
        if key in parameters and str(parameters[key]).strip().upper() != needed
    ]


def written_problems(schema: pa.Schema, metadata: pq.FileMetaData) -> list[str]:
    """How a file Spark wrote differs from what the adapter asked for, naming the setting."""
    problems = [
        f"column {field.name} holds timestamps in {field.type.unit}, not microseconds "
        "(spark.sql.parquet.outputTimestampType was changed after the adapter set it: by a hook, or the "
        "cluster's defaults)"
        for field in schema
        if pa.types.is_timestamp(field.type) and field.type.unit != "us"
    ]
    if LEGACY_CALENDAR_KEY in (metadata.metadata or {}):
        problems.append(
            "its dates and timestamps were rebased to Spark's legacy calendar, which shifts values before "
            "1582 for every other reader (spark.sql.parquet.datetimeRebaseModeInWrite=LEGACY: set by a hook, "
            "or the cluster's defaults)"
        )
    return problems

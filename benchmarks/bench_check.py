"""The replay oracle at benchmark scale: after a run, the landing zone replayed in file order by the
local mirror (`dbt-openmirror replay`: delta-rs, as the service would apply the files) must equal
the model's full output. The comparison runs in Spark, so nothing large reaches the driver.

The local mirror keeps what it applied in each Delta table's log, so each check applies only the
files published since the last one, and moves them to `_ProcessedFiles/` as the service does.
"""

from pathlib import Path

from deltalake import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from dbt.adapters.openmirror.storage import LocalStorage
from dbt.adapters.openmirror.tools.local_mirror.replay import LocalMirror


class ReplayCheck:
    """The mirror of one landing zone (replayed into `target`), compared with model outputs."""

    def __init__(self, spark: SparkSession, landing_zone: Path, target: Path) -> None:
        self.spark = spark
        self.target = target
        self.mirror = LocalMirror(LocalStorage(landing_zone), target)

    def differing_rows(self, schema: str, table: str, expected_sql: str) -> int:
        """Replay what is new, then count the rows the mirrored table and `expected_sql` do not
        share (each row counted as often as its copies differ): 0 when the mirror is exact."""
        self.mirror.replay()
        expected = self.spark.sql(expected_sql)
        mirrored = self._delta_rows(self.target / schema / table, expected)
        return _multiset_difference(expected, mirrored)

    def _delta_rows(self, path: Path, like: DataFrame) -> DataFrame:
        table = DeltaTable(str(path))
        protocol = table.protocol()
        features = set(protocol.reader_features or [])
        mapped = table.metadata().configuration.get("delta.columnMapping.mode", "none") != "none"
        if mapped or "deletionVectors" in features:
            # Spark reads the files' physical columns: exact only without mapping or deletion vectors.
            raise RuntimeError(f"{path}: column mapping or deletion vectors; the check reads plain Parquet only")
        files = table.file_uris()
        if not files:
            return like.limit(0)
        rows = self.spark.read.parquet(*files)
        return rows.select([F.col(name).cast(kind).alias(name) for name, kind in like.dtypes])


def _multiset_difference(expected: DataFrame, mirrored: DataFrame) -> int:
    """Rows of one side not matched by a copy on the other, in one shuffle: each distinct row's
    count on the left minus its count on the right must be 0."""
    side = "__bench_side"
    both = expected.withColumn(side, F.lit(1)).unionByName(mirrored.withColumn(side, F.lit(-1)))
    balance = both.groupBy(*expected.columns).agg(F.sum(side).alias(side))
    return balance.select(F.sum(F.abs(side))).first()[0] or 0

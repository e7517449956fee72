"""Where an `open_mirror` run's time goes past the `table` run: the key-hash diff's steps run one
at a time on the benchmark's data, with the SQL the materialization renders (macros/sql/).

    .venv/bin/python benchmarks/diff_steps.py --rows 10000000 --churn 0.01 --repeat 3

A snapshot (output and key hashes) is built from the source, one change round is applied to the
source, then each repetition times in order: the model output (what the `table` run writes), reading
it and computing both row hashes (a `noop` sink: nothing written), the same plus the shuffle into
buckets (`noop` again), the key hashes table (the statement the materialization runs: shuffle,
sort and write too), the changed-keys join with the key check, and reading back the changed
rows into the change files. Between the second and fourth line, differences are what each part
adds. Medians (and the range) are printed as a markdown table. `--cores 1` runs the same on one
core, to see whether the ratio to the output's write depends on the cores.
"""

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
from bench_data import change_round_statements, source_sql  # noqa: E402
from run import generate, spark_settings, start_spark  # noqa: E402

from dbt.adapters.openmirror.planning import hash_diff  # noqa: E402
from dbt.adapters.openmirror.planning.schema_plan import ColumnSpec, SchemaPlan  # noqa: E402
from tests.support.sql_macros import sql_macros  # noqa: E402

KEYS = ["l_orderkey", "l_linenumber"]


class Steps:
    def __init__(self, spark, rows: int) -> None:
        self.spark = spark
        self.macros = sql_macros()
        fields = spark.table("steps.source").schema.fields
        self.columns = [ColumnSpec(f.name, f.dataType.simpleString()) for f in fields]
        self.hashed = hash_diff.hashed_columns(SchemaPlan(self.columns), KEYS)
        self.buckets = hash_diff.bucket_count(rows)

    def sql(self, statement: str) -> None:
        self.spark.sql(statement).collect()

    def noop(self, statement: str) -> None:
        """Runs the query to the end without writing anything."""
        self.spark.sql(statement).write.format("noop").mode("overwrite").save()

    def output(self, target: str) -> None:
        self.sql(f"create table {target} using parquet as select * from steps.source")

    def key_hashes_sql(self, target: str, relation: str, buckets: int) -> str:
        properties = {hash_diff.HASHES_RUN_ID: "diff_steps"}
        return self.macros.openmirror_key_hashes_sql(target, relation, KEYS, self.hashed, properties, buckets)

    def hash_without_writing(self, relation: str, shuffled: bool) -> None:
        """The key hashes table's select run to the end with nothing written: it reads and
        hashes, and `shuffled` also shuffles the rows into the buckets."""
        select = self.key_hashes_sql("unused", relation, self.buckets).split(" as\n", 1)[1]
        self.noop(select if shuffled else re.sub(r"/\*\+ REPARTITION\(.*?\) \*/ ", "", select))

    def key_hashes(self, target: str, relation: str) -> None:
        self.sql(self.key_hashes_sql(target, relation, self.buckets))

    def changed_keys(self, target: str, new_hashes: str, previous_hashes: str) -> None:
        self.sql(self.macros.openmirror_sorted_bucket_scans_sql(True))
        try:
            self.sql(
                self.macros.openmirror_changed_keys_sql(
                    target, new_hashes, previous_hashes, KEYS, "insert_update_delete"
                )
            )
        finally:
            self.sql(self.macros.openmirror_sorted_bucket_scans_sql(False))

    def read_back_and_write(self, uri: str, changes: str, relation: str) -> None:
        select = self.macros.openmirror_changed_rows_sql(
            relation, changes, self.columns, [], KEYS, "insert_update_delete", "last"
        )
        writers = hash_diff.writer_count(self.spark.table(changes).count(), None)
        self.sql(self.macros.openmirror_write_files_sql(uri, select, "snappy", None, writers, True))


def timed(action, *args) -> float:
    start = time.perf_counter()
    action(*args)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--churn", type=float, default=0.01)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/openmirror-bench-steps"))
    parser.add_argument("--data", type=Path, default=Path("/tmp/openmirror-bench-data"))
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--cores", type=int, default=2, help="Spark's local[n]: how the shares change with cores")
    args = parser.parse_args()

    lineitem = generate(args.rows, ["lineitem"], args.data)["lineitem"]
    args.work.mkdir(parents=True, exist_ok=True)
    settings = spark_settings(args.work, args.driver_memory)
    spark = start_spark({**settings, "spark.master": f"local[{args.cores}]"})
    spark.sql("drop database if exists steps cascade").collect()
    spark.sql("create database steps").collect()
    spark.sql(source_sql("steps.source", lineitem.as_uri())).collect()
    rows = spark.table("steps.source").count()
    steps = Steps(spark, rows)
    steps.output("steps.snapshot")
    steps.key_hashes("steps.snapshot_hashes", "steps.snapshot")
    for statement in change_round_statements("steps.source", 1, args.churn):
        steps.sql(statement)

    change_files = (args.work / "change_files").as_uri()
    timed_steps = [
        ("model output (the `table` run's write)", steps.output, "steps.output"),
        ("read the output and hash it (noop sink)", steps.hash_without_writing, "steps.output", False),
        ("the same, shuffled into buckets (noop sink)", steps.hash_without_writing, "steps.output", True),
        ("key hashes table (shuffle, sort, write)", steps.key_hashes, "steps.hashes", "steps.output"),
        ("changed keys + key check", steps.changed_keys, "steps.changes", "steps.hashes", "steps.snapshot_hashes"),
        (
            "read back the changed rows, write the change files",
            steps.read_back_and_write,
            change_files,
            "steps.changes",
            "steps.output",
        ),
    ]
    times = {label: [] for label, *_ in timed_steps}
    for _ in range(args.repeat):
        for table in ("output", "hashes", "changes"):
            steps.sql(f"drop table if exists steps.{table}")
        for label, action, *arguments in timed_steps:
            times[label].append(timed(action, *arguments))
    changed = spark.table("steps.changes").count()

    print(
        f"\n{rows:,} rows, {args.cores} cores, {steps.buckets} buckets, churn {args.churn:g} "
        f"({changed:,} changed keys), medians of {args.repeat}\n"
    )
    print("| step | median s | range s |\n|---|---|---|")
    for label, values in times.items():
        print(f"| {label} | {statistics.median(values):.1f} | {min(values):.1f}–{max(values):.1f} |")


if __name__ == "__main__":
    main()

"""Publishing a wide table at scale: a plain `table` run, a hand-written diff and `open_mirror`
(and, with `--variants`, `open_mirror` in package mode), side by side in one process on the same
data.

    .venv/bin/python benchmarks/run.py --rows 10000000 --repeat 3
    .venv/bin/python benchmarks/run.py --scaling 1000000,3000000,10000000 --repeat 1

Data: TPC-H `lineitem` (and `orders` for `--model join`) from `tpchgen-cli` (scale factor chosen
for the row count), loaded as source tables; the model is `bench_data.MODELS[--model]`. Then change
rounds at each churn (a third each deleted, updated, inserted; picked by hash, so every run of the
benchmark changes the same rows). Every round runs the models one after the other on the same
source. After every run of an `open_mirror` variant the landing zone is replayed into Delta tables
and compared with the model's full output (`bench_check.py`; `--no-check` skips it, it is not
timed). With `--model incremental` a last round deletes rows from the source without a flag, which
a candidate run cannot see, and a reconcile run (`openmirror_reconcile`) must publish them.
Results go to `--out` as JSON, a markdown table and a PNG.
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from dbt.cli.main import dbtRunner

from dbt.adapters.openmirror.package.publish import PackagePublisher
from dbt.adapters.openmirror.storage import LocalStorage

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_check import ReplayCheck  # noqa: E402
from bench_data import FLAGGED, MODELS, change_round_statements, source_sql, unflagged_delete_statements  # noqa: E402
from bench_measure import Sampler, file_snapshot, written_since  # noqa: E402
from bench_report import summarize, write_reports  # noqa: E402

HERE = Path(__file__).resolve().parent
PROJECT = HERE / "project"
SF1_LINEITEM_ROWS = 6_001_215
PACKAGE_PROJECT = HERE / "package_project"
#: variant -> (dbt project, model). `package` runs the same model through the package on a stock
#: `type: spark` connection, then publishes what it staged (both timed).
VARIANTS = {
    "table": (PROJECT, "lineitem_table"),
    "naive": (PROJECT, "lineitem_naive"),
    "mirror": (PROJECT, "lineitem_mirror"),
    "package": (PACKAGE_PROJECT, "lineitem_package"),
    # With --model incremental only.
    "incremental": (PROJECT, "lineitem_incremental"),
    "mirror_incremental": (PROJECT, "lineitem_mirror_incremental"),
}
DEFAULT_VARIANTS = "table,naive,mirror"
#: The variants that publish, and the landing zone each publishes to (`mirror_schema='bench'`).
PUBLISHING = {"mirror": "landing_zone", "mirror_incremental": "landing_zone", "package": "landing_zone_package"}


def generate(rows: int, tables: list[str], data_dir: Path) -> dict[str, Path]:
    """TPC-H `tables` at the scale factor that gives about `rows` lineitem rows (cached per scale)."""
    scale = round(rows / SF1_LINEITEM_ROWS, 4)
    target = data_dir / f"sf{scale}"
    files = {table: target / f"{table}.parquet" for table in tables}
    missing = [table for table, path in files.items() if not path.exists()]
    if missing:
        tpchgen = Path(sys.executable).with_name("tpchgen-cli")
        subprocess.run(
            [str(tpchgen), "parquet", "-s", str(scale), f"--tables={','.join(missing)}", f"--output-dir={target}"],
            check=True,
        )
    return files


def spark_settings(work: Path, driver_memory: str) -> dict[str, str]:
    return {
        "spark.master": "local[2]",
        "spark.driver.memory": driver_memory,
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.sql.warehouse.dir": str(work / "warehouse"),
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={work}/metastore_db;create=true",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={work}",
        "spark.local.dir": str(work / "spark-tmp"),
        "spark.ui.showConsoleProgress": "false",
    }


def start_spark(settings: dict[str, str]):
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.enableHiveSupport()
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def write_profile(work: Path, settings: dict[str, str]) -> None:
    session = {"method": "session", "host": "localhost", "schema": "bench", "server_side_parameters": settings}
    profile = {
        "openmirror_bench": {
            "target": "bench",
            "outputs": {"bench": {"type": "openmirror", "landing_zone": str(work / "landing_zone"), **session}},
        },
        "openmirror_bench_package": {"target": "bench", "outputs": {"bench": {"type": "spark", **session}}},
    }
    (work / "profiles.yml").write_text(json.dumps(profile, indent=2))


class Bench:
    def __init__(self, work: Path, spark, variants: list[str], model_sql: str, flagged: bool, check: bool) -> None:
        self.work = work
        self.check = check
        self.flagged = flagged
        self.spark = spark
        self.variants = variants
        self.model_sql = model_sql
        self.dbt = dbtRunner()
        self.package_landing_zone = work / "landing_zone_package"
        self.watched = [work / "warehouse", work / "landing_zone", work / "naive_out", self.package_landing_zone]
        #: Where each landing zone is replayed, for the check.
        self.mirrors = {zone: work / f"mirror_of_{zone}" for zone in set(PUBLISHING.values())}
        self.checks: dict[str, ReplayCheck] = {}
        if "package" in variants:
            installed = self.dbt.invoke(["deps", "--project-dir", str(PACKAGE_PROJECT), "--quiet"])
            if not installed.success:
                raise RuntimeError(f"dbt deps of {PACKAGE_PROJECT} failed: {installed.exception}")

    def sql(self, statement: str) -> None:
        self.spark.sql(statement).collect()

    def reset(self, sources: dict[str, Path]) -> int:
        """A fresh database with the `sources` loaded; returns the model's row count."""
        self.sql("drop database if exists bench cascade")
        self.sql("create database bench")
        for folder in [*self.watched, *self.mirrors.values()]:
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
        self.checks = {zone: ReplayCheck(self.spark, self.work / zone, mirror) for zone, mirror in self.mirrors.items()}
        for table, path in sources.items():
            self.sql(source_sql(f"bench.{table}_src", path.as_uri(), self.flagged))
        return self.spark.sql(self.model_sql).count()

    def change(self, round_number: int, churn: float) -> None:
        for statement in change_round_statements("bench.lineitem_src", round_number, churn, self.flagged):
            self.sql(statement)

    def delete_unflagged(self, round_number: int, churn: float) -> int:
        """Delete `churn` of the source's rows without a flag; returns how many rows the model lost."""
        rows = self.spark.sql(self.model_sql).count()
        for statement in unflagged_delete_statements("bench.lineitem_src", round_number, churn):
            self.sql(statement)
        return rows - self.spark.sql(self.model_sql).count()

    def replay_differs(self, variant: str) -> int:
        """Rows by which the replayed landing zone and the model's full output differ."""
        model = VARIANTS[variant][1]
        return self.checks[PUBLISHING[variant]].differing_rows("bench", model, self.model_sql)

    def run_model(self, variant: str, reconcile: bool = False) -> dict:
        project, model = VARIANTS[variant]
        variables = {
            "model_sql": self.model_sql,
            "naive_out": str(self.work / "naive_out"),
            "openmirror_landing_zone": str(self.package_landing_zone),
            "openmirror_reconcile": reconcile,
        }
        args = [
            "run",
            "--select",
            model,
            "--project-dir",
            str(project),
            "--profiles-dir",
            str(self.work),
            "--vars",
            json.dumps(variables),
            "--target-path",
            str(self.work / "dbt_target"),
            "--log-path",
            str(self.work / "dbt_logs"),
            "--quiet",
        ]
        before = {folder: file_snapshot(folder) for folder in self.watched}
        self.spark._jvm.java.lang.System.gc()
        load = os.getloadavg()[0]
        with Sampler(self.spark) as memory:
            start = time.perf_counter()
            result = self.dbt.invoke(args)
            if result.success and variant == "package":
                PackagePublisher(LocalStorage(self.package_landing_zone), log=lambda line: None).publish()
            seconds = time.perf_counter() - start
        if not result.success:
            raise RuntimeError(f"dbt run of {model} failed: {result.exception or result.result}")
        written = [written_since(folder, before[folder]) for folder in self.watched]
        response = result.result[0].adapter_response if result.result else {}
        checked = {"replay_differs": self.replay_differs(variant)} if self.check and variant in PUBLISHING else {}
        return {
            "variant": variant,
            "seconds": round(seconds, 3),
            "bytes_written": sum(w["bytes"] for w in written),
            "files_written": sum(w["files"] for w in written),
            "change_files": sum(w["published"] for w in written[1:]),
            "heap_peak_mb": memory.heap_peak_mb,
            "rss_peak_mb": memory.rss_peak_mb,
            "load_1min": round(load, 2),
            "changes": {
                k: response.get(k)
                for k in ("inserts", "updates", "deletes", "upserts", "files", "mode")
                if k in response
            },
            **checked,
        }

    def round(
        self, rows: int, label: str, churn: float, order: list[str], reconcile: bool = False, expected_differs: int = 0
    ) -> list[dict]:
        """Each variant in `order` once; a publishing variant's replay must differ from the model's
        output by `expected_differs` rows (0 but where a round is made to hide rows from it)."""
        records = []
        for variant in order:
            record = self.run_model(variant, reconcile)
            record.update(rows=rows, round=label, churn=churn)
            if "replay_differs" in record:
                record["replay_expected_differs"] = expected_differs
            record["rows_per_s"] = round(rows / record["seconds"])
            print(json.dumps(record), flush=True)
            records.append(record)
        return records


def benchmark_size(
    bench: Bench, sources: dict[str, Path], churns: list[float], repeat: int, rewrite_sources: bool
) -> list[dict]:
    rows = bench.reset(sources)
    records = bench.round(rows, "initial", 0.0, bench.variants)
    round_number = 0
    for churn in churns:
        label = f"churn {churn:g}" + (" rewritten" if rewrite_sources and not churn else "")
        for repetition in range(repeat):
            round_number += 1
            if churn or rewrite_sources:
                bench.change(round_number, churn)
            # Rotate the order so no variant always runs first (warm caches, the OS page cache).
            shift = repetition % len(bench.variants)
            order = bench.variants[shift:] + bench.variants[:shift]
            records += bench.round(rows, label, churn, order)
    if bench.flagged and "mirror_incremental" in bench.variants:
        records += reconcile_rounds(bench, rows, round_number + 1, max(churns))
    return records


def reconcile_rounds(bench: Bench, rows: int, round_number: int, churn: float) -> list[dict]:
    """Rows deleted from the source without a flag: a candidate run cannot see them (its replay
    differs by exactly those rows), the reconcile run that follows publishes them."""
    lost = bench.delete_unflagged(round_number, churn)
    label = f"churn {churn:g}"
    candidates = [v for v in bench.variants if v in ("table", "incremental", "mirror_incremental")]
    records = bench.round(rows, f"{label} unflagged", churn, candidates, expected_differs=lost)
    reconciled = [v for v in bench.variants if v in ("table", "mirror_incremental")]
    return records + bench.round(rows, f"{label} reconcile", churn, reconciled, reconcile=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--scaling", help="comma-separated row counts, e.g. 1000000,3000000,10000000")
    parser.add_argument("--churn", default="0,0.001,0.01,0.1", help="fractions of rows changed per round")
    parser.add_argument("--repeat", type=int, default=3, help="rounds per churn (medians are reported)")
    parser.add_argument("--variants", default=DEFAULT_VARIANTS, help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--model", choices=list(MODELS), default="projection", help="the benchmarked model's shape")
    parser.add_argument("--work", type=Path, default=Path("/tmp/openmirror-bench"))
    parser.add_argument("--data", type=Path, default=Path("/tmp/openmirror-bench-data"))
    parser.add_argument(
        "--rewrite-sources",
        action="store_true",
        help="rounds without changes rewrite the sources anyway (same rows, new files): open_mirror "
        "then cannot tell its inputs are unchanged and compares in full",
    )
    parser.add_argument(
        "--no-check", action="store_true", help="skip replaying the landing zone after each run (the oracle)"
    )
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()

    sizes = [int(s) for s in args.scaling.split(",")] if args.scaling else [args.rows]
    churns = [float(c) for c in args.churn.split(",")]
    variants = args.variants.split(",")
    model_sql, tables = MODELS[args.model]
    inputs = {rows: generate(rows, tables, args.data) for rows in sizes}

    args.work.mkdir(parents=True, exist_ok=True)
    settings = spark_settings(args.work, args.driver_memory)
    write_profile(args.work, settings)
    spark = start_spark(settings)  # dbt-spark's session mode gets this same session

    bench = Bench(args.work, spark, variants, model_sql, args.model in FLAGGED, not args.no_check)
    records: list[dict] = []
    for rows in sizes:
        records += benchmark_size(bench, inputs[rows], churns, args.repeat, args.rewrite_sources)

    import dbt.version
    import pyspark

    environment = {
        "machine": f"{os.cpu_count()} cores, {platform.machine()}, {platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "dbt_core": dbt.version.__version__,
        "command": " ".join(sys.argv),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    name = f"scaling-{'-'.join(map(str, sizes))}" if args.scaling else f"rows-{sizes[0]}"
    if args.variants != DEFAULT_VARIANTS:
        name += f"-{'-'.join(variants)}"
    if args.model != "projection":
        name += f"-{args.model}"
    if args.rewrite_sources:
        name += "-rewritten"
    write_reports(args.out, name, environment, records, summarize(records))
    wrong = [r for r in records if r.get("replay_differs", 0) != r.get("replay_expected_differs", 0)]
    for record in wrong:
        print(f"replay differs from the model output: {json.dumps(record)}", file=sys.stderr)
    if wrong:
        sys.exit(1)


if __name__ == "__main__":
    main()

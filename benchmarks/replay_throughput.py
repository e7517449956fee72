"""Replay throughput of the local mirror (`dbt-openmirror replay`).

    python benchmarks/replay_throughput.py [--rows 1000000] [--changes 10000] [--repeat 3]

Writes a landing zone with one table: an initial load of --rows rows (file 1), then a change file
of --changes rows (1/3 inserts, 1/3 updates, 1/3 deletes). Times replaying file 1 into a new
Delta table, then file 2, in fresh folders each repetition, and prints medians.
"""

import argparse
import datetime
import decimal
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from dbt.adapters.openmirror.storage import LocalStorage
from dbt.adapters.openmirror.tools.local_mirror.replay import LocalMirror


def rows(ids: list, version: int, markers: list) -> pa.Table:
    start = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
    return pa.table(
        {
            "order_key": pa.array(ids, pa.int64()),
            "customer": pa.array([f"customer-{i % 50000}" for i in ids]),
            "status": pa.array(["shipped" if i % 3 == 0 else "placed" for i in ids]),
            "amount": pa.array([decimal.Decimal(i % 100000 + version) / 100 for i in ids], pa.decimal128(12, 2)),
            "quantity": pa.array([i % 17 + version for i in ids], pa.int32()),
            "discount": pa.array([(i % 10) / 100.0 for i in ids]),
            "ordered_at": pa.array([start + datetime.timedelta(seconds=i) for i in ids], pa.timestamp("us", tz="UTC")),
            "__rowMarker__": pa.array(markers, pa.int32()),
        }
    )


def write_landing_zone(root: Path, total: int, changes: int) -> Path:
    folder = root / "bench.schema" / "orders"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text(json.dumps({"keyColumns": ["order_key"]}))
    pq.write_table(rows(list(range(total)), 0, [0] * total), folder / f"{1:020d}.parquet")
    third = changes // 3
    touched = random.Random(7).sample(range(total), 2 * third)
    change_ids = touched + list(range(total, total + changes - 2 * third))
    markers = [1] * third + [2] * third + [0] * (changes - 2 * third)
    pq.write_table(rows(change_ids, 1, markers), folder / f"{2:020d}.parquet")
    return folder


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    arguments.add_argument("--rows", type=int, default=1_000_000)
    arguments.add_argument("--changes", type=int, default=10_000)
    arguments.add_argument("--repeat", type=int, default=3)
    args = arguments.parse_args()
    initial, change = [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            folder = write_landing_zone(root / "lz", args.rows, args.changes)
            second = folder / f"{2:020d}.parquet"
            parked = root / "parked.parquet"
            second.rename(parked)
            mirror = LocalMirror(LocalStorage(root / "lz"), root / "mirror")
            began = time.perf_counter()
            mirror.replay()
            initial.append(time.perf_counter() - began)
            parked.rename(second)
            began = time.perf_counter()
            [status] = mirror.replay()
            change.append(time.perf_counter() - began)
            assert status.lastAppliedFile == 2, status
    first, then = statistics.median(initial), statistics.median(change)
    print(
        f"initial load: {args.rows} rows in {first:.2f} s = {args.rows / first:,.0f} rows/s (median of {args.repeat})"
    )
    print(
        f"change file:  {args.changes} rows in {then:.2f} s = {args.changes / then:,.0f} rows/s "
        f"onto {args.rows} rows (median of {args.repeat})"
    )


if __name__ == "__main__":
    main()

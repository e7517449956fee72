"""Print what a landing zone holds, and compare the local mirror with the model output.

Per table folder: its key and files with their row markers; then, after `dbt-openmirror
replay`, the mirrored Delta table's rows next to the model's latest output (the snapshot
table `{{ this }}` in the Spark warehouse), compared key by key.
"""

import argparse
import json
from collections import Counter
from pathlib import Path

import pyarrow.dataset as ds
from deltalake import DeltaTable

from dbt.adapters.openmirror.local_mirror.replay import table_folders
from dbt.adapters.openmirror.storage import LocalStorage

MARKERS = {0: "insert", 1: "update", 2: "delete", 4: "upsert"}


def _keys(table, keys):
    return Counter(zip(*(table.column(k).to_pylist() for k in keys)))


def main() -> int:
    arguments = argparse.ArgumentParser(description=__doc__)
    arguments.add_argument("landing_zone", type=Path)
    arguments.add_argument("--mirror", type=Path, required=True)
    arguments.add_argument("--warehouse", type=Path, required=True, help="Spark warehouse of the models' schema")
    args = arguments.parse_args()
    mismatches = 0
    for schema, table, folder in table_folders(LocalStorage(args.landing_zone.resolve())):
        path = args.landing_zone / folder
        keys = json.loads((path / "_metadata.json").read_text())["keyColumns"]
        record = json.loads((path / "_dbt_openmirror.json").read_text())
        print(f"{folder}  keyColumns={keys}  (model {record['model']})")
        files = sorted(path.glob("[0-9]*.parquet")) + sorted(path.glob("_ProcessedFiles/[0-9]*.parquet"))
        for data_file in sorted(files, key=lambda p: p.name):
            markers = Counter(ds.dataset(data_file).to_table(columns=["__rowMarker__"]).column(0).to_pylist())
            summary = ", ".join(f"{n} {MARKERS.get(m, m)}" for m, n in sorted(markers.items()))
            print(f"    {data_file.name}  {summary or 'no rows'}")
        mirrored = DeltaTable(str(args.mirror / schema / table)).to_pyarrow_table()
        model = ds.dataset(args.warehouse / record["model"], format="parquet").to_table()
        same = _keys(mirrored, keys) == _keys(model, keys)
        mismatches += not same
        print(f"    mirrored rows: {mirrored.num_rows}, model rows: {model.num_rows}, "
              f"keys {'match' if same else 'DIFFER'}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())

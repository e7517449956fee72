"""Print what a landing zone holds: per table folder, its key, files and row markers."""

import json
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

MARKERS = {0: "insert", 1: "update", 2: "delete", 4: "upsert"}


def table_folders(root: Path):
    for metadata in sorted(root.rglob("_metadata.json")):
        if not any(part.startswith("_") for part in metadata.parent.relative_to(root).parts):
            yield metadata.parent


def main(root: Path) -> None:
    print(f"Landing zone {root}")
    for folder in table_folders(root):
        keys = json.loads((folder / "_metadata.json").read_text())["keyColumns"]
        print(f"  {folder.relative_to(root)}  keyColumns={keys}")
        for data_file in sorted(folder.glob("[0-9]*.parquet")):
            markers = Counter(pq.read_table(data_file, columns=["__rowMarker__"]).column(0).to_pylist())
            summary = ", ".join(f"{count} {MARKERS.get(m, m)}" for m, count in sorted(markers.items()))
            print(f"    {data_file.name}  {summary or 'no rows'}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else ".landing_zone"))

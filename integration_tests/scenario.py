"""The jaffle shop, four days in its life: each day changes the shop's seeds, dbt publishes the
changes into the landing zone, and the local mirror applies them.

    python scenario.py [--workdir .scenario]

runs every day in a copy of this project and ends each day by comparing the mirrored Delta
tables with the models' output, row by row. The same days drive the test suite.
"""

import argparse
import datetime
import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (what happens, the dbt commands of the day); tuples, so no caller can change them in place
DAYS: dict[int, tuple] = {
    1: ("the shop opens", (("seed",), ("build",))),
    2: ("a customer joins and orders, order 3 ships, payment 5 is refunded", (("seed", "--full-refresh"), ("build",))),
    3: (
        "loyalty tiers arrive (a new column), an email changes, order 1's lines are renumbered "
        "(a key change), a quantity changes",
        (("seed", "--full-refresh"), ("build",)),
    ),
    4: (
        "two customers leave with their orders; orders is rebuilt with --full-refresh",
        (
            ("seed", "--full-refresh"),
            ("build", "--exclude", "orders"),
            ("build", "--select", "orders", "--full-refresh"),
        ),
    ),
}
MIRRORED_MODELS = ("customers", "orders", "order_lines", "payments")


def seed_files(day: int) -> dict[str, Path]:
    """Each seed as it is on `day`: the latest version at or before that day."""
    files = {p.name: p for p in (HERE / "seeds").glob("*.csv")}
    for earlier in range(2, day + 1):
        files.update({p.name: p for p in (HERE / "scenario" / f"day{earlier}").glob("*.csv")})
    return files


def stage_seeds(seeds_dir: Path, day: int) -> None:
    for name, path in seed_files(day).items():
        shutil.copyfile(path, seeds_dir / name)


def copy_project(workdir: Path) -> None:
    for name in ("dbt_project.yml", "profiles.yml"):
        shutil.copyfile(HERE / name, workdir / name)
    shutil.copytree(HERE / "models", workdir / "models", dirs_exist_ok=True)
    (workdir / "seeds").mkdir(exist_ok=True)
    shutil.copyfile(HERE / "seeds" / "seeds.yml", workdir / "seeds" / "seeds.yml")


def comparable(value):
    """Spark's snapshot keeps arrays; the mirror holds them as JSON text. Timestamps in UTC."""
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return value


def rows(table) -> list[tuple]:
    columns = sorted(table.column_names)
    records = [tuple(comparable(r[c]) for c in columns) for r in table.to_pylist()]
    return sorted(records, key=repr)


def compare(workdir: Path) -> bool:
    """Print, per mirrored table, its rows next to the model's and whether they are equal."""
    import pyarrow.dataset as ds
    from deltalake import DeltaTable

    same_everywhere = True
    warehouse = workdir / ".spark" / "warehouse" / "jaffle_shop.db"
    for model in MIRRORED_MODELS:
        schema = "sales" if model == "order_lines" else "jaffle_shop"
        mirrored = DeltaTable(str(workdir / ".mirror" / schema / model)).to_pyarrow_table()
        output = ds.dataset(warehouse / model, format="parquet").to_table()
        same = rows(mirrored) == rows(output)
        same_everywhere &= same
        print(
            f"  {schema}.{model:12} mirrored {mirrored.num_rows:3} rows, model {output.num_rows:3} rows: "
            f"{'equal' if same else 'DIFFERENT'}"
        )
    return same_everywhere


def main() -> int:
    from dbt.cli.main import dbtRunner

    from dbt.adapters.openmirror.storage import LocalStorage
    from dbt.adapters.openmirror.tools.local_mirror.replay import LocalMirror

    arguments = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    arguments.add_argument("--workdir", type=Path, default=HERE / ".scenario")
    workdir = arguments.parse_args().workdir.resolve()
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    copy_project(workdir)
    import os

    os.chdir(workdir)  # the profile's landing zone and Spark folders are relative
    dbt = dbtRunner()
    all_equal = True
    for day, (story, commands) in DAYS.items():
        print(f"\n=== day {day}: {story}")
        stage_seeds(workdir / "seeds", day)
        for command in commands:
            result = dbt.invoke([*command, "--quiet", "--project-dir", str(workdir), "--profiles-dir", str(workdir)])
            if not result.success:
                print(f"dbt {' '.join(command)} failed: {result.exception}")
                return 1
            for node in result.result or []:
                if getattr(node, "adapter_response", {}).get("code") == "OPEN_MIRROR":
                    print(f"  dbt {command[0]}: {node.node.name:12} {node.message}")
        for status in LocalMirror(LocalStorage(workdir / ".landing_zone"), workdir / ".mirror").replay():
            print(
                f"  mirror: {status.sourceSchemaName}.{status.sourceTableName} {status.status}, "
                f"applied through file {status.lastAppliedFile}"
            )
        all_equal &= compare(workdir)
    print("\nEvery mirrored table equals its model after every day." if all_equal else "\nMISMATCH")
    return 0 if all_equal else 1


if __name__ == "__main__":
    sys.exit(main())

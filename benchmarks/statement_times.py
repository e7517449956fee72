"""Where one model run's time goes, statement by statement, read from the dbt log a benchmark left.

    .venv/bin/python benchmarks/statement_times.py --model lineitem_mirror_incremental
    .venv/bin/python benchmarks/statement_times.py --model lineitem_mirror_incremental --run 2

dbt logs every statement a model runs (debug level, always written to `dbt.log`). A statement's
time here runs from its log line to the next statement's (or the model's end): on a session
connection a query runs when its rows are fetched, after dbt logged its status, so the status
line's own duration would miss most of it. The time between statements (the adapter's Python,
dbt's bookkeeping) is therefore counted in the statement before it. `--run 2` is the run before
the last one of the model in the log.
"""

import argparse
import re
from datetime import datetime
from pathlib import Path

STAMP = re.compile(r"(\d\d:\d\d:\d\d\.\d+) \[\w+\s*\] \[[^\]]+\]: (.*)")
COMMENT = re.compile(r"/\*.*?\*/\s*", re.S)


def model_runs(lines: list[str], node_suffix: str) -> list[list[tuple[float, str]]]:
    """Each run of the model: (seconds since midnight, message) of its log lines."""
    runs: list[list[tuple[float, str]]] = []
    current: list[tuple[float, str]] | None = None
    for index, line in enumerate(lines):
        match = STAMP.search(line)
        if not match:
            continue
        moment = datetime.strptime(match[1], "%H:%M:%S.%f")
        seconds = moment.hour * 3600 + moment.minute * 60 + moment.second + moment.microsecond / 1e6
        message = match[2]
        if message.startswith("Began running node ") and message.endswith(node_suffix):
            current = [(seconds, "start")]
            runs.append(current)
        elif current is not None and message.startswith("Finished running node "):
            current.append((seconds, "end"))
            current = None
        elif current is not None and message.startswith("On model.") and ": /*" in message:
            current.append((seconds, first_sql_line(lines, index, message)))
    return runs


def first_sql_line(lines: list[str], index: int, message: str) -> str:
    """The statement's first line of SQL (after dbt's query comment)."""
    text = COMMENT.sub("", message.split(": ", 1)[1] + "\n" + "\n".join(lines[index + 1 : index + 6]))
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:110]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", type=Path, default=Path("/tmp/openmirror-bench/dbt_logs/dbt.log"))
    parser.add_argument("--model", required=True, help="the model's name, e.g. lineitem_mirror_incremental")
    parser.add_argument("--run", type=int, default=1, help="1: the model's last run in the log, 2: the one before")
    args = parser.parse_args()
    runs = model_runs(args.log.read_text().splitlines(), f".{args.model}")
    if len(runs) < args.run:
        raise SystemExit(f"{args.log} holds {len(runs)} runs of {args.model}")
    events = runs[-args.run]
    start = events[0][0]
    print("| at s | took s | statement |\n|---|---|---|")
    for (moment, label), (following, _) in zip(events, events[1:], strict=False):
        statement = "(compile, hooks)" if label == "start" else label
        print(f"| {moment - start:.2f} | {following - moment:.2f} | {statement} |")
    print(f"\n{len(events) - 2} statements, {events[-1][0] - start:.2f} s from the model's start to its end")


if __name__ == "__main__":
    main()

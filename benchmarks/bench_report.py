"""Medians per (rows, round, variant), the ratios the targets are stated in, a markdown table, a plot."""

import json
from collections import defaultdict
from pathlib import Path
from statistics import median

MEASURES = [
    "seconds",
    "rows_per_s",
    "bytes_written",
    "files_written",
    "change_files",
    "heap_peak_mb",
    "rss_peak_mb",
    "load_1min",
]


def summarize(records: list[dict]) -> list[dict]:
    groups = defaultdict(list)
    for record in records:
        groups[(record["rows"], record["round"], record["churn"], record["variant"])].append(record)
    summary = []
    for (rows, label, churn, variant), group in groups.items():
        row = {"rows": rows, "round": label, "churn": churn, "variant": variant, "runs": len(group)}
        row.update({m: median(r[m] for r in group) for m in MEASURES})
        if any("replay_differs" in r for r in group):
            row["replay_differs"] = max(r["replay_differs"] for r in group)
            row["replay_expected_differs"] = max(r["replay_expected_differs"] for r in group)
        summary.append(row)
    by_key = {(s["rows"], s["round"], s["variant"]): s for s in summary}
    for s in summary:
        for reference in RATIOS.get(s["variant"], ()):
            other = by_key.get((s["rows"], s["round"], reference))
            if other:
                s[f"{s['variant']}_over_{reference}"] = round(s["seconds"] / other["seconds"], 2)
    return summary


#: The ratios the targets are stated in: variant -> the variants it is compared with.
RATIOS = {
    "mirror": ("table",),
    "package": ("table",),
    "naive": ("mirror",),
    "mirror_incremental": ("incremental", "table"),
}


def _ratio(s: dict) -> str:
    names = [f"{s['variant']}_over_{reference}" for reference in RATIOS.get(s["variant"], ())]
    return ", ".join(f"{name.replace('_over_', '/')} {s[name]}" for name in names if name in s)


def _replay(s: dict) -> str:
    """What the replay oracle found after the runs: the landing zone replayed equals the output."""
    if "replay_differs" not in s:
        return ""
    differs, expected = s["replay_differs"], s["replay_expected_differs"]
    if differs == expected:
        return "exact" if not differs else f"{differs:,} rows differ, as expected"
    return f"**{differs:,} rows differ** (expected {expected:,})"


def markdown(environment: dict, summary: list[dict]) -> str:
    lines = [
        f"{environment['date']} · {environment['machine']} · Python {environment['python']} · "
        f"pyspark {environment['pyspark']} · dbt-core {environment['dbt_core']}",
        "",
        f"`{environment['command']}`",
        "",
        "| rows | round | variant | runs | median s | rows/s | MB written | files | change files | "
        "peak heap MB | peak RSS MB | load | ratio | replay |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        lines.append(
            f"| {s['rows']:,} | {s['round']} | {s['variant']} | {s['runs']} | {s['seconds']:.1f} | "
            f"{s['rows_per_s']:,.0f} | {s['bytes_written'] / 2**20:,.0f} | {s['files_written']:.0f} | "
            f"{s['change_files']:.0f} | {s['heap_peak_mb']:,.0f} | {s['rss_peak_mb']:,.0f} | "
            f"{s['load_1min']:.1f} | {_ratio(s)} | {_replay(s)} |"
        )
    return "\n".join(lines) + "\n"


def plot(path: Path, summary: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (by_rows, by_churn) = plt.subplots(1, 2, figsize=(10, 4))
    for variant in ("table", "naive", "mirror", "package", "incremental", "mirror_incremental"):
        points = sorted(
            (s["rows"], s["seconds"]) for s in summary if s["variant"] == variant and s["round"] == "churn 0.01"
        )
        if points:
            by_rows.plot([p[0] / 1e6 for p in points], [p[1] for p in points], marker="o", label=variant)
        largest = max(s["rows"] for s in summary)
        points = sorted(
            (s["churn"], s["heap_peak_mb"])
            for s in summary
            if s["variant"] == variant and s["rows"] == largest and s["round"] != "initial"
        )
        if points:
            by_churn.plot([p[0] * 100 for p in points], [p[1] for p in points], marker="o", label=variant)
    by_rows.set(xlabel="rows (millions)", ylabel="median seconds per run", title="1% churn: time vs rows")
    by_churn.set(xlabel="churn (%)", ylabel="peak JVM heap in use (MB)", title="driver memory vs churn")
    for axes in (by_rows, by_churn):
        axes.grid(alpha=0.3)
        axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=80)


def write_reports(out: Path, name: str, environment: dict, records: list[dict], summary: list[dict]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    document = {"environment": environment, "summary": summary, "runs": records}
    (out / f"{name}.json").write_text(json.dumps(document, indent=1) + "\n")
    (out / f"{name}.md").write_text(markdown(environment, summary))
    plot(out / f"{name}.png", summary)
    print(markdown(environment, summary))

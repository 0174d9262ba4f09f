"""Run every benchmark: admission against the peers, then the overheads; write report.md and report.png.

Each figure is printed with its ratio to its baseline. The report (machine, versions, command, tables)
goes to benchmarks/report.md; when matplotlib is importable, a bar chart of the admission ratios goes
to benchmarks/report.png (without it, the run says so and writes no PNG).

    python benchmarks/run.py            # full run
    python benchmarks/run.py --quick    # a smoke run (CI): checks that everything still runs
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import overhead
import peers

HERE = Path(__file__).resolve().parent
PACKAGES = (
    "scopetool",
    "pydantic",
    "pydantic-core",
    "jiter",
    "pydantic-ai-slim",
    "openai-agents",
    "mcp",
    "langchain-core",
    "matplotlib",
)


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(package: str) -> str:
    try:
        return f"{package}=={metadata.version(package)}"
    except metadata.PackageNotFoundError:
        return f"{package} (not installed)"


def chart(rows: list[dict[str, Any]], path: Path) -> bool:
    """A grouped bar chart of every runner's ratio to the bare validator; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    labels = [label for label in peers.MAKERS if any(label in row["ns"] for row in rows)]
    width = 0.8 / len(labels)
    figure, axes = plt.subplots(figsize=(11, 5))
    for i, label in enumerate(labels):
        xs = [n + (i - (len(labels) - 1) / 2) * width for n in range(len(rows))]
        ys = [row["ns"][label] / row["ns"][peers.BASE] if label in row["ns"] else 0 for row in rows]
        axes.bar(xs, ys, width, label=peers.LABELS[label])
    axes.set_xticks(range(len(rows)), [f"{row['case']}\n{row['bytes']} B" for row in rows])
    axes.set_yscale("log")
    axes.set_ylabel("time per call / bare pydantic-core validate_json (log)")
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.set_title("Tool-call admission: raw JSON arguments to validated call arguments (lower is faster)")
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return True


def main() -> None:
    """Run everything, print the report and write it (and the chart) next to this file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--target", type=float, default=0.1, help="seconds per batch")
    parser.add_argument("--imports", type=int, default=11, help="fresh subprocesses per import statement")
    parser.add_argument("--quick", action="store_true", help="3 rounds of 0.01 s batches, 3 imports each")
    parser.add_argument("--out", type=Path, default=HERE, help="directory for report.md and report.png")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.target, args.imports = 3, 0.01, 3
    started = time.perf_counter()
    command = "python benchmarks/run.py " + " ".join(sys.argv[1:])
    rows, notes = peers.measure(args.rounds, args.target)
    results = overhead.measure(args.rounds, args.target, args.imports)
    png = args.out / "report.png"
    drew = chart(rows, png)
    lines = [
        "# scopetool benchmarks",
        "",
        f"Machine: {_cpu()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()} ({platform.python_implementation()}).",
        "",
        "Versions: " + ", ".join(_version(p) for p in PACKAGES) + ".",
        "",
        f"Command: `{command.strip()}` ({args.rounds} interleaved rounds of {args.target} s batches, medians; "
        f"imports: median of {args.imports} fresh subprocesses each).",
        "",
        "## Admission against the peers",
        "",
        "Raw JSON arguments to validated call arguments; ratios to the bare pydantic-core validator and to "
        "pydantic-ai.",
        "",
        *peers.table(rows),
        "",
        *(peers.skipped(notes) or ["Every peer ran."]),
        "",
        "## Overhead",
        "",
        *overhead.tables(results),
        "",
        f"Chart: report.png ({'written' if drew else 'not written: matplotlib is not installed'}).",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    (args.out / "report.md").write_text(text, encoding="utf-8")
    if drew:
        print(f"wrote {args.out / 'report.md'} and {png}")
    else:
        print(f"wrote {args.out / 'report.md'}; matplotlib is not installed, so no PNG was written")
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

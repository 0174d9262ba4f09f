"""Time the README's test command as a new contributor meets it: a fresh venv, the install, the suite.

For each extra given (the README's is `test`; `test-all` is everything CI installs), the last commit of
this checkout is written to a temporary folder, where a new venv is made with the Python
running this script; then ``pip install -e '.[EXTRA]'`` (without pip's cache, so every package is
downloaded as on a new machine) and ``python -m pytest`` run in it, each timed. The report gives the
packages installed, both times (wall clock, and the CPU time of the suite's processes), pytest's own
closing line, and the machine's load average before and after, since on a shared machine other work
slows both.

    python benchmarks/first_run.py                                # the README's command: writes benchmarks/first_run.md
    python benchmarks/first_run.py --extra test --extra test-all  # and everything, to compare
    python benchmarks/first_run.py --quick   # a smoke run: pip's cache used, the suite collected, not run
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import harness

ROOT = harness.ROOT
PAGE = harness.Page(harness.HERE / "first_run.md")
# What `python -m venv` puts in a new venv before anything is installed.
VENV_SEED = {"pip", "setuptools"}


def _checkout(into: Path) -> None:
    """Write the files of this checkout's last commit (what a clone would have) into `into`."""
    archive = subprocess.run(["git", "archive", "--format=tar", "HEAD"], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)


def _interruptible() -> None:
    """Give the suite Ctrl-C back: a shell starting this script in the background ignores SIGINT for it,
    and the CLI's interruption test needs the signal to reach the command it runs."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _children_cpu() -> float:
    """CPU seconds (user and system) of every finished child process so far, theirs included."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(extra: str, quick: bool = False) -> dict[str, Any]:
    """Install `extra` into a fresh venv in a fresh copy, run the suite there; timings and counts.

    `quick`: pip may use its cache, and the suite is collected, not run.
    """
    with tempfile.TemporaryDirectory(prefix="scopetool-first-run-") as folder:
        work = Path(folder)
        _checkout(work)
        subprocess.run([sys.executable, "-m", "venv", ".venv"], cwd=work, check=True)
        python = str(work / ".venv" / "bin" / "python")
        load_before = os.getloadavg()
        started, cpu = time.perf_counter(), _children_cpu()
        subprocess.run(
            [python, "-m", "pip", "install", "--quiet", *([] if quick else ["--no-cache-dir"]), "-e", f".[{extra}]"],
            cwd=work,
            check=True,
            capture_output=True,
        )
        install, install_cpu = time.perf_counter() - started, _children_cpu() - cpu
        listed = subprocess.run(
            [python, "-m", "pip", "list", "--format=json"], cwd=work, check=True, capture_output=True, text=True
        ).stdout
        packages = [entry["name"] for entry in json.loads(listed) if entry["name"].lower() not in VENV_SEED]
        started, cpu = time.perf_counter(), _children_cpu()
        suite = subprocess.run(
            [python, "-m", "pytest", "-p", "no:cacheprovider", *(["--collect-only", "-q"] if quick else [])],
            cwd=work,
            capture_output=True,
            text=True,
            check=False,
            preexec_fn=_interruptible,
        )
        seconds, suite_cpu = time.perf_counter() - started, _children_cpu() - cpu
        load_after = os.getloadavg()
    closing = [line for line in suite.stdout.splitlines() if re.match(r"^(=+ )?.*\bin [\d.]+s\b.*( =+)?$", line)]
    return {
        "extra": extra,
        "packages": len(packages),
        "install_s": install,
        "install_cpu_s": install_cpu,
        "suite_s": seconds,
        "suite_cpu_s": suite_cpu,
        "total_s": install + seconds,
        "pytest": closing[-1].strip("= ") if closing else f"(no closing line; exit {suite.returncode})",
        "failed": [line for line in suite.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))],
        "returncode": suite.returncode,
        "load": (load_before[0], load_after[0]),
    }


def report(options: harness.Options, rows: list[dict[str, Any]]) -> str:
    """The Markdown report of the measured runs."""
    how = "A fresh venv in a fresh copy of the last commit for each extra; " + (
        "pip with its cache, and the suite collected, not run (--quick)."
        if options.quick
        else "pip without its cache, so every package is downloaded."
    )
    lines = [
        "# The README's test command, timed",
        "",
        harness.header(options, how=how),
        "",
        "Wall-clock times grow with other work on the machine; CPU times (the processes' own, user and system) "
        "much less, and on an idle machine the suite's wall-clock time is close to its CPU time.",
        "",
        "| install | packages | install (s) | suite (s) | suite CPU (s) | total (min) | pytest says "
        "| load average before, after |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    lines += [
        f"| `pip install -e '.[{row['extra']}]'` | {row['packages']} | {row['install_s']:.0f} | {row['suite_s']:.0f} "
        f"| {row['suite_cpu_s']:.0f} | {row['total_s'] / 60:.1f} | {row['pytest']} "
        f"| {row['load'][0]:.1f}, {row['load'][1]:.1f} |"
        for row in rows
    ]
    return "\n".join([*lines, ""])


def main() -> None:
    """Measure each extra in turn, print the report and (a full run) write benchmarks/first_run.md."""

    def flags(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--extra", action="append", help="an extra to install (repeatable; default: test)")

    options = harness.parse(__doc__, flags=flags)
    rows = [measure(extra, options.quick) for extra in options.args.extra or ["test"]]
    harness.publish(options, report(options, rows), PAGE)
    if any(row["returncode"] != 0 for row in rows):
        sys.exit("a suite failed:\n" + "\n".join(line for row in rows for line in row["failed"]))


if __name__ == "__main__":
    main()

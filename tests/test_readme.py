"""The README's code runs as shown."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_readme_python_blocks_run_and_print_what_they_claim() -> None:
    """Each Python block runs; a trailing `#> value` comment on a print line is what it prints."""
    blocks = python_blocks()
    assert blocks
    for block in blocks:
        expected = [m.group(1) for m in re.finditer(r"^print\(.*\)\s+#> (.+)$", block, re.M)]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, str(README), "exec"), {"__name__": "readme"})
        printed = out.getvalue().splitlines()
        for value in expected:
            assert value in printed, (value, printed)


def test_readme_gives_exactly_two_setup_commands() -> None:
    """A new user gets two commands: run the main job, run the tests."""
    commands = re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(commands) == 2
    assert "examples/quickstart.py" in commands[0]
    assert "pytest" in commands[1]


def test_readme_quotes_the_latest_benchmark_summary() -> None:
    """The README's speed claims are the "In short" lines of the latest benchmarks/run.py report, verbatim."""
    report = (ROOT / "benchmarks" / "report.md").read_text(encoding="utf-8")
    summary = report.split("## In short\n", 1)[1].split("\n## ", 1)[0].strip().splitlines()
    assert len(summary) == 2 and all(line.startswith("- ") for line in summary)
    speed = README.read_text(encoding="utf-8").split("## Speed\n", 1)[1].split("\n## ", 1)[0]
    assert [line for line in speed.splitlines() if line.startswith("- ")] == summary


def test_readme_and_benchmarks_page_give_one_bench_command() -> None:
    """The README's command for the benchmarks is the one docs/benchmarks.md gives."""
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    run_it = page.split("## Run it\n", 1)[1].split("\n## ", 1)[0]
    (command,) = re.findall(r"```bash\n(.*?)\n```", run_it, re.S)
    assert "benchmarks/run.py" in command and "'.[bench]'" in command
    assert f"`{command}`" in README.read_text(encoding="utf-8")


def test_readme_says_how_long_its_test_command_took() -> None:
    """The README's timing of its test command is benchmarks/first_run.md's, for the same command."""
    report = (ROOT / "benchmarks" / "first_run.md").read_text(encoding="utf-8")
    quick = r"^\| `pip install -e '\.\[test\]'` \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| [\d.]+ \| (.+?) \|"
    row = re.search(quick, report, re.M)
    assert row is not None, report
    packages, install, suite, cpu, closing = row.groups()
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert f"{install} s to install {packages} packages, then {suite} s for the suite ({cpu} s of CPU time)" in text
    assert f"`{closing}`" in text

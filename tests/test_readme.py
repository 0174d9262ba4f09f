"""The README's code runs as shown."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


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

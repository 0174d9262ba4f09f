"""docs/cli.md shows what the commands really print, and the exit codes they really return.

The page's files (fenced blocks with ``title="NAME"``) are written to a fresh folder; each ```bash
block holding one ``scopetool ...`` (or ``cat FILE``) command and directly followed by a ```text or
```json block is run there, in page order, and must print exactly that block: standard output, then
standard error (``> FILE`` sends standard output to the file). A trailing ``# exit N`` states a
non-zero exit code.

``python tests/cli/test_cli_docs.py`` rewrites those blocks (and the ``# exit N`` comments) from a run.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from scopetool.cli import main

PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
FENCE = re.compile(r"^```(?P<lang>[\w-]*)(?P<info>[^`]*)$")
TITLE = re.compile(r'title="(?P<name>[^"]+)"')
EXIT = re.compile(r"\s+# exit (?P<code>\d+)$")


@dataclass(frozen=True)
class Block:
    """One fenced block of the page: its fence lines (0-based), language, info string and text."""

    start: int
    end: int
    lang: str
    info: str
    text: str


@dataclass(frozen=True)
class Example:
    """A command block and the output block that follows it."""

    command: Block
    output: Block

    @property
    def line(self) -> str:
        """The command line, without its exit comment."""
        return EXIT.sub("", self.command.text.strip())

    @property
    def code(self) -> int:
        """The exit code the page states (0 when it states none)."""
        found = EXIT.search(self.command.text.strip())
        return int(found["code"]) if found else 0


def blocks(lines: list[str]) -> list[Block]:
    """The page's top-level fenced blocks."""
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None or not opening["lang"]:
            index += 1
            continue
        end = index + 1
        while lines[end] != "```":
            end += 1
        text = "".join(line + "\n" for line in lines[index + 1 : end])
        found.append(Block(index, end, opening["lang"], opening["info"], text))
        index = end + 1
    return found


def examples(lines: list[str]) -> list[Example]:
    """The command blocks that are followed, across blank lines only, by an output block."""
    found: list[Example] = []
    page = blocks(lines)
    for first, second in itertools.pairwise(page):
        runnable = first.lang == "bash" and first.text.count("\n") == 1
        if runnable and second.lang in ("text", "json") and not TITLE.search(second.info):
            between = lines[first.end + 1 : second.start]
            if all(not line.strip() for line in between):
                found.append(Example(first, second))
    return found


def files(lines: list[str]) -> dict[str, str]:
    """The page's files: blocks with a ``title``."""
    return {title["name"]: block.text for block in blocks(lines) if (title := TITLE.search(block.info))}


def run(command: str, folder: Path) -> tuple[str, int]:
    """Run one command line of the page in `folder`: what it prints (output, then errors) and its exit code."""
    words = shlex.split(command)
    if words[0] == "cat":
        return (folder / words[1]).read_text(encoding="utf-8"), 0
    assert words[0] == "scopetool", command
    target: str | None = None
    if ">" in words:
        target = words[words.index(">") + 1]
        words = words[: words.index(">")]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(words[1:])
    if target is not None:
        (folder / target).write_text(out.getvalue(), encoding="utf-8")
        return err.getvalue(), code
    return out.getvalue() + err.getvalue(), code


@contextlib.contextmanager
def page_folder(folder: Path, lines: list[str]):  # type: ignore[no-untyped-def]
    """Work in `folder` holding the page's files; leave sys.path and sys.modules as they were."""
    for name, text in files(lines).items():
        (folder / name).write_text(text, encoding="utf-8")
    before_path, before_modules = list(sys.path), set(sys.modules)
    with contextlib.chdir(folder):
        try:
            yield
        finally:
            sys.path[:] = before_path
            for name in set(sys.modules) - before_modules:
                if name in ("tools", "_scopetool_target"):
                    del sys.modules[name]


def test_page_examples_print_what_the_page_shows(tmp_path: Path) -> None:
    """Every command on docs/cli.md prints exactly the block after it and exits with the stated code."""
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    found = examples(lines)
    assert len(found) >= 12
    assert {"tools.py", "calls.jsonl"} <= set(files(lines))
    with page_folder(tmp_path, lines):
        for example in found:
            printed, code = run(example.line, tmp_path)
            assert (printed, code) == (example.output.text, example.code), example.line


def update_page(folder: Path) -> None:
    """Rewrite the page's output blocks and exit comments from a run in `folder`."""
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    with page_folder(folder, lines):
        results = [(example, *run(example.line, folder)) for example in examples(lines)]
    for example, printed, code in reversed(results):
        lines[example.output.start + 1 : example.output.end] = printed.splitlines()
        suffix = f"  # exit {code}" if code else ""
        lines[example.command.start + 1 : example.command.end] = [example.line + suffix]
    PAGE.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        update_page(Path(directory))
    print(f"rewrote {PAGE}")

"""The documentation's code runs, and prints what it says it prints.

- Every ```python block in ``docs/**/*.md`` runs. The blocks of one page share one namespace and run
  in order, so a page can build an example up step by step; each block is its own test (it reruns the
  blocks before it, silently).
- Every ```python block in a docstring under ``scopetool/`` (modules, classes, functions and attribute
  docstrings, which is where the `Example:` sections of the public objects and provider modules live)
  runs on its own.
- A comment ``#> text`` states one line the block prints, in order: on a line of its own after the
  statement that prints it, or at the end of that statement (``print(x)  #> 5``). The lines a block
  prints must be exactly the stated ones, no more and no fewer.
- A sample that must not run uses another fence language: ``bash``, ``text``, ``json``, or ``py`` for
  Python that is shown but not run (code of other libraries, on the comparison page only).

To write (or rewrite) the ``#>`` lines of a page from what its blocks print, run
``python tests/test_docs.py docs/page.md``: each top-level statement's output goes right after it.
"""

from __future__ import annotations

import ast
import contextlib
import html
import importlib
import importlib.util
import inspect
import io
import itertools
import os
import re
import subprocess
import sys
import tokenize
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PACKAGE = ROOT / "scopetool"

FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n`]*$")
SHOWN_ONLY_PAGES = {"coming-from.md"}  # the only pages that show other libraries' code, in ```py blocks
TESTED_ELSEWHERE = {("mcp-http.md", "oauth_call.py"): "tests/mcp_tests/test_auth_server.py"}
"""Other ```py blocks, by page and fence title: each needs a peer a docs run has not (an authorization server), and
the test file named runs its exact text, read from the page."""
MISSING_PAGES_ALLOWED = {  # written elsewhere; linked from the nav
    "reliability.md",
    "reliability-limits.md",
    "integrations/langchain.md",
    "integrations/mcp-sdk.md",
}


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language and its dedented source."""

    origin: str
    line: int
    lang: str
    source: str
    fence_indent: int
    short_lines: tuple[int, ...]
    """Lines (1-based, in the file) indented less than the fence: a renderer ends the block there."""

    @property
    def label(self) -> str:
        return f"{self.origin}:{self.line}"


def fenced_blocks(text: str, origin: str, first_line: int = 1) -> list[Block]:
    """The fenced blocks of Markdown `text`, including ones indented under lists, tabs and admonitions."""
    blocks: list[Block] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent = len(opening["indent"])
        body: list[str] = []
        short: list[int] = []
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            line = lines[end]
            stripped = len(line) - len(line.lstrip(" \t"))
            if line.strip() and stripped < indent:
                short.append(first_line + end)
            body.append(line[min(indent, stripped) :])
            end += 1
        blocks.append(
            Block(
                origin=origin,
                line=first_line + index,
                lang=opening["lang"],
                source="\n".join(body) + "\n",
                fence_indent=indent,
                short_lines=tuple(short),
            )
        )
        index = end + 1
    return blocks


# -- the pages


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def page_blocks(page: Path) -> list[Block]:
    return [
        block
        for block in fenced_blocks(page.read_text(encoding="utf-8"), page.relative_to(ROOT).as_posix())
        if block.lang == "python"
    ]


PAGE_CASES = [
    pytest.param(page, number, id=f"{page.relative_to(DOCS).as_posix()}:{block.line}")
    for page in pages()
    for number, block in enumerate(page_blocks(page))
]


# -- the docstrings


def docstrings() -> list[tuple[str, int, str]]:
    """Every docstring in the package: (where, first line, cleaned text), attribute docstrings included."""
    found: list[tuple[str, int, str]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(ROOT).as_posix()
        found.extend(_docstrings_in(tree, where, ""))
    return found


def _docstrings_in(node: ast.AST, where: str, prefix: str) -> list[tuple[str, int, str]]:
    found: list[tuple[str, int, str]] = []
    body = getattr(node, "body", [])
    if body and _is_string(body[0]):
        found.append((f"{where}::{prefix or '<module>'}", body[0].lineno, inspect.cleandoc(body[0].value.value)))
    for previous, statement in itertools.pairwise(body):
        if _is_string(statement) and isinstance(previous, ast.Assign | ast.AnnAssign):
            targets = previous.targets if isinstance(previous, ast.Assign) else [previous.target]
            name = ".".join(ast.unparse(t) for t in targets)
            found.append((f"{where}::{prefix}{name}", statement.lineno, inspect.cleandoc(statement.value.value)))
    for child in body:
        if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            found.extend(_docstrings_in(child, where, f"{prefix}{child.name}."))
    return [(label.removesuffix("."), line, text) for label, line, text in found]


def _is_string(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def docstring_blocks() -> list[Block]:
    return [
        block
        for where, line, text in docstrings()
        for block in fenced_blocks(text, where, first_line=line)
        if block.lang == "python"
    ]


DOCSTRING_BLOCKS = docstring_blocks()


# -- running a block


def expected_lines(source: str) -> list[str]:
    """The ``#>`` comments of `source`, in order: the lines it says it prints."""
    return [
        token.string[3:] if token.string.startswith("#> ") else token.string[2:]
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT and token.string.startswith("#>")
    ]


def run_block(block: Block, namespace: dict[str, object]) -> list[str]:
    """Run one block in `namespace`; the lines it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.source, f"<{block.label}>", "exec"), namespace)
    return out.getvalue().splitlines()


@contextlib.contextmanager
def module_namespace(name: str):  # type: ignore[no-untyped-def]
    """A real, importable module to run samples in (pickling, dataclasses and pydantic need one)."""
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        yield module.__dict__
    finally:
        del sys.modules[name]


def check(block: Block, namespace: dict[str, object]) -> None:
    printed = [line.rstrip() for line in run_block(block, namespace)]
    expected = [line.rstrip() for line in expected_lines(block.source)]
    assert printed == expected, (
        f"{block.label}: the block printed\n" + "\n".join(f"  #> {line}" for line in printed) + "\n"
        "but says it prints\n" + "\n".join(f"  #> {line}" for line in expected)
    )


def missing_here(blocks: list[Block]) -> str | None:
    """Why these blocks cannot run in this environment, or None: the docs' DBOS samples use SQLite."""
    if any("DbosBackend" in block.source for block in blocks):
        from scopetool.driver.dbos import _sqlite_problem  # pyright: ignore[reportPrivateUsage]

        return _sqlite_problem("sqlite:///calls.sqlite")
    return None


@pytest.mark.parametrize(("page", "number"), PAGE_CASES)
def test_docs_page_sample_runs_and_prints_what_it_says(page: Path, number: int) -> None:
    """A page's Python block runs after the blocks before it and prints exactly its ``#>`` lines."""
    blocks = page_blocks(page)
    problem = missing_here(blocks[: number + 1])
    if problem is not None:
        pytest.skip(problem)
    with module_namespace(f"docs_{page.stem.replace('-', '_')}_{number}") as namespace:
        for earlier in blocks[:number]:
            with contextlib.redirect_stdout(io.StringIO()):
                try:
                    exec(compile(earlier.source, f"<{earlier.label}>", "exec"), namespace)
                except ImportError:  # an optional package missing (skipped in a quick run), or its own test fails too
                    raise
                except Exception as error:  # reported as this block's setup failing
                    pytest.fail(f"an earlier block ({earlier.label}) failed, see its own test: {error!r}")
        check(blocks[number], namespace)


NEEDS_BY_FILE: dict[str, tuple[str, ...]] = {"scopetool/mcp/limits.py": ("limits",)}
"""Modules whose examples need a package they import only when used (its absence is no ImportError)."""


@pytest.mark.parametrize(
    "block",
    [
        pytest.param(block, marks=[pytest.mark.needs(*NEEDS_BY_FILE[path])] if path in NEEDS_BY_FILE else [])
        for block in DOCSTRING_BLOCKS
        for path in [block.origin.partition("::")[0]]
    ],
    ids=[block.label for block in DOCSTRING_BLOCKS],
)
def test_docstring_example_runs_and_prints_what_it_says(block: Block) -> None:
    """A docstring's Python block runs on its own and prints exactly its ``#>`` lines."""
    with module_namespace("docstring_example") as namespace:
        check(block, namespace)


# Docstrings whose example has a line indented less than its fence. Python runs it, but a Google-style
# renderer (griffe, and so the API reference) ends the Example section at that line and reads what follows
# as another section. Each entry is a known defect in scopetool/; fixing it turns the xfail into a failure
# that asks for the entry to be removed (and the matching options in docs/api/tools.md).
BROKEN_FENCES: set[str] = set()


@pytest.mark.parametrize(
    "block",
    [
        pytest.param(
            block,
            marks=[pytest.mark.xfail(reason="a nested 'Args:' line is dedented out of the example", strict=True)]
            if block.origin in BROKEN_FENCES
            else [],
        )
        for block in DOCSTRING_BLOCKS
    ],
    ids=[block.label for block in DOCSTRING_BLOCKS],
)
def test_docstring_example_stays_inside_its_section(block: Block) -> None:
    """No line of a docstring example is indented less than its fence, so the reference renders it whole."""
    assert block.short_lines == (), f"{block.label}: lines {block.short_lines} leave the example's section"


def test_public_objects_with_examples_are_covered() -> None:
    """The docstring scan finds the examples of the public objects and of every provider module."""
    origins = {block.origin for block in DOCSTRING_BLOCKS}
    providers = sorted(p.stem for p in (PACKAGE / "providers").glob("[!_]*.py"))
    for module in providers:
        assert f"scopetool/providers/{module}.py::<module>" in origins, module
    for name in ("Definition", "Registry", "Signature", "Guard", "Failure", "InputRequest", "Output"):
        assert any(origin.endswith(f"::{name}") for origin in origins), name


def fence_title(text: str, block: Block) -> str | None:
    """The ``title="..."`` of `block`'s opening fence in `text`, or None."""
    found = re.search(r'title="([^"]*)"', text.splitlines()[block.line - 1])
    return None if found is None else found[1]


def test_code_samples_use_known_fences() -> None:
    """Shown-only Python (```py) appears only on the comparison page, or where a named test runs it; every block
    names its language."""
    for page in pages():
        text = page.read_text(encoding="utf-8")
        where = page.relative_to(DOCS).as_posix()
        for block in fenced_blocks(text, page.name):
            assert block.lang, f"{page.relative_to(ROOT)}:{block.line}: a fence without a language"
            if block.lang == "py":
                assert page.name in SHOWN_ONLY_PAGES or (where, fence_title(text, block)) in TESTED_ELSEWHERE, (
                    f"{page.relative_to(ROOT)}:{block.line}: use ```python"
                )


@pytest.mark.parametrize(("page", "title"), sorted(TESTED_ELSEWHERE))
def test_a_sample_tested_elsewhere_is_read_by_its_test(page: str, title: str) -> None:
    """Each sample run outside the docs run is on its page, and its test reads that page and that title."""
    text = (DOCS / page).read_text(encoding="utf-8")
    titles = [fence_title(text, block) for block in fenced_blocks(text, page) if block.lang == "py"]
    assert titles.count(title) == 1, titles
    test = (ROOT / TESTED_ELSEWHERE[page, title]).read_text(encoding="utf-8")
    assert f'docs_sample("{page}", "{title}")' in test


def test_every_page_with_code_has_runnable_samples() -> None:
    """The docs carry runnable samples: guarding against a fence-language typo that would skip them all."""
    assert len(PAGE_CASES) >= 40
    assert len(DOCSTRING_BLOCKS) >= 15


# -- the site


def public_modules() -> list[str]:
    """Every public module of scopetool: no part of its dotted name starts with an underscore (a package is its
    ``__init__.py``), found from the files, so a new module is found without anyone listing it."""
    found: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if not any(part.startswith("_") for part in parts):
            found.append(".".join(parts))
    return found


def api_directives(folder: Path = DOCS / "api") -> list[str]:
    """The object of each ``:::`` entry of the pages under `folder`, in page order."""
    return [
        line.split()[1]
        for page in sorted(folder.rglob("*.md"))
        for line in page.read_text(encoding="utf-8").splitlines()
        if line.startswith("::: ")
    ]


@pytest.mark.parametrize("module", [module for module in public_modules() if module != "scopetool"])
def test_every_public_module_has_an_api_page(module: str) -> None:
    """A public module of scopetool is documented whole by a ``:::`` entry of its own under docs/api/."""
    assert module in api_directives(), f"{module} has no API page: add docs/api/...md with '::: {module}' to the nav"


def test_api_reference_covers_the_public_surface() -> None:
    """Every name in `scopetool.__all__` and every other public module has exactly one ``:::`` entry, all under
    docs/api/ (one home per object: a guide page links its reference instead of rendering it again)."""
    import scopetool

    directives = api_directives()
    assert len(directives) == len(set(directives)), sorted(d for d in directives if directives.count(d) > 1)
    modules = public_modules()
    assert {"scopetool.mcp.server", "scopetool.integrations.langchain", "scopetool.cli"} <= set(modules)
    expected = {f"scopetool.{name}" for name in scopetool.__all__} | set(modules) - {"scopetool"}
    assert set(directives) == expected, (expected - set(directives), set(directives) - expected)
    assert [d for d in api_directives(DOCS) if d not in directives] == []


def _nav_pages(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [page for item in node for page in _nav_pages(item)]
    if isinstance(node, dict):
        return [page for value in node.values() for page in _nav_pages(value)]
    return []


@pytest.mark.needs("yaml")
def test_nav_lists_every_page_and_only_existing_ones() -> None:
    """mkdocs.yml's nav names every page in docs/, and every page it names exists (except the two
    reliability pages, which are written elsewhere and may not have landed yet)."""
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["strict"] is True
    listed = _nav_pages(config["nav"])
    assert len(listed) == len(set(listed))
    missing = {page for page in listed if not (DOCS / page).is_file()}
    assert missing <= MISSING_PAGES_ALLOWED, missing
    present = {page.relative_to(DOCS).as_posix() for page in pages()}
    assert present <= set(listed), present - set(listed)


@pytest.mark.needs("yaml")
def test_the_navigation_starts_short() -> None:
    """The sidebar's first screen is a few collapsed sections, not every page expanded."""
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    features = set(config["theme"]["features"])
    assert not features & {"navigation.sections", "navigation.expand"}, features
    assert len(config["nav"]) <= 10, [next(iter(entry)) for entry in config["nav"]]


@pytest.mark.parametrize("page", ["index.md", "getting-started.md"])
def test_the_start_pages_show_every_path(page: str) -> None:
    """The home page and getting-started link each way in: providers, frameworks, MCP server, client, gateway."""
    text = (DOCS / page).read_text(encoding="utf-8")
    assert "## Choose your path" in text
    for target in ("providers/index.md", "integrations/index.md", "mcp-server.md", "mcp-client.md", "mcp-gateway.md"):
        assert f"]({target}" in text, target


@dataclass(frozen=True)
class Site:
    """A built documentation site and what ``mkdocs build`` printed."""

    folder: Path
    output: str


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    """The site as ``mkdocs build --strict`` writes it (built once for the tests below)."""
    folder = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    completed = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return Site(folder, completed.stdout + completed.stderr)


NEEDS_MKDOCS = pytest.mark.needs("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python", "ruff")
# Internals the API reference once published: the C fast path's helpers on InputDecoder, provider
# constants that their modules do not export, type variables, dunder methods and private slots.
KNOWN_INTERNALS = (
    "scopetool.InputDecoder.counter",
    "scopetool.InputDecoder.string_colons",
    "scopetool.InputDecoder.call_flags",
    "scopetool.InputDecoder.may_hold_non_finite",
    "scopetool.providers.anthropic.NAME_LIMIT",
    "scopetool.providers.openai_chat.DESCRIPTION_LIMIT",
    "scopetool.driver.dbos.T",
    "scopetool.Contract.__repr__",
    "scopetool.Registry.__slots__",
)


def api_headings(site: Site) -> dict[str, list[str]]:
    """The documented objects of each API reference page (their heading anchors), by page."""
    return {
        page.relative_to(site.folder).as_posix(): re.findall(
            r'<h[2-6] id="([^"]+)" class="doc doc-heading">', page.read_text(encoding="utf-8")
        )
        for page in sorted((site.folder / "api").rglob("index.html"))
    }


def _is_module(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


@NEEDS_MKDOCS
def test_mkdocs_build_strict(site: Site) -> None:
    """``mkdocs build --strict`` passes: no broken link, anchor or reference, no griffe warning."""
    assert (site.folder / "index.html").is_file()
    assert "Formatting signatures requires" not in site.output, site.output


@NEEDS_MKDOCS
def test_output_samples_wrap_where_code_scrolls(site: Site) -> None:
    """Output samples carry their language, which the stylesheet wraps; a code line too long scrolls visibly."""
    page = (site.folder / "cli" / "index.html").read_text(encoding="utf-8")
    assert '<div class="language-text highlight">' in page and '<div class="language-bash highlight">' in page
    css = (site.folder / "stylesheets" / "extra.css").read_text(encoding="utf-8")
    wrapped = css.partition(".md-typeset .language-text pre > code")[2].partition("}")[0]
    assert "white-space: pre-wrap" in wrapped
    assert "scrollbar-width: auto" in css.partition(".md-typeset pre > code {")[2].partition("}")[0]


@NEEDS_MKDOCS
def test_api_reference_shows_only_the_public_surface(site: Site) -> None:
    """Each documented object is in its module's ``__all__`` or a class member without a leading underscore."""
    documented = [name for names in api_headings(site).values() for name in names]
    assert "scopetool.Contract.prepare" in documented and "scopetool.InputDecoder.decode" in documented
    assert [name for name in KNOWN_INTERNALS if name in documented] == []
    problems = [f"{name}: an underscored name" for name in documented if "._" in name]
    modules = {name for name in documented if name.count(".") < 3 and _is_module(name)} | {"scopetool"}
    for name in documented:
        owner, _, member = name.rpartition(".")
        if owner in modules and name not in modules and member not in importlib.import_module(owner).__all__:
            problems.append(f"{name}: not in {owner}.__all__")
    assert problems == []


@NEEDS_MKDOCS
def test_api_signatures_are_formatted_to_the_configured_width(site: Site) -> None:
    """Every call signature in the API reference fits mkdocstrings' ``line_length``: long ones are broken up."""
    width = int(re.search(r"^\s+line_length: (\d+)$", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M)[1])
    signatures = [
        html.unescape(re.sub(r"<[^>]+>", "", block))
        for page in sorted((site.folder / "api").rglob("index.html"))
        for block in re.findall(
            r'<div class="(?:language-python )?doc-signature highlight"><pre><span></span><code>(.*?)</code></pre>',
            page.read_text(encoding="utf-8"),
            re.S,
        )
    ]
    callables = [signature for signature in signatures if re.match(r"[\w.]+\(", signature)]  # not attributes
    assert any("\n" in signature.strip() for signature in callables)  # some were long enough to break
    too_wide = [line for signature in callables for line in signature.splitlines() if len(line) > width]
    assert too_wide == []


# -- writing the #> lines: python tests/test_docs.py docs/page.md ...


def _fill(block: Block, namespace: dict[str, object]) -> str:
    """`block`'s source with its ``#>`` lines rewritten from a run: each top-level statement's output after it."""
    source = "".join(line for line in io.StringIO(block.source) if not line.lstrip().startswith("#>"))
    source = re.sub(r"[ \t]+#>.*$", "", source, flags=re.M)
    tree = ast.parse(source)
    lines = source.splitlines()
    insertions: dict[int, list[str]] = {}
    for statement in tree.body:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(ast.Module(body=[statement], type_ignores=[]), f"<{block.label}>", "exec"), namespace)
        printed = out.getvalue().splitlines()
        if printed:
            insertions[statement.end_lineno or statement.lineno] = [f"#> {line}".rstrip() for line in printed]
    result: list[str] = []
    for number, line in enumerate(lines, start=1):
        result.append(line)
        result.extend(insertions.get(number, []))
    return "\n".join(result) + "\n"


def update_page(page: Path) -> None:
    """Rewrite the ``#>`` lines of every Python block of `page` from what the blocks print."""
    text = page.read_text(encoding="utf-8")
    lines = text.splitlines()
    blocks = page_blocks(page)
    with module_namespace(f"docs_update_{page.stem.replace('-', '_')}") as namespace:
        filled = [_fill(block, namespace) for block in blocks]
    for block, new in reversed(list(zip(blocks, filled, strict=True))):
        start = block.line  # the fence's line number is 1-based: lines[start] is the first body line
        end = start
        while lines[end].strip() != "```":
            end += 1
        pad = " " * block.fence_indent
        lines[start:end] = [pad + line if line else "" for line in new.splitlines()]
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    for argument in sys.argv[1:]:
        update_page(Path(argument).resolve())
        print(f"updated {argument}")

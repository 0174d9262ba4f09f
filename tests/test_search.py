"""`ToolIndex`: the words a tool is found by, the BM25 ranking, and its two engines' agreement."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import scopetool._search as search_module
from scopetool import Definition, ToolIndex

BFCL = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "bfcl_sample.json.gz"


def definition(name: str, description: str = "", **properties: str) -> Definition:
    """A definition whose parameters are `properties`, each with its description."""
    schema = {
        "type": "object",
        "properties": {key: {"type": "string", "description": text} for key, text in properties.items()},
    }
    return Definition(name=name, description=description, input_schema=schema)


@pytest.fixture(params=[pytest.param("bm25s", marks=pytest.mark.needs("bm25s")), "python"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test runs on bm25s and on the pure-Python ranking."""
    if request.param == "python":
        monkeypatch.setattr(search_module, "_load_bm25s", lambda: None)
    yield request.param


def names(found: list[Definition]) -> list[str]:
    """The names of what a search found."""
    return [d.name for d in found]


def test_words_split_names_on_separators_and_case() -> None:
    """Names split on ``_``, ``.``, ``-``, digits and case, lower-cased."""
    assert search_module.words("getUserID") == ["get", "user", "id"]
    assert search_module.words("math.hypot-v2_HTTPServer") == ["math", "hypot", "v", "2", "http", "server"]


def test_name_parts_find_the_tool(engine: str) -> None:
    """A query word that is one part of a camel-case, dashed or snake-case name finds the tool."""
    index = ToolIndex([definition("sendEmail"), definition("calendar-create_event"), definition("noop")])
    assert names(index.search("create an event")) == ["calendar-create_event"]
    assert names(index.search("email someone")) == ["sendEmail"]
    assert names(index.search("EVENT")) == ["calendar-create_event"]


def test_parameters_and_their_descriptions_are_searched(engine: str) -> None:
    """Parameter names and parameter descriptions are words a tool is found by."""
    index = ToolIndex(
        [
            definition("lookup", "Look a record up.", postcode="The customer's postal code."),
            definition("convert", "Convert units.", celsius="Degrees to convert."),
        ]
    )
    assert names(index.search("postcode")) == ["lookup"]
    assert names(index.search("postal")) == ["lookup"]
    assert names(index.search("degrees celsius")) == ["convert"]


def test_a_name_outweighs_a_description(engine: str) -> None:
    """A word in a tool's name ranks it above a tool with the word only in its description."""
    index = ToolIndex(
        [
            definition("list_files", "List the files of a folder, or the weather of a folder's city."),
            definition("weather", "Tell the forecast."),
        ]
    )
    assert names(index.search("weather")) == ["weather", "list_files"]


def test_ties_keep_catalog_order_and_limit_cuts(engine: str) -> None:
    """Tools that score the same come in catalog order; `limit` keeps the best ones."""
    index = ToolIndex([definition(f"tool_{n}", "Reads a page.") for n in "zyxw"])
    assert names(index.search("page", limit=3)) == ["tool_z", "tool_y", "tool_x"]


def test_queries_with_no_known_word_find_nothing(engine: str) -> None:
    """Function words and unknown words match nothing; an empty catalog answers empty."""
    index = ToolIndex([definition("the_tool", "Does the thing.")])
    assert names(index.search("the a of with please")) == []
    assert names(index.search("zebra")) == []
    assert names(index.search("thing")) == ["the_tool"]
    assert ToolIndex([]).search("thing") == []
    assert ToolIndex([definition("the")]).search("the") == []


def test_bad_arguments_are_refused() -> None:
    """A query that is not a str, a limit that is not a positive int and a catalog item that is not a Definition."""
    index = ToolIndex([definition("ping")])
    with pytest.raises(TypeError, match="a search query is a str, not bytes"):
        index.search(b"ping")  # type: ignore[arg-type]
    for limit in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="limit must be a positive int"):
            index.search("ping", limit=limit)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"definitions\[1\] is a str, not a Definition"):
        ToolIndex([definition("ping"), "pong"])  # type: ignore[list-item]


def test_index_presents_its_catalog() -> None:
    """`definitions`, `len` and `repr` describe the catalog as given."""
    catalog = [definition("b"), definition("a")]
    index = ToolIndex(catalog)
    assert index.definitions == tuple(catalog)
    assert len(index) == 2
    assert repr(index) == "ToolIndex(2 tools)"


def bfcl() -> dict[str, Any]:
    """The public catalog and labelled queries the benchmark measures on."""
    data: dict[str, Any] = json.loads(gzip.decompress(BFCL.read_bytes()))
    return data


@pytest.mark.needs("bm25s")
def test_engines_rank_a_real_catalog_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """On 1,064 real tools, bm25s and pure Python give the same five best for every labelled query."""
    data = bfcl()
    catalog = [
        Definition(name=t["name"].replace(".", "-"), description=t["description"], input_schema=t["parameters"])
        for t in data["tools"]
    ]
    fast = ToolIndex(catalog)
    monkeypatch.setattr(search_module, "_load_bm25s", lambda: None)
    plain = ToolIndex(catalog)
    assert len(catalog) > 1000
    for query in data["queries"]:
        assert names(fast.search(query["query"])) == names(plain.search(query["query"])), query["id"]


def test_deferral_is_the_tools_choice_then_the_registrys_rule() -> None:
    """A tool's own mark wins; unmarked tools follow the registry's rule: shown, deferred, or deferred past a size."""
    from scopetool import Registry, bind, tool

    @tool(defer_loading=True)
    def hidden() -> str:
        """Hidden until searched."""
        return "h"

    @tool
    def plain() -> str:
        """No mark."""
        return "p"

    @tool(defer_loading=False)
    def pinned() -> str:
        """Always shown."""
        return "s"

    assert hidden.defer_loading() is True and plain.defer_loading() is None
    assert Registry(hidden, plain, pinned).deferred_names() == ["hidden"]
    assert Registry(hidden, plain, pinned, defer_loading=True).deferred_names() == ["hidden", "plain"]
    assert Registry(hidden, plain, pinned, defer_loading=2).deferred_names() == ["hidden", "plain"]
    assert Registry(hidden, plain, pinned, defer_loading=3).deferred_names() == ["hidden"]
    overridden = Registry(bind(hidden, defer_loading=False), bind(plain, defer_loading=True))
    assert overridden.deferred_names() == ["plain"]
    assert overridden["hidden"].defer_loading is False
    kept = Registry(hidden, plain, defer_loading=True).with_deps(object())
    assert kept.defer_loading is True and kept.deferred_names() == ["hidden", "plain"]
    assert kept["hidden"].with_deps(1).defer_loading is True
    assert kept.is_deferred("plain") and not kept.is_deferred("nothing")


def test_bad_deferral_settings_are_refused() -> None:
    """A mark that is not a bool or None, a rule that is not a bool or a count, a failing declaration."""
    from scopetool import InvalidToolError, Registry, bind, tool

    with pytest.raises(InvalidToolError, match="defer_loading must be True, False or None, not 'yes'"):
        tool(defer_loading="yes")(lambda: 1)  # type: ignore[call-overload]

    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    with pytest.raises(InvalidToolError, match="bind: defer_loading must be True, False or None"):
        bind(ping, defer_loading=1)  # type: ignore[arg-type]
    for rule in (-1, 1.5, "all"):
        with pytest.raises(ValueError, match="Registry: defer_loading must be a bool or a non-negative int"):
            Registry(ping, defer_loading=rule)  # type: ignore[arg-type]

    class Broken:
        def definition(self) -> Definition:
            return ping.definition()

        async def call(self, invocation: Any) -> Any:
            raise NotImplementedError

        def defer_loading(self) -> bool:
            raise RuntimeError("no")

    with pytest.raises(InvalidToolError, match="defer_loading: the declaration raised RuntimeError"):
        bind(Broken())

    class Declared(Broken):
        def defer_loading(self) -> bool:
            return True

    assert bind(Declared()).defer_loading is True


def test_a_schema_without_properties_and_no_bm25s(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool whose schema has no properties is found by name; without bm25s installed the pure-Python ranking runs."""
    import sys

    monkeypatch.setitem(sys.modules, "bm25s", None)
    assert search_module._load_bm25s() is None
    bare = Definition(name="reboot_server", input_schema={"type": "object"})
    assert names(ToolIndex([bare]).search("server")) == ["reboot_server"]


def test_the_deferred_index_is_shared_and_rebuilt_after_a_registration() -> None:
    """Every search of a registry uses one index over its deferred tools; registering more rebuilds it."""
    from scopetool import Catalog, Registry, tool

    @tool(defer_loading=True)
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return city

    @tool(defer_loading=True)
    def get_tide(port: str) -> str:
        """Tide times at a port."""
        return port

    registry = Registry(get_weather)
    first = registry.deferred_index()
    assert registry.deferred_index() is first and len(first) == 1
    assert [d.name for d in Catalog(registry).search("weather")] == ["get_weather"]
    registry.register(get_tide)
    assert registry.deferred_index() is not first
    assert [d.name for d in Catalog(registry).search("tide port")] == ["get_tide"]

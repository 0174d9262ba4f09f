"""Searching a catalog of tool definitions: `ToolIndex`, a BM25 ranking over each tool's words.

A tool's words are those of its name (split on ``_``, ``.``, ``-``, digits and case: ``getUserID`` is
get, user, id), counted `NAME_WEIGHT` times, then those of its description, of its parameters' names
and of their descriptions. A query is split the same way; English function words ("the", "please",
"with") are left out of both. Documents are ranked by Okapi BM25 (Lucene's variant: ``k1`` 1.5, ``b``
0.75), best first, ties in catalog order.

The scores are computed by `bm25s` (sparse matrices over numpy) when it is installed (``pip install
'scopetool[search]'``), and by the same formula in pure Python otherwise: both give the same ranking
(up to float rounding on near ties), bm25s much faster on large catalogs. `benchmarks/search.py`
measures both, and the plain BM25 over name and description other libraries ship, on a public catalog
(its figures are in ``docs/tool-search.md``).
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any, Final, cast, final

from ._definition import Definition
from ._errors import InvalidToolError

if TYPE_CHECKING:
    from types import ModuleType

__all__ = [
    "NAME_WEIGHT",
    "SEARCH_TOOL",
    "ToolIndex",
    "check_defer_loading",
    "check_deferral_rule",
    "is_deferred",
    "tool_words",
    "words",
]

_WORD: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")

NAME_WEIGHT: Final = 3
"""How many times a tool's name words count against one word of its description (measured on BFCL)."""

SEARCH_TOOL: Final = "search_tools"
"""The name of the local search tool the exports add when tools are deferred (FastMCP's and pydantic-ai's name)."""

_K1: Final = 1.5
_B: Final = 0.75

# Words that say nothing about which tool is meant: the commonest English function words and the
# phrasing of requests ("can you please find me..."). Kept short on purpose: a domain word is never here.
_STOP_WORDS: Final = frozenset(
    """a about above after all also am an and any are as at be been being but by can could did do does for
    from had has have he her here him his how i if in into is it its just may me might my no not now of on
    once only or our out over please same she should so some such than that the their them then there these
    they this those through to too under until up us very was we were what when where which while who whom
    why will with would you your""".split()  # noqa: SIM905 - a paragraph of words reads better than 100 quoted ones
)


def words(text: str) -> list[str]:
    """The lower-cased words of `text`, split on punctuation, digits and case (``getUserID`` -> get, user, id)."""
    found: list[str] = _WORD.findall(text)
    return " ".join(found).lower().split()


def tool_words(definition: Definition) -> list[str]:
    """The words a definition is indexed under (function words left out).

    Its name's words `NAME_WEIGHT` times, then its description's, its parameters' names' and their descriptions'.
    """
    parts = [definition.description]
    properties: object = definition.input_schema.get("properties")
    if isinstance(properties, dict):
        for name, spec in cast("dict[str, object]", properties).items():
            parts.append(name)
            description = cast("dict[str, object]", spec).get("description") if isinstance(spec, dict) else None
            if isinstance(description, str):
                parts.append(description)
    stop = _STOP_WORDS
    return [word for word in words(definition.name) * NAME_WEIGHT + words(" ".join(parts)) if word not in stop]


def check_defer_loading(value: object, where: str) -> bool | None:
    """`value` as a tool's deferral mark (True, False or None); an error naming `where` otherwise."""
    if value is None or isinstance(value, bool):
        return value
    raise InvalidToolError(f"{where}: defer_loading must be True, False or None, not {value!r}")


def check_deferral_rule(value: object, where: str) -> bool | int:
    """`value` as a registry's deferral rule (a bool, or a count of tools past which to defer); an error otherwise."""
    if isinstance(value, bool) or (isinstance(value, int) and value >= 0):
        return value
    raise ValueError(f"{where}: defer_loading must be a bool or a non-negative int, not {value!r}")


def is_deferred(mark: bool | None, rule: bool | int, size: int) -> bool:
    """Whether a tool is deferred: its own `mark` if it has one, else the registry's `rule` for `size` tools.

    The rule is False (show), True (defer) or a count: defer once the registry holds more tools than that.
    """
    if mark is not None:
        return mark
    if isinstance(rule, bool):
        return rule
    return size > rule


def _load_bm25s() -> ModuleType | None:
    """The `bm25s` module, or None where it is not installed (the pure-Python ranking is used)."""
    import importlib  # noqa: PLC0415 - only building an index needs it

    try:
        return importlib.import_module("bm25s")  # optional, and heavy (numpy): loaded by the first index only
    except ImportError:
        return None


@final
class ToolIndex:
    """A BM25 index over tool definitions, queried in words: ``ToolIndex(registry.definitions()).search("weather")``.

    Built once, read-only after: one index may serve concurrent searches.

    Example:
        ```python
        from scopetool import Definition, ToolIndex

        empty = {"type": "object"}
        index = ToolIndex(
            [
                Definition(name="get_weather", description="Current weather for a city.", input_schema=empty),
                Definition(name="send_email", description="Send an email.", input_schema=empty),
            ]
        )
        print([d.name for d in index.search("what is the weather in Paris?")])
        #> ['get_weather']
        ```
    """

    __slots__ = ("_definitions", "_engine", "_postings", "_vocabulary")

    def __init__(self, definitions: Iterable[Definition]) -> None:
        self._definitions = tuple(definitions)
        for position, definition in enumerate(self._definitions):
            if not isinstance(definition, Definition):
                raise TypeError(f"definitions[{position}] is a {type(definition).__name__}, not a Definition")
        documents = [tool_words(definition) for definition in self._definitions]
        self._vocabulary = {word: term for term, word in enumerate(dict.fromkeys(chain.from_iterable(documents)))}
        term_of = self._vocabulary.__getitem__
        ids = [list(map(term_of, document)) for document in documents]
        bm25s = _load_bm25s()
        self._engine: Any = None
        self._postings: list[list[tuple[int, float]]] = []
        if bm25s is not None and self._vocabulary:
            engine = bm25s.BM25(k1=_K1, b=_B, method="lucene")
            engine.index(bm25s.tokenization.Tokenized(ids=ids, vocab=dict(self._vocabulary)), show_progress=False)
            self._engine = engine
        else:
            self._postings = _postings(ids, len(self._vocabulary))

    def search(self, query: str, *, limit: int = 5) -> list[Definition]:
        """The definitions that best match `query`, best first, at most `limit` of them (none that share no word).

        Raises:
            TypeError: `query` is not a str.
            ValueError: `limit` is not a positive int.
        """
        if not isinstance(query, str):
            raise TypeError(f"a search query is a str, not {type(query).__name__}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive int, not {limit!r}")
        vocabulary = self._vocabulary
        wanted = list(dict.fromkeys(vocabulary[w] for w in words(query) if w in vocabulary and w not in _STOP_WORDS))
        if not wanted:
            return []
        if self._engine is not None:
            return self._top_of_array(self._engine.get_scores(wanted), limit)
        scores: dict[int, float] = {}
        postings = self._postings
        for term in wanted:
            for position, score in postings[term]:
                scores[position] = scores.get(position, 0.0) + score
        best = heapq.nsmallest(limit, scores.items(), key=lambda item: (-item[1], item[0]))
        return [self._definitions[position] for position, _ in best]

    def _top_of_array(self, scores: Any, limit: int) -> list[Definition]:
        """The `limit` best of bm25s's score array, ties in catalog order (as the pure-Python ranking)."""
        import numpy  # noqa: PLC0415 - bm25s's own dependency, loaded with it

        candidates = numpy.flatnonzero(scores > 0)
        if len(candidates) > limit:
            kth = numpy.partition(scores[candidates], len(candidates) - limit)[len(candidates) - limit]
            candidates = candidates[scores[candidates] >= kth]
        ranked = sorted(candidates.tolist(), key=lambda position: (-float(scores[position]), position))
        return [self._definitions[position] for position in ranked[:limit]]

    @property
    def definitions(self) -> tuple[Definition, ...]:
        """The indexed definitions, in the order given."""
        return self._definitions

    def __len__(self) -> int:
        return len(self._definitions)

    def __repr__(self) -> str:
        return f"ToolIndex({len(self._definitions)} tools)"


def _postings(documents: Sequence[Sequence[int]], terms: int) -> list[list[tuple[int, float]]]:
    """Per term, each document that has it with the term's BM25 score there (the pure-Python index)."""
    count = len(documents)
    average = (sum(map(len, documents)) / count if count else 0.0) or 1.0
    postings: list[list[tuple[int, float]]] = [[] for _ in range(terms)]
    for position, document in enumerate(documents):
        norm = _K1 * (1 - _B + _B * len(document) / average)
        for term, frequency in Counter(document).items():
            postings[term].append((position, frequency / (frequency + norm)))
    for term, found in enumerate(postings):
        idf = math.log(1 + (count - len(found) + 0.5) / (len(found) + 0.5))
        postings[term] = [(position, idf * part) for position, part in found]
    return postings

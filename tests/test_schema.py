"""`_schema`: the member counter behind prepare's duplicate-key skip, strict core schemas and JSON Schema.

The counter serves the pure-Python prepare (`_prepare_python`), which these tests call directly: the C
prepare of `scopetool._speedups` vouches for most documents without it (tests/test_speedups.py).
"""

import dataclasses
import datetime
import enum
import json
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Annotated, Any, Literal

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import (
    AfterValidator,
    AliasChoices,
    AliasPath,
    AnyUrl,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    field_validator,
    model_validator,
)
from pydantic.dataclasses import dataclass as pydantic_dataclass
from pydantic_core import SchemaValidator, ValidationError, core_schema
from typing_extensions import TypedDict

import scopetool._contract as contract_module
from scopetool import (
    Binding,
    Func,
    InputDecoder,
    InvalidInvocationError,
    InvalidToolError,
    Request,
    bind,
    classify_input_rejection,
    tool,
)
from scopetool._codec import take_decoded
from scopetool._contract import _prepare_python
from scopetool._decoder import fast_path
from scopetool._schema import (
    STRICT_CONFIG,
    core_schema_nodes,
    json_schema_of,
    member_counter,
    strict_core_schema,
    string_colons,
)

# ---------------------------------------------------------------------------------------------------
# The corpus of input shapes.


class Leaf(BaseModel):
    """The deepest level."""

    v: int


class Middle(BaseModel):
    """The middle level."""

    leaf: Leaf
    w: str = ""


class Top(BaseModel):
    """The top level of three nested models."""

    middle: Middle


class Nested3(BaseModel):
    """Nested models, three deep."""

    top: Top


class Item(BaseModel):
    """A list element."""

    name: str
    qty: int = 1


class Items(BaseModel):
    """A list of models."""

    items: list[Item]


class MaybeItem(BaseModel):
    """An optional model."""

    item: Item | None = None


class EitherModel(BaseModel):
    """A plain union of two models."""

    pet: Item | Leaf


class Cat(BaseModel):
    """One tagged choice."""

    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    """Another tagged choice."""

    kind: Literal["dog"]
    owner: Item | None = None


class Tagged(BaseModel):
    """A discriminated union."""

    pet: Annotated[Cat | Dog, Field(discriminator="kind")]


class IntMap(BaseModel):
    """A dict of ints."""

    d: dict[str, int]


class ModelMap(BaseModel):
    """A dict of models."""

    d: dict[str, Item]


class Anything(BaseModel):
    """An unconstrained member."""

    a: Any


class AnyList(BaseModel):
    """A list of unconstrained values."""

    a: list[Any]


class Pair(BaseModel):
    """A fixed-length tuple holding a model."""

    t: tuple[int, Item]


class Aliased(BaseModel):
    """A model read by alias and by name."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)
    first_name: str = Field(alias="firstName")
    last: Item | None = Field(default=None, alias="lastItem")


class FieldChecked(BaseModel):
    """A model with field validators that only check values."""

    n: int
    item: Item

    @field_validator("n")
    @classmethod
    def _even(cls, value: int) -> int:
        if value % 2:
            raise ValueError("n must be even")
        return value


class Tree(BaseModel):
    """A recursive model."""

    value: int
    children: list["Tree"] = []


class Forest(BaseModel):
    """A model holding a recursive model."""

    root: Tree
    extra: Tree | None = None


class Point(TypedDict):
    """A typed dict."""

    x: int
    label: Item


class Pointed(BaseModel):
    """A model holding a typed dict."""

    p: Point


class Priced(BaseModel):
    """A list element of scalar and float fields: the counter counts a list of these in C."""

    name: str
    price: float
    qty: int = 1


class PricedList(BaseModel):
    """A list of models with float fields, and a list of floats."""

    lines: list[Priced]
    weights: list[float] = []


class LaxFloats(BaseModel):
    """A nested model of its own lax configuration: it lets NaN and Infinity through on its own."""

    model_config = ConfigDict(allow_inf_nan=True)
    x: float
    d: Decimal = Decimal(0)


class LaxFloatList(BaseModel):
    """A list of lax models."""

    items: list[LaxFloats]


class Noted(BaseModel):
    """A nested model with string fields, one of them defaulted to a string holding ':'."""

    note: str
    when: str | None = None
    hint: str = "read: me"


class Strings(BaseModel):
    """Strings in every position the ':' count reads: fields, lists, dict keys and values, Any, nested."""

    title: str
    tags: list[str] = []
    table: dict[str, str] = {}
    blob: Any = None
    noted: Noted | None = None
    level: Literal["low:1", "high:2"] = "low:1"


class Rewritten(BaseModel):
    """A string field whose validator adds a ':', and a time parsed from a string."""

    tag: Annotated[str, AfterValidator(lambda value: value + ":")]
    at: datetime.time | None = None
    n: int = 0


def model_tool(model: type[BaseModel]) -> Func[..., str]:
    @tool(name="shape")
    def shape(payload: model) -> str:  # type: ignore[valid-type]
        """A tool whose single model parameter is the input object."""
        return "ok"

    return shape


def flat_tool() -> Func[..., str]:
    @tool(name="shape")
    def shape(a: int, b: str, c: bool = False, d: float = 0.0) -> str:
        """Flat ints and strs."""
        return "ok"

    return shape


def scalar_tool() -> Func[..., str]:
    @tool(name="shape")
    def shape(a: int, b: str, c: bool = False) -> str:
        """Scalar parameters only: the member count is the object's length."""
        return "ok"

    return shape


def mixed_tool() -> Func[..., str]:
    @tool(name="shape")
    def shape(
        item: Item,
        items: list[Item] | None = None,
        tags: dict[str, Item] | None = None,
        blob: Any = None,
        pair: tuple[str, Leaf] | None = None,
    ) -> str:
        """Parameters holding models, lists, dicts and Any."""
        return "ok"

    return shape


CORPUS: dict[str, tuple[Callable[[], Func[..., str]], list[str]]] = {
    "flat": (flat_tool, ['{"a":1,"b":"x"}', '{"a":1,"b":"x:y:z","c":true,"d":1.5}', '{"b":"","a":-3}']),
    "scalars": (scalar_tool, ['{"a":1,"b":"x"}', '{"c":true,"b":"x:y","a":2}', '{"b":"","a":-3}']),
    "list-of-float-models": (
        lambda: model_tool(PricedList),
        [
            '{"lines":[]}',
            '{"lines":[{"name":"a","price":1.5},{"price":2,"qty":3,"name":"b:c"}],"weights":[0.5,-1,2e10]}',
        ],
    ),
    "list-of-lax-models": (lambda: model_tool(LaxFloatList), ['{"items":[{"x":1.5},{"x":-2,"d":"3.25"}]}']),
    "strings": (
        lambda: model_tool(Strings),
        [
            '{"title":"at 10:30","tags":["a:b","c"],"table":{"k:1":"v:2"},"blob":{"x:y":["p:q",{"r":"s:t"}]},'
            '"noted":{"note":"n:o","when":"12:00"},"level":"high:2"}',
            '{"title":"https://example.com:8080/a","noted":{"note":"escaped \\u003a colon"},"blob":"\\u003A"}',
            '{"title":"\\\\u003a is no colon","tags":["::"]}',
        ],
    ),
    "rewritten-strings": (lambda: model_tool(Rewritten), ['{"tag":"a:b","at":"10:30:00","n":1}']),
    "nested-3-deep": (
        lambda: model_tool(Nested3),
        ['{"top":{"middle":{"leaf":{"v":1}}}}', '{"top":{"middle":{"leaf":{"v":1},"w":"w"}}}'],
    ),
    "list-of-models": (
        lambda: model_tool(Items),
        ['{"items":[]}', '{"items":[{"name":"a"},{"name":"b","qty":2},{"qty":3,"name":"c"}]}'],
    ),
    "optional-model": (
        lambda: model_tool(MaybeItem),
        ["{}", '{"item":null}', '{"item":{"name":"a","qty":3}}'],
    ),
    "union-of-models": (lambda: model_tool(EitherModel), ['{"pet":{"name":"a","qty":1}}', '{"pet":{"v":1}}']),
    "discriminated-union": (
        lambda: model_tool(Tagged),
        ['{"pet":{"kind":"cat","lives":9}}', '{"pet":{"kind":"dog","owner":{"name":"o"}}}', '{"pet":{"kind":"dog"}}'],
    ),
    "dict-of-int": (lambda: model_tool(IntMap), ['{"d":{}}', '{"d":{"a":1,"b":2,"c":3}}']),
    "dict-of-model": (
        lambda: model_tool(ModelMap),
        ['{"d":{"a":{"name":"x"},"b":{"name":"y","qty":1}}}'],
    ),
    "any": (
        lambda: model_tool(Anything),
        ['{"a":null}', '{"a":{"x":[{"y":1,"z":{}}],"w":{"q":null,"r":"s:t"}}}', '{"a":[[{"k":{"k":{"k":1}}}]]}'],
    ),
    "list-of-any": (lambda: model_tool(AnyList), ['{"a":[]}', '{"a":[{"x":1},[{"y":{"z":2}}],3,"x"]}']),
    "tuple": (lambda: model_tool(Pair), ['{"t":[1,{"name":"a"}]}', '{"t":[2,{"name":"b","qty":4}]}']),
    "aliases": (
        lambda: model_tool(Aliased),
        ['{"firstName":"a"}', '{"firstName":"a","lastItem":{"name":"n"}}', '{"firstName":"b","lastItem":{"name":"m"}}'],
    ),
    "field-validators": (lambda: model_tool(FieldChecked), ['{"n":2,"item":{"name":"i"}}']),
    "recursive": (
        lambda: model_tool(Forest),
        [
            '{"root":{"value":1}}',
            '{"root":{"value":1,"children":[{"value":2},{"value":3,"children":[{"value":4}]}]},"extra":{"value":5}}',
        ],
    ),
    "typed-dict": (lambda: model_tool(Pointed), ['{"p":{"x":1,"label":{"name":"l"}}}']),
    "mixed-parameters": (
        mixed_tool,
        [
            '{"item":{"name":"a"}}',
            '{"item":{"name":"a"},"items":[{"name":"b"}],"tags":{"t":{"name":"c","qty":2}},'
            '"blob":{"k":[{"k":1}]},"pair":["p",{"v":1}]}',
        ],
    ),
}


@pytest.fixture(scope="module")
def built() -> dict[str, tuple[Func[..., str], Binding]]:
    """Every corpus tool, decorated and bound once."""
    tools = {name: make() for name, (make, _) in CORPUS.items()}
    return {name: (func, bind(func)) for name, func in tools.items()}


DOCS = [
    pytest.param(shape, doc, id=f"{shape}-{i}") for shape, (_, docs) in CORPUS.items() for i, doc in enumerate(docs)
]


def members(raw: str) -> int:
    """How many object members a JSON document holds, at every depth."""
    count = 0

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal count
        count += len(pairs)
        return dict(pairs)

    json.loads(raw, object_pairs_hook=hook)
    return count


def decoder_of(func: Func[..., str]) -> InputDecoder[Any]:
    return func.input_validator()


def rejection_message(binding: Binding, raw: str | bytes) -> str:
    """Prepare `raw`, expect a rejection, and return its model-facing message."""
    with pytest.raises(InvalidInvocationError) as info:
        _prepare_python(binding.contract, Request(name=binding.name, arguments=raw))
    rejection = classify_input_rejection(info.value)
    assert rejection is not None
    return rejection.message


# ---------------------------------------------------------------------------------------------------
# (a) For valid documents the counter equals the number of object members.


def test_the_corpus_is_broad_enough() -> None:
    """The corpus covers at least 12 shapes and each has a counter, so the skip path is exercised."""
    assert len(CORPUS) >= 12
    for name, (make, _) in CORPUS.items():
        assert fast_path(decoder_of(make())).counter is not None, name


@pytest.mark.parametrize(("shape", "raw"), DOCS)
def test_counter_equals_the_members_of_a_valid_document(
    built: dict[str, tuple[Func[..., str], Binding]], shape: str, raw: str
) -> None:
    """The counter, applied to the decoded value, gives exactly the document's object member count."""
    func, binding = built[shape]
    decoder = decoder_of(func)
    assert fast_path(decoder).counter is not None
    assert fast_path(decoder).counter(decoder(raw)) == members(raw)
    assert _prepare_python(binding.contract, Request(name="shape", arguments=raw)).arguments == raw.encode()


BY_ALIAS_DOCS = [param for param in DOCS if '"first_name"' not in param.values[1] and '"last"' not in param.values[1]]


@pytest.mark.parametrize(("shape", "raw"), BY_ALIAS_DOCS)
def test_advertised_schema_accepts_every_valid_document(
    built: dict[str, tuple[Func[..., str], Binding]], shape: str, raw: str
) -> None:
    """What is enforced is what is advertised: each admitted corpus document meets the JSON Schema."""
    func, _ = built[shape]
    jsonschema.Draft202012Validator(func.definition().input_schema).validate(json.loads(raw))


def _counting_full_parses(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Record every document prepare sends to the full I-JSON parse."""
    calls: list[bytes] = []
    real = contract_module.parse_checked

    def counting(raw: bytes, **kwargs: Any) -> Any:
        calls.append(raw)
        return real(raw, **kwargs)

    monkeypatch.setattr(contract_module, "parse_checked", counting)
    return calls


def test_prepare_skips_the_full_parse_when_the_counts_match(monkeypatch: pytest.MonkeyPatch) -> None:
    """The full parse is skipped when the members, plus the ':' inside verbatim strings, account for every ':'."""
    calls = _counting_full_parses(monkeypatch)
    binding = bind(model_tool(Nested3))
    for raw in (
        '{"top":{"middle":{"leaf":{"v":1},"w":"w"}}}',
        '{"top":{"middle":{"leaf":{"v":1},"w":"a:b"}}}',
        '{"top":{"middle":{"leaf":{"v":1},"w":"a\\u003ab\\u003A"}}}',
    ):
        _prepare_python(binding.contract, Request(name="shape", arguments=raw))
    assert calls == []


def test_prepare_runs_the_full_parse_for_colons_it_cannot_account_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ':' in a string a validator rewrote, or one parsed into a time, leaves the decision to the full parse."""
    calls = _counting_full_parses(monkeypatch)
    binding = bind(model_tool(Rewritten))
    docs = ['{"tag":"a:b"}', '{"tag":"a","at":"10:30:00"}', '{"tag":"a","at":null,"n":1}']
    for raw in docs:
        _prepare_python(binding.contract, Request(name="shape", arguments=raw))
    assert calls == [docs[0].encode(), docs[1].encode()]


def colons_in_strings(raw: str) -> int:
    """The ':' the document's strings hold once decoded, member names included."""
    total = 0

    def walk(node: Any) -> None:
        nonlocal total
        if isinstance(node, dict):
            for key, value in node.items():
                total += key.count(":")
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, str):
            total += node.count(":")

    walk(json.loads(raw))
    return total


@pytest.mark.parametrize(("shape", "raw"), DOCS)
def test_string_colons_never_exceed_what_the_strings_held(
    built: dict[str, tuple[Func[..., str], Binding]], shape: str, raw: str
) -> None:
    """The count of ':' in a decoded value's strings is at most what the document's strings held."""
    func, _ = built[shape]
    decoder = decoder_of(func)
    strings = fast_path(decoder).string_colons
    if strings is not None:
        assert strings(decoder(raw)) <= colons_in_strings(raw)


def test_times_and_urls_get_no_string_count() -> None:
    """A schema with a time (or a URL) parsed from text gets no ':' count: such documents go to the full parse."""
    assert fast_path(decoder_of(model_tool(Rewritten))).counter is not None
    assert fast_path(decoder_of(model_tool(Rewritten))).string_colons is None
    assert fast_path(decoder_of(model_tool(Strings))).string_colons is not None


def test_string_colons_count_every_verbatim_string() -> None:
    """Fields, list items, dict keys and values, Any members and names, nested fields: each ':' counted once."""
    decoder = decoder_of(model_tool(Strings))
    raw = CORPUS["strings"][1][0]
    assert fast_path(decoder).string_colons is not None
    assert (
        fast_path(decoder).string_colons(decoder(raw)) == colons_in_strings(raw) - 1
    )  # "high:2" is a literal, not counted


SNEAKS = {
    "a ':' in another string": ("scalars", '{"a":1,"b":"x:y","a":1}'),
    "the dropped value held the ':'": ("scalars", '{"b":"x:y","a":1,"b":"z"}'),
    "escaped ':' on both sides": ("scalars", '{"b":"\\u003a","a":1,"b":"\\u003a"}'),
    "a backslash, then u003a": ("scalars", '{"b":"\\\\u003a","a":1,"a":1}'),
    "a default holding ':'": ("strings", '{"title":"t","noted":{"note":"n","note":"n"}}'),
    "a validator adding ':'": ("rewritten-strings", '{"tag":"x","n":1,"n":1}'),
    "a time's ':'": ("rewritten-strings", '{"tag":"x","at":"10:30:00","n":1,"n":2}'),
    "a literal's ':'": ("strings", '{"title":"t","level":"high:2","title":"u"}'),
    "a ':' in a repeated name": ("strings", '{"title":"t","blob":{"k:1":1,"k:1":2}}'),
    "a ':' in a repeated dict key": ("strings", '{"title":"t","table":{"k:1":"a","k:1":"b"}}'),
}


@pytest.mark.parametrize("case", SNEAKS)
def test_no_colon_in_a_string_can_hide_a_duplicate(built: dict[str, tuple[Func[..., str], Binding]], case: str) -> None:
    """Duplicates dressed up with ':' in strings, escapes, defaults, validators, times and literals are rejected."""
    shape, raw = SNEAKS[case]
    _, binding = built[shape]
    assert repeated_names(raw) == 1
    assert "same member name twice" in rejection_message(binding, raw)
    assert "same member name twice" in rejection_message(binding, raw.encode())


class Choices(BaseModel):
    """A field with several accepted spellings."""

    a: int = Field(validation_alias=AliasChoices("x", "y"))


def test_only_advertised_spellings_are_admitted() -> None:
    """A model read by name too (validate_by_name) is admitted only under the alias it advertises."""
    func = model_tool(Aliased)
    advertised = func.definition().input_schema
    assert set(advertised["properties"]) == {"firstName", "lastItem"}
    assert "$.first_name: unknown field" in rejection_message(bind(func), '{"first_name":"a"}')
    raw = '{"firstName":"a"}'
    assert _prepare_python(bind(func).contract, Request(name="shape", arguments=raw)).arguments == raw.encode()
    jsonschema.Draft202012Validator(advertised).validate(json.loads(raw))


# ---------------------------------------------------------------------------------------------------
# (b) A duplicate member at any level is rejected, however the counter is fooled.


class Obj(list):  # type: ignore[type-arg]
    """A JSON object as an ordered list of (encoded key, value) pairs, so it can hold duplicates."""


def parse(raw: str) -> Any:
    return json.loads(raw, object_pairs_hook=lambda pairs: Obj((encode_key(k), v) for k, v in pairs))


def encode_key(key: str) -> str:
    return json.dumps(key, ensure_ascii=False)


def escape_key(key: str) -> str:
    """The same name written entirely in \\u escapes (surrogate pairs for astral characters)."""
    data = key.encode("utf-16-be", "surrogatepass")
    units = [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]
    return '"' + "".join(f"\\u{unit:04x}" for unit in units) + '"'


def dump(node: Any) -> str:
    if isinstance(node, Obj):
        return "{" + ",".join(f"{key}:{dump(value)}" for key, value in node) + "}"
    if isinstance(node, list):
        return "[" + ",".join(dump(item) for item in node) + "]"
    return json.dumps(node, ensure_ascii=False)


def objects(node: Any, path: tuple[int, ...] = ()) -> Iterator[tuple[int, ...]]:
    """The path (child indexes) of every object in the tree, the root included."""
    if isinstance(node, Obj):
        yield path
        for index, (_, value) in enumerate(node):
            yield from objects(value, (*path, index))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from objects(item, (*path, index))


def with_duplicate(tree: Any, path: tuple[int, ...], member: int, how: str) -> str:
    """The document with one member of the object at `path` written twice."""

    def rebuild(node: Any, rest: tuple[int, ...]) -> Any:
        if not rest:
            assert isinstance(node, Obj)
            key, value = node[member]
            pairs = list(node)
            if how == "append":
                pairs.append((key, value))
            elif how == "escaped-before":
                pairs.insert(member, (escape_key(json.loads(key)), value))
            elif how == "escaped-original":
                pairs[member] = (escape_key(json.loads(key)), value)
                pairs.insert(member + 1, (key, value))
            else:
                raise AssertionError(how)
            return Obj(pairs)
        head, tail = rest[0], rest[1:]
        if isinstance(node, Obj):
            pairs = list(node)
            pairs[head] = (pairs[head][0], rebuild(pairs[head][1], tail))
            return Obj(pairs)
        items = list(node)
        items[head] = rebuild(items[head], tail)
        return items

    return dump(rebuild(tree, path))


def duplicates_of(raw: str) -> list[str]:
    """Every single-duplicate mutation of `raw`: each member of each object, written three ways."""
    tree = parse(raw)
    mutations = []
    for path in objects(tree):
        node: Any = tree
        for step in path:
            node = node[step][1] if isinstance(node, Obj) else node[step]
        mutations.extend(
            with_duplicate(tree, path, member, how)
            for member in range(len(node))
            for how in ("append", "escaped-before", "escaped-original")
        )
    return mutations


def repeated_names(raw: str) -> int:
    """How many member names repeat within their object, summed over every object."""
    repeats = 0

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal repeats
        repeats += len(pairs) - len({key for key, _ in pairs})
        return dict(pairs)

    json.loads(raw, object_pairs_hook=hook)
    return repeats


def test_mutation_helpers_write_what_they_claim() -> None:
    """Each mutation repeats exactly one name in one object and otherwise decodes to the same value."""
    raw = '{"a":{"\u00e9":[{"\U0001f600":1}]}}'
    mutated = duplicates_of(raw)
    assert len(mutated) == 3 * 3
    assert escape_key("a\U0001f600") == '"\\u0061\\ud83d\\ude00"'
    for doc in mutated:
        assert repeated_names(doc) == 1
        assert json.loads(doc) == json.loads(raw)
    assert repeated_names(raw) == 0


@pytest.mark.parametrize(("shape", "raw"), DOCS)
def test_every_duplicate_member_is_rejected(
    built: dict[str, tuple[Func[..., str], Binding]], shape: str, raw: str
) -> None:
    """Writing any member of any object twice (plainly or escaped) is rejected, though it decodes fine."""
    func, binding = built[shape]
    decoder = decoder_of(func)
    mutations = duplicates_of(raw)
    assert len(mutations) == 3 * members(raw)
    for doc in mutations:
        decoder(doc)  # last-wins decoding accepts it: only the I-JSON check can catch it
        message = rejection_message(binding, doc)
        assert "same member name twice" in message, doc
        assert "same member name twice" in rejection_message(binding, doc.encode())


JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
)
KEYS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=4)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=20,
)


def loose_tool() -> Func[..., str]:
    @tool(name="loose")
    def loose(blob: Any = None, many: list[Any] | None = None, table: dict[str, Any] | None = None) -> str:
        """Unconstrained positions everywhere."""
        return "ok"

    return loose


LOOSE = loose_tool()
LOOSE_BINDING = bind(LOOSE)


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(blob=JSON_VALUES, many=st.lists(JSON_VALUES, max_size=3), table=st.dictionaries(KEYS, JSON_VALUES, max_size=3))
def test_counter_matches_members_for_generated_unconstrained_documents(blob: Any, many: Any, table: Any) -> None:
    """For generated documents in Any, list[Any] and dict[str, Any] positions, the counter is exact."""
    raw = json.dumps({"blob": blob, "many": many, "table": table}, ensure_ascii=False)
    assert _prepare_python(LOOSE_BINDING.contract, Request(name="loose", arguments=raw)).arguments == raw.encode()
    decoder = decoder_of(LOOSE)
    assert fast_path(decoder).counter is not None
    assert fast_path(decoder).counter(decoder(raw)) == members(raw)


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    document=st.fixed_dictionaries({"blob": JSON_VALUES, "table": st.dictionaries(KEYS, JSON_VALUES, max_size=3)}),
    pick=st.data(),
)
def test_generated_duplicates_in_unconstrained_positions_are_rejected(document: dict[str, Any], pick: Any) -> None:
    """A duplicate inserted at a random object of a generated document is always rejected."""
    raw = json.dumps(document, ensure_ascii=False)
    tree = parse(raw)
    paths = [path for path in objects(tree) if _object_at(tree, path)]
    path = pick.draw(st.sampled_from(paths), label="object")
    member = pick.draw(st.integers(0, len(_object_at(tree, path)) - 1), label="member")
    how = pick.draw(st.sampled_from(["append", "escaped-before", "escaped-original"]), label="how")
    doc = with_duplicate(tree, path, member, how)
    assert "same member name twice" in rejection_message(LOOSE_BINDING, doc)


def _object_at(tree: Any, path: tuple[int, ...]) -> Any:
    node = tree
    for step in path:
        node = node[step][1] if isinstance(node, Obj) else node[step]
    return node


# ---------------------------------------------------------------------------------------------------
# Numbers the member count must send to the full checks: non-finite floats and changed integers, in
# the positions counted in bulk (lists of floats, lists of models) and in lax nested models.

NUMBER_POSITIONS = {
    "float member of a listed model": ('{"lines":[{"name":"a","price":%s}]}', PricedList),
    "float list item": ('{"lines":[],"weights":[1,%s]}', PricedList),
    "float member of a listed lax model": ('{"items":[{"x":%s}]}', LaxFloatList),
}


@pytest.mark.parametrize("where", [*NUMBER_POSITIONS, "decimal member of a listed lax model"])
@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_rejected_in_bulk_counted_and_lax_positions(where: str, token: str) -> None:
    """NaN and Infinity tokens are rejected in listed models, float lists and lax models (floats and decimals)."""
    template, model = NUMBER_POSITIONS.get(where, ('{"items":[{"x":1,"d":%s}]}', LaxFloatList))
    message = rejection_message(bind(model_tool(model)), template % token)
    assert "NaN and Infinity are not JSON numbers" in message


@pytest.mark.parametrize("where", NUMBER_POSITIONS)
@pytest.mark.parametrize(
    ("number", "expected"),
    [
        ("1e400", "too large for a double"),
        ("-1e400", "too large for a double"),
        ("9" * 400, "an integer a double cannot hold exactly"),
        ("9007199254740993", "an integer a double cannot hold exactly"),
        ("-9007199254740993", "an integer a double cannot hold exactly"),
    ],
)
def test_numbers_a_double_cannot_hold_are_rejected_in_bulk_counted_positions(
    where: str, number: str, expected: str
) -> None:
    """A float position given 1e400 or an integer past 2**53 that would change is rejected, listed or not."""
    template, model = NUMBER_POSITIONS[where]
    assert expected in rejection_message(bind(model_tool(model)), template % number)


@pytest.mark.parametrize("where", NUMBER_POSITIONS)
@pytest.mark.parametrize("number", ["9007199254740992", "-9007199254740992", "1.7976931348623157e308"])
def test_numbers_a_double_holds_exactly_are_admitted_in_bulk_counted_positions(where: str, number: str) -> None:
    """2**53 and the largest double are exact: admitted, though their size sends them to the full checks."""
    template, model = NUMBER_POSITIONS[where]
    binding = bind(model_tool(model))
    raw = template % number
    assert _prepare_python(binding.contract, Request(name="shape", arguments=raw)).arguments == raw.encode()


@dataclasses.dataclass
class FloatPoint:
    """A stdlib dataclass (no member counter is built for it) with a float field."""

    x: float


class FloatShade(float, enum.Enum):
    """A float enum whose member an integer past 2**53 rounds to."""

    EDGE = 9007199254740992.0


def _unchanged(value: list[float]) -> list[float]:
    return value


def uncounted_tools() -> dict[str, Func[..., str]]:
    """Float positions whose schema has no member counter (or one that cannot see the float)."""

    @tool(name="shape")
    def either(x: float | str) -> str:
        """A float-or-string union."""
        return "ok"

    @tool(name="shape")
    def validated(xs: Annotated[list[float], AfterValidator(_unchanged)], y: float = 0.0) -> str:
        """A float list under a validator, beside a plain float."""
        return "ok"

    @tool(name="shape")
    def point(p: FloatPoint) -> str:
        """A dataclass with a float field."""
        return "ok"

    @tool(name="shape")
    def shade(v: FloatShade) -> str:
        """A float enum."""
        return "ok"

    return {"either": either, "validated": validated, "point": point, "shade": shade}


UNCOUNTED_NUMBERS = [
    ("either", '{"x":%s}'),
    ("validated", '{"xs":[1,%s]}'),
    ("validated", '{"xs":[],"y":%s}'),
    ("point", '{"p":{"x":%s}}'),
]


@pytest.mark.parametrize(("name", "template"), UNCOUNTED_NUMBERS)
@pytest.mark.parametrize("number", ["9007199254740993", "-9007199254740993", "9" * 40])
def test_integers_a_double_cannot_hold_are_rejected_without_a_counter(name: str, template: str, number: str) -> None:
    """An integer past 2**53 that a float member would change is rejected where no counter sees that float."""
    func = uncounted_tools()[name]
    assert fast_path(decoder_of(func)).counter is None
    message = rejection_message(bind(func), template % number)
    assert "an integer a double cannot hold exactly" in message


def test_an_integer_that_rounds_to_a_float_enum_member_is_rejected() -> None:
    """9007199254740993 would round to a float enum's member 2**53: rejected; 2**53 itself is admitted."""
    binding = bind(uncounted_tools()["shade"])
    assert "an integer a double cannot hold exactly" in rejection_message(binding, '{"v":9007199254740993}')
    raw = '{"v":9007199254740992}'
    assert _prepare_python(binding.contract, Request(name="shape", arguments=raw)).arguments == raw.encode()


@pytest.mark.parametrize(("name", "template"), UNCOUNTED_NUMBERS)
@pytest.mark.parametrize("number", ["9007199254740992", "12345678901234568", "1.5"])
def test_exact_numbers_are_admitted_without_a_counter(name: str, template: str, number: str) -> None:
    """2**53, an integer a double holds exactly, and a plain float are admitted in the same positions."""
    binding = bind(uncounted_tools()[name])
    raw = template % number
    assert _prepare_python(binding.contract, Request(name="shape", arguments=raw)).arguments == raw.encode()


def test_a_big_integer_beside_a_float_is_admitted_where_it_stays_an_integer() -> None:
    """An integer past 2**53 in an int member is admitted though a float member sits beside it, counter or not."""

    @tool(name="shape")
    def mixed(p: FloatPoint, n: int) -> str:
        """A dataclass with a float, and an integer."""
        return "ok"

    raw = '{"p":{"x":0.5},"n":9007199254740993}'
    assert _prepare_python(bind(mixed).contract, Request(name="shape", arguments=raw)).arguments == raw.encode()
    assert "cannot hold exactly" in rejection_message(bind(mixed), '{"p":{"x":9007199254740993},"n":1}')


def test_a_tuple_of_several_item_schemas_with_a_float_has_no_counter() -> None:
    """A variadic tuple whose items may be floats is not counted as JSON (which would not look at the floats)."""
    schema = core_schema.tuple_schema([core_schema.int_schema(), core_schema.float_schema()], variadic_item_index=1)
    assert member_counter(schema) is None
    mixed = core_schema.tuple_schema([core_schema.int_schema(), core_schema.any_schema()], variadic_item_index=1)
    assert member_counter(mixed) is not None


class Defaults(BaseModel):
    """Float fields with a default that is no number (pydantic does not check defaults) and one that is."""

    price: float = None  # type: ignore[assignment]
    rate: float = 0.5


class DefaultsList(BaseModel):
    """A list of models whose float default may be None."""

    items: list[Defaults]


def test_a_float_default_that_is_no_number_is_left_alone() -> None:
    """A listed model's float field whose default is None is counted item by item, never summed."""
    binding = bind(model_tool(DefaultsList))
    for raw in ('{"items":[{},{"rate":1.5}]}', '{"items":[{"price":2.5}]}'):
        assert _prepare_python(binding.contract, Request(name="shape", arguments=raw)).arguments == raw.encode()
    assert "same member name twice" in rejection_message(binding, '{"items":[{"rate":1,"rate":2}]}')


def test_only_decimal_and_complex_positions_scan_for_nan() -> None:
    """The raw NaN scan runs only where the member count cannot see a non-finite value: decimals, complexes."""
    assert not fast_path(decoder_of(model_tool(PricedList))).may_hold_non_finite
    assert not fast_path(decoder_of(model_tool(Anything))).may_hold_non_finite
    assert fast_path(decoder_of(model_tool(LaxFloatList))).may_hold_non_finite

    @tool(name="shape")
    def numbers(z: complex) -> str:
        """A complex parameter."""
        return "ok"

    assert fast_path(decoder_of(numbers)).may_hold_non_finite
    assert "NaN and Infinity" in rejection_message(bind(numbers), '{"z":NaN}')


class SharedAlias(BaseModel):
    """Two fields that read the same JSON member."""

    a: int = Field(validation_alias="k")
    b: int = Field(validation_alias="k")


class SharedPath(BaseModel):
    """Three fields that read the same nested JSON member."""

    a: int = Field(validation_alias=AliasPath("o", "x"))
    b: int = Field(validation_alias=AliasPath("o", "x"))
    c: int = Field(validation_alias=AliasPath("o", "x"))


@pytest.mark.parametrize(
    ("model", "valid", "duplicated"), [(SharedAlias, '{"k":1}', '{"k":1,"k":2}')], ids=["validation-alias"]
)
def test_fields_sharing_a_member_never_overcount(model: type[BaseModel], valid: str, duplicated: str) -> None:
    """The counter never exceeds the real member count, so a duplicate under a shared alias is still caught."""
    func = model_tool(model)
    decoder = decoder_of(func)
    assert fast_path(decoder).counter is None or fast_path(decoder).counter(decoder(valid)) <= members(valid)
    assert "same member name twice" in rejection_message(bind(func), duplicated)


@pytest.mark.parametrize("model", [Choices, SharedPath], ids=["alias-choices", "alias-path"])
def test_fields_read_under_several_names_are_refused(model: type[BaseModel]) -> None:
    """AliasChoices and AliasPath accept members the advertised schema cannot name: refused at decoration."""
    with pytest.raises(InvalidToolError, match="AliasChoices or AliasPath"):
        model_tool(model)


# ---------------------------------------------------------------------------------------------------
# (c) Shapes the counter cannot see through get no counter, and lose no duplicate check.


class BeforeModel(BaseModel):
    """A model validator that may rewrite the input before the fields see it."""

    n: int
    item: Item | None = None

    @model_validator(mode="before")
    @classmethod
    def _rewrite(cls, data: Any) -> Any:
        return data


class AfterModel(BaseModel):
    """A model validator after the fields."""

    n: int
    item: Item | None = None

    @model_validator(mode="after")
    def _check(self) -> "AfterModel":
        return self


class WrapModel(BaseModel):
    """A model validator wrapping the fields."""

    n: int
    item: Item | None = None

    @model_validator(mode="wrap")
    @classmethod
    def _around(cls, data: Any, handler: Callable[[Any], Any]) -> Any:
        return handler(data)


class PostInit(BaseModel):
    """A model with a post-init hook."""

    n: int
    item: Item | None = None

    def model_post_init(self, context: Any, /) -> None:
        self.n += 0


class BeforeField(BaseModel):
    """A field validator that may rewrite a field's input."""

    n: int
    item: Item | None = None

    @field_validator("item", mode="before")
    @classmethod
    def _rewrite(cls, value: Any) -> Any:
        return value


@pydantic_dataclass
class PydanticPoint:
    """A pydantic dataclass."""

    n: int


@dataclasses.dataclass
class PlainPoint:
    """A standard-library dataclass."""

    n: int


class HoldsPydanticDataclass(BaseModel):
    """A model holding a pydantic dataclass."""

    n: int
    point: PydanticPoint | None = None


class HoldsPlainDataclass(BaseModel):
    """A model holding a standard dataclass."""

    n: int
    point: PlainPoint | None = None


UNSUPPORTED = [BeforeModel, AfterModel, WrapModel, PostInit, BeforeField, HoldsPydanticDataclass, HoldsPlainDataclass]


@pytest.mark.parametrize("model", UNSUPPORTED, ids=lambda m: m.__name__)
def test_member_counter_is_none_for_shapes_that_can_hide_members(model: type[BaseModel]) -> None:
    """Model validators (before, after, wrap), post-init hooks, before-validators and dataclasses get no counter."""
    assert member_counter(strict_core_schema(model.__pydantic_core_schema__)) is None
    assert fast_path(decoder_of(model_tool(model))).counter is None


@pytest.mark.parametrize("point", [PydanticPoint, PlainPoint], ids=["pydantic", "stdlib"])
def test_member_counter_is_none_for_a_dataclass_itself(point: type) -> None:
    """A dataclass schema on its own gets no counter."""
    assert member_counter(strict_core_schema(TypeAdapter(point).core_schema)) is None


@pytest.mark.parametrize("model", UNSUPPORTED, ids=lambda m: m.__name__)
def test_duplicates_are_still_rejected_without_a_counter(model: type[BaseModel]) -> None:
    """Without a counter prepare always runs the full parse, so duplicates at every level are rejected."""
    binding = bind(model_tool(model))
    extra = ',"point":{"n":2}' if "point" in model.model_fields else ',"item":{"name":"i"}'
    raw = '{"n":1' + extra + "}"
    assert _prepare_python(binding.contract, Request(name="shape", arguments=raw)).arguments == raw.encode()
    for doc in duplicates_of(raw):
        assert "same member name twice" in rejection_message(binding, doc)


def test_member_counter_handles_scalars_and_unknown_kinds() -> None:
    """A scalar schema counts zero members; a schema kind it does not know gets no counter."""
    scalar = member_counter(core_schema.int_schema())
    assert scalar is not None and scalar(5) == 0
    assert member_counter(core_schema.no_info_plain_validator_function(lambda v: v)) is None
    mapping = member_counter(core_schema.dict_schema(core_schema.str_schema(), core_schema.int_schema()))
    assert mapping is not None and mapping({"a": 1, "b": 2}) == 2


# ---------------------------------------------------------------------------------------------------
# strict_core_schema and json_schema_of.


class Loose(BaseModel):
    """A model whose own configuration is lax."""

    model_config = ConfigDict(extra="allow", strict=False)
    x: float
    inner: Item
    td: Point | None = None


def _nodes(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, list):
        for item in node:
            yield from _nodes(item)
    elif isinstance(node, dict):
        yield node
        for key, value in node.items():
            if key not in ("cls", "metadata"):
                yield from _nodes(value)


def test_strict_core_schema_closes_and_tightens_every_level() -> None:
    """Every object schema forbids extras, every class config is strict, every float is finite."""
    original = Loose.__pydantic_core_schema__
    strict = strict_core_schema(original)
    nodes = list(_nodes(strict))
    kinds = [node.get("type") for node in nodes]
    assert kinds.count("model-fields") >= 2 and "typed-dict" in kinds and "float" in kinds
    for node in nodes:
        if node.get("type") in ("model-fields", "typed-dict", "dataclass-args"):
            assert node["extra_behavior"] == "forbid"
        if node.get("type") in ("model", "typed-dict", "dataclass"):
            assert node["config"]["strict"] is True
            assert node["config"]["extra_fields_behavior"] == "forbid"
            assert node["config"]["allow_inf_nan"] is False
        if node.get("type") == "float":
            assert node["allow_inf_nan"] is False


def test_strict_core_schema_leaves_its_input_alone() -> None:
    """The strict schema is a copy: the model's own core schema is not changed."""
    original = Loose.__pydantic_core_schema__
    before = repr(original)
    strict_core_schema(original)
    assert repr(original) == before
    assert all("allow_inf_nan" not in node for node in _nodes(original) if node.get("type") == "float")
    assert Loose.model_validate_json('{"x":"1.5","inner":{"name":"i"},"bonus":1}').x == 1.5


def test_strict_core_schema_validator_rejects_coercion_extras_and_non_finite() -> None:
    """A validator built from a strict typed-dict schema admits no coercion, extra member or infinity."""
    schema = core_schema.typed_dict_schema(
        {
            "n": core_schema.typed_dict_field(core_schema.int_schema()),
            "x": core_schema.typed_dict_field(core_schema.float_schema(), required=False),
        }
    )
    validator = SchemaValidator(strict_core_schema(schema), STRICT_CONFIG)
    assert validator.validate_json('{"n":1,"x":1.5}') == {"n": 1, "x": 1.5}
    for bad in ('{"n":"1"}', '{"n":1.0}', '{"n":true}', '{"n":1,"y":2}', '{"n":1,"x":1e400}', '{"n":1,"x":"2"}'):
        with pytest.raises(ValidationError):
            validator.validate_json(bad)


def _object_schemas(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, list):
        for item in node:
            yield from _object_schemas(item)
    elif isinstance(node, dict):
        if "properties" in node:
            yield node
        for value in node.values():
            yield from _object_schemas(value)


@pytest.mark.parametrize(
    "model", [Nested3, Items, Tagged, ModelMap, Aliased, Forest, Pointed, Loose], ids=lambda m: m.__name__
)
def test_json_schema_of_closes_every_object_and_generates_no_field_titles(model: type[BaseModel]) -> None:
    """Every object with properties (root, nested, $defs, typed dicts) is closed; no field gets a title."""
    schema = json_schema_of(strict_core_schema(model.__pydantic_core_schema__))
    assert "title" not in schema
    found = list(_object_schemas(schema))
    assert found
    for node in found:
        assert node["additionalProperties"] is False
        for name, member in node["properties"].items():
            assert "title" not in member, name
    jsonschema.Draft202012Validator.check_schema(schema)


def test_json_schema_of_keeps_dict_values_open_and_explicit_titles() -> None:
    """A dict's additionalProperties stays its value schema, and a title set on Field is kept."""

    class Titled(BaseModel):
        scores: dict[str, int]
        named: int = Field(title="Explicit", description="A described number.")

    schema = json_schema_of(strict_core_schema(Titled.__pydantic_core_schema__))
    assert schema["additionalProperties"] is False
    assert schema["properties"]["scores"]["additionalProperties"] == {"type": "integer"}
    assert schema["properties"]["named"]["title"] == "Explicit"
    assert schema["properties"]["named"]["description"] == "A described number."


def test_advertised_schema_rejects_unknown_members_like_the_contract(
    built: dict[str, tuple[Func[..., str], Binding]],
) -> None:
    """An unknown member nested in a model is refused by both the advertised schema and prepare."""
    func, binding = built["nested-3-deep"]
    doc = '{"top":{"middle":{"leaf":{"v":1,"u":2}}}}'
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(func.definition().input_schema).validate(json.loads(doc))
    assert "$.top.middle.leaf.u: unknown field" in rejection_message(binding, doc)


@pytest.mark.parametrize(
    ("annotation", "value", "expected"),
    [
        (str, "a:b::", 3),
        (dict[str, str], {"k:1": "v:2"}, 2),
        (dict[int, str], {1: "v:2"}, 1),
        (Any, {"a:b": ["c:d", {"e": "f:g"}, 1.5, None]}, 3),
        (int | str, "a:b", 1),
        (int | str, 5, 0),
        (list[Annotated[str, AfterValidator(str.upper)]], ["a:b"], 0),
        (Literal["a:b", "c"], "a:b", 0),
        (tuple[str, ...], ("a:b", "c:d"), 2),
    ],
    ids=["str", "str-keys", "int-keys", "any", "union-str", "union-int", "rewritten", "literal", "tuple"],
)
def test_string_colons_count_only_verbatim_strings(annotation: Any, value: Any, expected: int) -> None:
    """Plain strings, names and Any values are counted; rewritten strings, literals and int keys are not."""
    counter = string_colons(strict_core_schema(TypeAdapter(annotation).core_schema))
    assert counter is not None
    assert counter(value) == expected


def test_string_colons_skip_a_tuple_of_mixed_item_schemas() -> None:
    """A variadic tuple of several item schemas is counted as members anywhere, and its strings not at all."""
    schema = core_schema.tuple_schema([core_schema.int_schema(), core_schema.str_schema()], variadic_item_index=1)
    strings = string_colons(schema)
    members = member_counter(schema)
    assert strings is not None and members is not None
    assert strings((1, "a:b", "c:d")) == 0
    assert members((1, "a", {"k": 1})) == 1


@pytest.mark.parametrize("annotation", [datetime.datetime, datetime.time, datetime.timedelta, list[AnyUrl]])
def test_string_colons_refuse_times_and_urls(annotation: Any) -> None:
    """Times and URLs are parsed from text whose ':' the value does not show: no count at all."""
    assert string_colons(strict_core_schema(TypeAdapter(annotation).core_schema)) is None


class SchemaShapedDefaults(BaseModel):
    """Defaults and extra JSON Schema shaped like core-schema nodes: data, never schema."""

    opts: dict[str, Any] = {"type": "float", "n": 1}
    kind: dict[str, Any] = Field(default={"type": "model", "config": {}}, json_schema_extra={"x-type": "typed-dict"})


def test_strict_schemas_leave_defaults_and_metadata_as_they_are() -> None:
    """A default or metadata that looks like a core-schema node is copied, not made strict (nor advertised so)."""
    schema = InputDecoder(SchemaShapedDefaults.__pydantic_core_schema__).schema
    assert schema["properties"]["opts"]["default"] == {"type": "float", "n": 1}
    assert schema["properties"]["kind"]["default"] == {"type": "model", "config": {}}

    @tool(name="shape")
    def shaped(opts: dict[str, Any] = {"type": "typed-dict", "x": 1}) -> str:  # noqa: B006 - a frozen default
        """A parameter whose default looks like a typed-dict schema."""
        return "ok"

    assert shaped.definition().input_schema["properties"]["opts"]["default"] == {"type": "typed-dict", "x": 1}


@pytest.mark.parametrize(
    "annotation",
    [
        TypedDict("Keyed", {"type": int, "schema": str, "fields": list[int], "choices": int, "ref": str}),
        Literal["type", "schema"],
        Annotated[Literal["type"] | Literal["items"], Field()],
    ],
)
def test_names_and_values_like_core_schema_keys_are_walked_as_data(annotation: Any) -> None:
    """Fields named like core-schema keys (type, schema, fields, choices, ref) build strict validators and schemas."""
    strict = strict_core_schema(TypeAdapter(annotation).core_schema)
    SchemaValidator(strict, STRICT_CONFIG)
    assert json_schema_of(strict)


def test_a_tagged_union_with_a_tag_named_type_is_walked() -> None:
    """A tagged union whose tags are "type" and "schema" keeps both choices, strict."""
    schema = core_schema.tagged_union_schema(
        {"type": core_schema.float_schema(), "schema": core_schema.int_schema()}, discriminator="k"
    )
    strict: Any = strict_core_schema(schema)
    assert strict["choices"]["type"] == {"type": "float", "allow_inf_nan": False}
    assert strict["choices"]["schema"] == {"type": "int"}


@pytest.mark.parametrize(
    ("annotation", "admitted", "rejected"),
    [
        (
            Decimal,
            ["1.5", "-2", "+0.5", ".5", "5.", "1e3", "1E-3", "0"],
            [" 1.5", "1_000", "\u0661", "NaN", "Infinity", "", "1,5"],
        ),
        (
            Annotated[Decimal, Field(max_digits=4, decimal_places=2)],
            ["12.34", "0012.3", "1.500"],
            ["1e1", "123.4", "1.234"],
        ),
    ],
)  # fmt: skip
def test_decimal_strings_match_the_advertised_pattern(
    annotation: Any, admitted: list[str], rejected: list[str]
) -> None:
    """A Decimal string is admitted exactly when the advertised pattern matches it; numbers need no pattern."""

    @tool(name="shape")
    def amount(value: annotation) -> str:  # type: ignore[valid-type]
        """A decimal parameter."""
        return "ok"

    schema = amount.definition().input_schema["properties"]["value"]
    number, text = schema["anyOf"]
    assert number["type"] == "number" and text["type"] == "string"
    check = jsonschema.Draft202012Validator(text)
    binding = bind(amount)
    for spelling in admitted:
        assert check.is_valid(spelling), spelling
        raw = json.dumps({"value": spelling})
        assert _prepare_python(binding.contract, Request("shape", raw)).arguments == raw.encode()
    for spelling in rejected:
        assert not check.is_valid(spelling), spelling
        assert "Input should be a valid decimal" in rejection_message(binding, json.dumps({"value": spelling}))
    assert fast_path(decoder_of(amount)).counter is not None  # the spelling check keeps the member count


def test_integer_member_names_match_the_advertised_pattern() -> None:
    """An int-keyed dict advertises propertyNames and admits exactly those names; its values are still counted."""

    @tool(name="shape")
    def by_id(names: dict[int, str]) -> str:
        """An int-keyed dict."""
        return "ok"

    schema = by_id.definition().input_schema["properties"]["names"]
    assert schema["propertyNames"] == {"pattern": "^-?(?:0|[1-9][0-9]*)$"}
    binding = bind(by_id)
    raw = '{"names":{"0":"a","-12":"b","90071992547409931":"c"}}'
    value = _prepare_python(binding.contract, Request("shape", raw))
    assert take_decoded(value, decoder_of(by_id)) == {"names": {0: "a", -12: "b", 90071992547409931: "c"}}
    for name in ["01", "+1", " 1", "1.0", "1_0", "a"]:
        assert "valid integer" in rejection_message(binding, json.dumps({"names": {name: "x"}}))
    assert fast_path(decoder_of(by_id)).counter is not None


@pytest.mark.parametrize(
    ("keys", "admitted", "rejected"),
    [
        (float, ["1.5", "-0", "1e3", "9007199254740992"], [" 1", "1_0", "NaN", ".5"]),
        (bool, ["true", "false"], ["1", "yes", "True", "t", ""]),
        (Decimal, ["1.5", "+2", ".5"], [" 1.5", "1_0", "NaN"]),
    ],
)
def test_number_and_boolean_member_names_match_the_advertised_names(
    keys: Any, admitted: list[str], rejected: list[str]
) -> None:
    """A dict keyed by floats, booleans or decimals advertises propertyNames and admits exactly those names."""

    @tool(name="shape")
    def keyed(names: dict[keys, str]) -> str:  # type: ignore[valid-type]
        """A dict with typed keys."""
        return "ok"

    check = jsonschema.Draft202012Validator(keyed.definition().input_schema)
    binding = bind(keyed)
    for name in admitted:
        raw = json.dumps({"names": {name: "x"}})
        assert check.is_valid(json.loads(raw)), name
        assert _prepare_python(binding.contract, Request("shape", raw)).arguments == raw.encode()
    for name in rejected:
        assert not check.is_valid({"names": {name: "x"}}), name
        rejection_message(binding, json.dumps({"names": {name: "x"}}))


def test_float_member_names_are_refused_as_float_members_are() -> None:
    """A float member name that overflows, or an integer a double would change, is refused like a float value."""

    @tool(name="shape")
    def keyed(names: dict[float, str]) -> str:
        """A float-keyed dict."""
        return "ok"

    binding = bind(keyed)
    assert "finite number" in rejection_message(binding, '{"names":{"1e400":"x"}}')
    assert "a double holds exactly" in rejection_message(binding, '{"names":{"-9007199254740993":"x"}}')


def test_the_core_schema_walk_reaches_every_kind_of_node_holder() -> None:
    """Labelled union choices, call and arguments parameters, chains and definitions are walked; data is not."""
    point = core_schema.float_schema(metadata={"type": "float"})
    schema = core_schema.definitions_schema(
        core_schema.call_schema(
            core_schema.arguments_schema(
                [
                    core_schema.arguments_parameter(
                        "x", core_schema.union_schema([(point, "a"), core_schema.int_schema()])
                    )
                ],
                var_args_schema=core_schema.float_schema(),
            ),
            function=print,
            return_schema=core_schema.chain_schema([core_schema.str_schema(), core_schema.float_schema()]),
        ),
        [core_schema.float_schema(ref="f")],
    )
    strict: Any = strict_core_schema(schema)
    floats = [node for node in core_schema_nodes(strict) if node.get("type") == "float"]
    assert len(floats) == 4
    assert all(node["allow_inf_nan"] is False for node in floats)
    assert floats[0]["metadata"] == {"type": "float"}  # metadata is data: never made strict

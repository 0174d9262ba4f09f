"""A corpus of tool signatures that every provider export is checked on.

Each entry is a real `@tool`, covering what pydantic schemas hold: optional fields and defaults, nested
and recursive models, unions, discriminated unions, enums, Literal, dict fields, tuples, datetimes,
constraints and Any.
"""

from __future__ import annotations

import datetime as dt
import enum
import uuid
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from scopetool import Effect, Func, tool


class Color(enum.Enum):
    """A string enum."""

    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    """An integer enum."""

    LOW = 1
    HIGH = 2


class Address(BaseModel):
    """A nested model."""

    street: str
    city: str
    postcode: str | None = None


class Customer(BaseModel):
    """A model holding a model."""

    name: str
    address: Address
    tags: list[str] = []


class Node(BaseModel):
    """A recursive model."""

    label: str
    children: list[Node] = []


class Cat(BaseModel):
    """One branch of a discriminated union."""

    kind: Literal["cat"]
    lives: int = 9


class Dog(BaseModel):
    """The other branch."""

    kind: Literal["dog"]
    good: bool = True


class Window(BaseModel):
    """A model with constraints."""

    start: dt.datetime
    end: dt.datetime | None = None
    limit: Annotated[int, Field(ge=1, le=100)] = 10


@tool
def ping() -> str:
    """No parameters at all."""
    return "pong"


@tool(effect=Effect.SAFE)
def add(a: int, b: int) -> int:
    """Two required integers."""
    return a + b


@tool
def greet(name: str, punctuation: str = "!") -> str:
    """A string with a default."""
    return name + punctuation


@tool
def maybe(note: str | None = None) -> str:
    """An optional nullable string."""
    return note or ""


@tool
def scale(x: float, factor: float = 2.0) -> float:
    """Floats with a default."""
    return x * factor


@tool
def flag(on: bool = False) -> bool:
    """A boolean with a default."""
    return on


@tool
def pick(color: Color) -> str:
    """A string enum."""
    return color.value


@tool
def level(value: Level = Level.LOW) -> int:
    """An integer enum with a default."""
    return int(value)


@tool
def sort(order: Literal["asc", "desc"] = "asc") -> str:
    """A Literal of strings."""
    return order


@tool
def mode(value: Literal[1, 2, 3]) -> int:
    """A Literal of integers."""
    return value


@tool
def constant(kind: Literal["only"]) -> str:
    """A one-value Literal (const)."""
    return kind


@tool
def bounded(count: Annotated[int, Field(ge=0, le=10)], ratio: Annotated[float, Field(gt=0, lt=1)] = 0.5) -> int:
    """Numeric bounds, inclusive and exclusive."""
    return count


@tool
def text_rules(code: Annotated[str, Field(min_length=2, max_length=8, pattern=r"^[A-Z]+$")]) -> str:
    """String length and pattern."""
    return code


@tool
def sized(items: Annotated[list[int], Field(min_length=1, max_length=5)]) -> int:
    """Array length bounds."""
    return len(items)


@tool
def unique(items: set[str]) -> int:
    """A set (uniqueItems)."""
    return len(items)


@tool
def pair(point: tuple[int, int]) -> int:
    """A homogeneous tuple."""
    return point[0]


@tool
def mixed_tuple(row: tuple[str, int, bool]) -> str:
    """A heterogeneous tuple."""
    return row[0]


@tool
def when(at: dt.datetime, day: dt.date | None = None) -> str:
    """Datetime and date formats."""
    return at.isoformat()


@tool
def ident(value: uuid.UUID) -> str:
    """A uuid format."""
    return str(value)


@tool
def money(amount: Decimal) -> str:
    """A Decimal (a number or a numeric string)."""
    return str(amount)


@tool
def either(value: int | str) -> str:
    """A plain union of scalars."""
    return str(value)


@tool
def counts(by_name: dict[str, int]) -> int:
    """An open dict with typed values."""
    return sum(by_name.values())


@tool
def anything(payload: Any) -> str:
    """An unconstrained value."""
    return str(payload)


@tool
def lookup(customer: Customer) -> str:
    """A single model parameter (the input object itself), with a nested model."""
    return customer.name


@tool
def ship(customer: Customer, express: bool = False) -> str:
    """A nested model next to another parameter."""
    return customer.address.city


@tool
def optional_model(address: Address | None = None) -> str:
    """An optional nested model."""
    return address.city if address else ""


@tool
def addresses(items: list[Address]) -> int:
    """A list of models."""
    return len(items)


@tool
def tree(root: Node) -> str:
    """A recursive model."""
    return root.label


@tool
def pet(animal: Annotated[Cat | Dog, Field(discriminator="kind")]) -> str:
    """A discriminated union of models."""
    return animal.kind


@tool
def plain_union(animal: Cat | Dog) -> str:
    """A non-discriminated union of models."""
    return animal.kind


@tool
def window(range_: Window) -> str:
    """A model with datetimes and constraints."""
    return range_.start.isoformat()


@tool
def documented(query: str, limit: int = 10) -> list[str]:
    """Search the catalogue.

    Args:
        query: Words to look for.
        limit: How many results to return.
    """
    return [query][:limit]


@tool
def matrix(rows: list[list[float]]) -> int:
    """Nested arrays."""
    return len(rows)


CORPUS: list[Func[..., Any]] = [
    ping, add, greet, maybe, scale, flag, pick, level, sort, mode, constant, bounded, text_rules, sized,
    unique, pair, mixed_tuple, when, ident, money, either, counts, anything, lookup, ship, optional_model,
    addresses, tree, pet, plain_union, window, documented, matrix,
]  # fmt: skip
"""Every tool of the corpus, in a fixed order."""

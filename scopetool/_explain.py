"""A rejected call's explanation: `Explainer`, which writes it for the model from what admission found.

`Contract.prepare` finds what is wrong (a size, a syntax problem, pydantic's errors, a schema's
errors, the input's own rule); everything that turns such a finding into the message the model reads
lives here: the choice between pydantic's errors and the advertised schema's, the wording
(`_feedback`), the cap on problems told, and the messages kept for reuse.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, final

from pydantic_core import ErrorDetails, ValidationError

from ._decoder import StrictDecoder
from ._errors import InputValidationError, InvalidInvocationError, InvalidToolError
from ._feedback import (
    EAGER_LIMIT,
    MAX_DESCRIBED,
    MORE,
    PydanticFact,
    describe_facts,
    describe_schema_errors,
    format_rejection,
    pydantic_facts,
    schema_errors,
)
from ._json import MAX_INPUT_BYTES, parse_checked
from ._rejection import InputRejection
from ._schema import compile_schema

__all__ = ["Explainer"]

_MEMO_FACTS: Final = 8
"""The most problems of a rejection whose message an explainer keeps for reuse."""
_MEMO_SIZE: Final = 256
"""The most rejection messages an explainer keeps for reuse (it starts again when full)."""
NOT_UTF8: Final = "the arguments are not valid UTF-8 (they hold a lone surrogate)"
"""The problem told of arguments that cannot be encoded as UTF-8."""


@final
class Explainer:
    """Writes one tool's rejections: each a model-facing `InputRejection` carried by `InvalidInvocationError`.

    One per `Contract`, made with it; it keeps the messages of recurring problems (by their facts, once
    they are known to show no input value) and the advertised schema's checker, compiled when first needed.
    """

    __slots__ = ("_decoder", "_fallback", "_messages", "_name", "_schema")

    def __init__(self, name: str, schema: dict[str, Any], decoder: object) -> None:
        self._name = name
        self._schema = schema
        self._decoder = decoder
        self._fallback: Any = None
        self._messages: dict[tuple[PydanticFact, ...], str] = {}

    def rejected(self, problem: str) -> InvalidInvocationError:
        """The error for one problem admission found."""
        return invalid(self.rejection([problem]))

    def oversize(self, size: int) -> InvalidInvocationError:
        """The error for arguments of `size` bytes, over `MAX_INPUT_BYTES`."""
        return self.rejected(f"the arguments are over {size - 1} bytes; the limit is {MAX_INPUT_BYTES} bytes")

    def schema_rejected(self, validator: Any, value: Any, size: int) -> InvalidInvocationError:
        """The error for `value` (parsed from `size` bytes), which the compiled input schema `validator` refused."""
        return invalid(self.rejection(describe_schema_errors(schema_errors(validator, value, size), self._schema)))

    def rejected_after(self, raw: str | bytes, failure: Exception) -> InvalidInvocationError:
        """The error for `raw`, which the input's validation failed with `failure`."""
        found = self.rejection_after(raw, failure)
        return invalid(found) if isinstance(found, InputRejection) else found

    def explain(self, raw: str | bytes, failure: Exception) -> tuple[str, BaseException | None]:
        """The message and cause of a rejection raised with its explanation pending (see `deferred_rejection`)."""
        found = self.rejection_after(raw, failure)
        if isinstance(found, InputRejection):
            return found.message, found
        return str(found), found.__cause__

    def rejection_after(self, raw: str | bytes, failure: Exception) -> InputRejection | InvalidInvocationError:
        """What `rejected_after` raises: the `InputRejection` it carries where the model can correct the input.

        The document's own I-JSON problems come first; then pydantic's errors, or the input's own rule;
        a validator defect aborts pydantic mid-way, so the advertised schema is checked before the defect
        is reported as one.
        """
        if isinstance(raw, str):
            try:
                data = raw.encode()
            except UnicodeEncodeError:
                return invalid(self.rejection([NOT_UTF8]))
        else:
            data = raw
        document, problem = parse_checked(data, finite=False)
        if problem is not None:
            return self.rejection([problem.message])
        if isinstance(failure, InputRejection):
            return failure
        defect: BaseException = failure
        if isinstance(failure, ValidationError):
            described = self._described(data, document, failure)
            if isinstance(described, InputRejection):
                return described
            defect = described  # a failed assertion: the validator's own defect, whatever its text says
        schema_problems = self._schema_problems(data, document)
        if schema_problems:
            return self.rejection(schema_problems)
        error = InvalidInvocationError(f"the input validator of {self._name!r} failed")
        error.__cause__ = InputValidationError(defect)
        return error

    def rejection(self, problems: list[str], cause: BaseException | None = None) -> InputRejection:
        """The `InputRejection` that tells the model `problems`."""
        return InputRejection._written(format_rejection(self._name, problems), cause)  # pyright: ignore[reportPrivateUsage]

    def _described(self, raw: bytes, document: Any, failure: ValidationError) -> BaseException:
        """The rejection pydantic's errors make (an `InputRejection`), or the defect among them (a failed assertion)."""
        decoder = self._decoder
        cut = False  # whether the problems described may be only the first ones
        details = _details(failure)  # read once: pydantic builds every dict again on each call
        if isinstance(decoder, StrictDecoder) and decoder.may_have_stopped_early(failure, details):
            # The admitting validator stops at the first bad item of an array or map: a small
            # document's other problems are looked for again, so repeated ones are reported together.
            if len(raw) > EAGER_LIMIT:
                cut = True
            else:
                every = decoder.every_error(raw)
                if every is not None:
                    failure, details = every, _details(every)
        if details is None:
            # Too many to read one by one (pydantic would build a dict for every one): the advertised
            # schema describes the first ones or, when it holds, the count alone is told.
            count = failure.error_count()
            problems = self._schema_problems(raw, document) or [f"{count} values are not valid here", MORE]
            return self.rejection(problems, cause=failure)
        facts, plain = pydantic_facts(details, document)
        if not plain:  # a failed assertion, or a context holding an exception (the input's own rule)
            for detail in details:
                if detail["type"] == "assertion_error":
                    raised = detail.get("ctx", {}).get("error")
                    if isinstance(raised, BaseException) and not isinstance(raised, InputRejection):
                        return raised
                    return failure
            rejections = _hook_rejections(details)
            if len(rejections) == len(details):
                # Only the input's own rules failed: their public messages, exactly.
                if len(rejections) == 1:
                    return rejections[0]
                return InputRejection("\n".join(dict.fromkeys(r.message for r in rejections)))
        # The same problems in other input make the same message: it is kept, by its facts, once it is
        # known to show nothing of the input's values (see `describe_facts`).
        key = tuple(facts) if plain and not cut and len(facts) <= _MEMO_FACTS else None
        message = None if key is None else self._messages.get(key)
        if message is None:
            problems, worded = describe_facts(facts, self._schema)
            if cut and problems[-1:] != [MORE]:
                problems.append(MORE)
            message = format_rejection(self._name, problems)
            if key is not None and worded:
                if len(self._messages) >= _MEMO_SIZE:
                    self._messages.clear()
                self._messages[key] = message
        return InputRejection._written(message, failure)  # pyright: ignore[reportPrivateUsage] - scopetool's own

    def _schema_problems(self, raw: bytes, value: Any) -> list[str]:
        """Problems the advertised JSON Schema finds in `value`, parsed from `raw` (compiled on first use)."""
        checker = self._fallback
        if checker is None:
            checker = self._fallback = compile_schema(self._schema, "input schema", InvalidToolError)
        if checker.is_valid(value):
            return []
        return describe_schema_errors(schema_errors(checker, value, len(raw)), self._schema)


def invalid(rejection: InputRejection) -> InvalidInvocationError:
    """The `InvalidInvocationError` that carries `rejection` as its cause."""
    error = InvalidInvocationError(rejection.message)
    error.__cause__ = rejection
    return error


def _details(failure: ValidationError) -> list[ErrorDetails] | None:
    """The errors of `failure` as `pydantic_facts` reads them, or None past `MAX_DESCRIBED` of them."""
    if failure.error_count() > MAX_DESCRIBED:
        return None
    return failure.errors(include_url=False, include_context=True, include_input=False)


def _hook_rejections(details: Iterable[ErrorDetails]) -> list[InputRejection]:
    """The InputRejections validators raised, which pydantic collected as value errors."""
    found: list[InputRejection] = []
    for detail in details:
        raised = detail.get("ctx", {}).get("error")
        if isinstance(raised, InputRejection):
            found.append(raised)
    return found

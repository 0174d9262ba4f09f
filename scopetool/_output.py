"""What a tool produces: content blocks, `Output` and `Result`."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias, cast, final

from ._errors import InvalidOutputError
from ._input import InputRequest
from ._json import loads_exact, may_hold_non_finite, syntax_problem
from ._native import build, slots

__all__ = ["ContentBlock", "MediaBlock", "Output", "Result", "TextBlock"]

# RFC 6838 type/subtype names, then optional RFC 9110 parameters (token=token or token="quoted"). The
# pattern is compiled on first use (by `re`'s own cache), not when scopetool is imported.
_NAME = r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}"
_TOKEN = r"[A-Za-z0-9!#$%&'*+.^_`|~-]+"
_MEDIA_TYPE = rf'{_NAME}/{_NAME}(?:[ \t]*;[ \t]*{_TOKEN}=(?:{_TOKEN}|"[^"\\]*"))*'


@final
@dataclass(frozen=True, slots=True)
class TextBlock:
    """A non-empty piece of model-visible text."""

    text: str
    """The text itself; never empty."""

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise InvalidOutputError(f"text block: text must be str, not {type(self.text).__name__}")
        if not self.text:
            raise InvalidOutputError("text block: text is empty (use an Output with no content instead)")


@final
@dataclass(frozen=True, slots=True)
class MediaBlock:
    """A model-visible media item: a MIME type and exactly one source (inline bytes, a URI or a reference)."""

    mime_type: str
    """The media type, such as ``image/png``."""
    data: bytes | None = None
    """Inline content; non-empty when set."""
    uri: str | None = None
    """An absolute URI with a scheme, such as ``https://...`` or ``file:///...``."""
    reference: str | None = None
    """An opaque reference the host resolves, such as a file id; non-blank when set."""

    def __post_init__(self) -> None:
        if not isinstance(self.mime_type, str) or not re.fullmatch(_MEDIA_TYPE, self.mime_type):
            raise InvalidOutputError(f"media block: {self.mime_type!r} is not a media type such as 'image/png'")
        sources = [name for name in ("data", "uri", "reference") if getattr(self, name) is not None]
        if len(sources) != 1:
            raise InvalidOutputError(f"media block: exactly one of data, uri and reference must be set, not {sources}")
        if self.data is not None:
            if isinstance(self.data, bytearray | memoryview):
                object.__setattr__(self, "data", bytes(self.data))
            elif not isinstance(self.data, bytes):
                raise InvalidOutputError(f"media block: data must be bytes, not {type(self.data).__name__}")
            if not self.data:
                raise InvalidOutputError("media block: data is empty")
        if self.uri is not None:
            from urllib.parse import urlsplit  # noqa: PLC0415 - only media blocks with a URI need it

            parts = urlsplit(self.uri) if isinstance(self.uri, str) else None
            if parts is None or not parts.scheme or not (parts.netloc or parts.path):
                raise InvalidOutputError("media block: uri must be an absolute URI with a scheme")
        if self.reference is not None and (not isinstance(self.reference, str) or not self.reference.strip()):
            raise InvalidOutputError("media block: reference is blank")

    @classmethod
    def guess(cls, filename: str, data: bytes) -> MediaBlock:
        """Build an inline block whose MIME type is guessed from `filename`'s extension."""
        import mimetypes  # noqa: PLC0415 - only guessing needs it, and it reads system files

        mime, _ = mimetypes.guess_type(filename)
        if mime is None:
            raise InvalidOutputError(f"media block: cannot guess a media type from {filename!r}")
        return cls(mime_type=mime, data=data)


ContentBlock: TypeAlias = TextBlock | MediaBlock
"""One block of model-visible content."""


@final
@dataclass(frozen=True, slots=True)
class Output:
    """The provider-neutral value a tool produces.

    `content` is what the model sees, in order (text and media). `details` is optional JSON for
    structured consumers, kept byte for byte as given; providers show it to the model only when
    there is no content. Every field is immutable, so an `Output` can be shared freely.

    Example:
        ```python
        from scopetool import Output

        print(Output.from_text("done").text())
        #> done
        print(Output.from_json('{"sum": 5}').text())
        #> {"sum": 5}
        ```
    """

    content: tuple[ContentBlock, ...] = ()
    """Model-visible blocks, in order."""
    details: bytes | None = field(default=None)
    """One RFC 7493 JSON document, exactly as encoded, or None."""

    def __post_init__(self) -> None:
        content = self.content
        if not isinstance(content, tuple):
            if isinstance(content, str | bytes) or not hasattr(content, "__iter__"):
                raise InvalidOutputError("output: content must be a sequence of TextBlock and MediaBlock")
            content = tuple(cast("Iterable[object]", content))  # checked block by block below
            object.__setattr__(self, "content", content)
        for index, block in enumerate(content):
            if not isinstance(block, TextBlock | MediaBlock):
                raise InvalidOutputError(
                    f"output: content[{index}] must be a content block, not {type(block).__name__}"
                )
        if self.details is not None:
            object.__setattr__(self, "details", _checked_json(self.details, "output: details"))

    @classmethod
    def from_text(cls, text: str) -> Output:
        """A text-only output; empty text gives the empty output."""
        if not isinstance(text, str):
            raise InvalidOutputError(f"output: text must be str, not {type(text).__name__}")
        if not text:
            return cls()
        block = build(TextBlock, _TEXT_BLOCK, text)  # checked above: a non-empty str is a valid text block
        return build(Output, _OUTPUT, (block,), None)

    @classmethod
    def from_json(cls, raw: str | bytes) -> Output:
        """A structured output whose exact JSON encoding is kept (one RFC 7493 document)."""
        return cls(details=_checked_json(raw, "output: details"))

    def text(self) -> str | None:
        """The lossless text projection, for providers that accept only strings.

        With no content it is the details' JSON text (or ""); with only text blocks, their texts
        joined; with any media block, None, so an adapter cannot silently drop media.
        """
        if not self.content:
            return self.details.decode("utf-8") if self.details is not None else ""
        texts: list[str] = []
        for block in self.content:
            if not isinstance(block, TextBlock):
                return None
            texts.append(block.text)
        return "".join(texts)

    def details_value(self) -> Any:
        """The details parsed (exact integers; floats as jiter lossless floats), or None when absent."""
        return None if self.details is None else loads_exact(self.details)


def _assembled(content: tuple[ContentBlock, ...], details: bytes | None) -> Output:
    """An Output from parts already known to be valid (the frozen dataclass's checks skipped)."""
    return build(Output, _OUTPUT, content, details)


def serialized_output(data: bytes) -> Output:
    """An Output holding JSON that pydantic's serializer wrote, without parsing it again.

    Such JSON is valid, one document, with no repeated member names; only the NaN/Infinity constants it
    writes for non-finite floats are looked for, and those go through the full check (which refuses them).
    """
    if may_hold_non_finite(data):
        return Output(details=data)  # the full check names the problem
    return _assembled((), data)


def _checked_json(raw: object, where: str) -> bytes:
    if isinstance(raw, str):
        try:
            data = raw.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidOutputError(f"{where}: not valid UTF-8 (lone surrogate)") from None
    elif isinstance(raw, bytes | bytearray | memoryview):
        data = bytes(cast("bytes | bytearray | memoryview[int]", raw))  # isinstance cannot name the item type
    else:
        raise InvalidOutputError(f"{where}: must be JSON text (str or bytes), not {type(raw).__name__}")
    problem = syntax_problem(data, require_object=False)
    if problem is not None:
        raise InvalidOutputError(f"{where}: not one RFC 7493 JSON document: {problem.message}")
    return data


@final
@dataclass(frozen=True, slots=True)
class Result:
    """Either a completed output or a request for external input (which carries no output yet).

    The empty result completes with an empty output. A tool returns ``Result(input_request=...)``
    before any external effect; the driver persists the request, gets an answer, and prepares the same
    call again with ``Admission(continuation=request.continuation(answer))``.
    """

    output: Output = field(default_factory=Output)
    """The completed output."""
    input_request: InputRequest | None = None
    """The input this call waits for, or None for a completed call."""

    def __post_init__(self) -> None:
        if not isinstance(self.output, Output):
            hint = ": Result(Output.from_text(text))" if isinstance(self.output, str) else ""
            raise InvalidOutputError(f"result: output must be an Output, not {type(self.output).__name__}{hint}")
        if self.input_request is not None:
            if not isinstance(self.input_request, InputRequest):
                raise InvalidOutputError(
                    f"result: input_request must be an InputRequest, not {type(self.input_request).__name__}"
                )
            if self.output.content or self.output.details is not None:
                raise InvalidOutputError("result: an input request carries no output; the call is not complete")


def completed(output: Output) -> Result:
    """The completed `Result` of `output`, which is an `Output` by construction (the checks skipped)."""
    return build(Result, _RESULT, output, None)


def completed_details(data: bytes) -> Result:
    """The completed `Result` of JSON details known to be one finite RFC 7493 document (nothing checked)."""
    return build(Result, _RESULT, build(Output, _OUTPUT, (), data), None)


# The slots `build` writes, as the frozen dataclasses' own __init__ writes them, for less.
_TEXT_BLOCK: Final = slots(TextBlock, "text")
_OUTPUT: Final = slots(Output, "content", "details")
_RESULT: Final = slots(Result, "output", "input_request")

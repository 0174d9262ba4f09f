"""Tests for scopetool._output: TextBlock, MediaBlock, Output and Result."""

from __future__ import annotations

import dataclasses
import pickle

import jiter
import pytest

from scopetool import InvalidOutputError, MediaBlock, Output, Result, ScopetoolError, TextBlock

PNG = b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------------------------------
# TextBlock


def test_text_block_keeps_text() -> None:
    """A non-empty text is kept as given, including white space only text."""
    assert TextBlock("hello").text == "hello"
    assert TextBlock(" ").text == " "


def test_text_block_empty_rejected() -> None:
    """An empty text block is refused."""
    with pytest.raises(InvalidOutputError):
        TextBlock("")


@pytest.mark.parametrize("text", [None, b"x", 1, ["x"]])
def test_text_block_non_str_rejected(text: object) -> None:
    """A text that is not a str is refused with InvalidOutputError."""
    with pytest.raises(InvalidOutputError):
        TextBlock(text)  # type: ignore[arg-type]


def test_text_block_frozen() -> None:
    """A text block cannot be changed after construction."""
    block = TextBlock("a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        block.text = "b"  # type: ignore[misc]
    assert block.text == "a"


def test_invalid_output_error_hierarchy() -> None:
    """InvalidOutputError is a ScopetoolError and a ValueError."""
    with pytest.raises(ScopetoolError):
        TextBlock("")
    with pytest.raises(ValueError):
        TextBlock("")


# --------------------------------------------------------------------------------------------------
# MediaBlock


@pytest.mark.parametrize(
    "kwargs",
    [
        {"data": PNG},
        {"uri": "https://example.com/a.png"},
        {"uri": "file:///tmp/a.png"},
        {"uri": "urn:isbn:0451450523"},
        {"reference": "file-abc123"},
    ],
)
def test_media_block_one_source(kwargs: dict[str, object]) -> None:
    """Exactly one of data, uri and reference is accepted."""
    block = MediaBlock("image/png", **kwargs)  # type: ignore[arg-type]
    assert block.mime_type == "image/png"
    for name in ("data", "uri", "reference"):
        assert (getattr(block, name) is not None) is (name in kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"data": PNG, "uri": "https://example.com/a.png"},
        {"data": PNG, "reference": "r"},
        {"uri": "https://example.com/a.png", "reference": "r"},
        {"data": PNG, "uri": "https://e.com/a", "reference": "r"},
    ],
)
def test_media_block_needs_exactly_one_source(kwargs: dict[str, object]) -> None:
    """Zero sources, or more than one, are refused."""
    with pytest.raises(InvalidOutputError, match="exactly one"):
        MediaBlock("image/png", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("data", [b"", bytearray(), memoryview(b"")])
def test_media_block_empty_data_rejected(data: object) -> None:
    """Empty inline data is refused."""
    with pytest.raises(InvalidOutputError):
        MediaBlock("image/png", data=data)  # type: ignore[arg-type]


@pytest.mark.parametrize("data", ["text", 5, [1, 2]])
def test_media_block_data_must_be_bytes(data: object) -> None:
    """Inline data that is not bytes-like is refused."""
    with pytest.raises(InvalidOutputError):
        MediaBlock("image/png", data=data)  # type: ignore[arg-type]


def test_media_block_bytearray_copied_to_bytes() -> None:
    """A bytearray is snapshotted to immutable bytes; later changes to it do not leak in."""
    raw = bytearray(b"abc")
    block = MediaBlock("image/png", data=raw)  # type: ignore[arg-type]
    raw[0:1] = b"X"
    assert type(block.data) is bytes
    assert block.data == b"abc"


def test_media_block_memoryview_copied_to_bytes() -> None:
    """A memoryview is snapshotted to bytes too."""
    backing = bytearray(b"xyz")
    block = MediaBlock("image/png", data=memoryview(backing))  # type: ignore[arg-type]
    backing[0] = ord("Q")
    assert type(block.data) is bytes
    assert block.data == b"xyz"


@pytest.mark.parametrize("mime", ["png", "", "/", "/png", "image/", "//", None, 5, b"image/png"])
def test_media_block_bad_mime(mime: object) -> None:
    """A media type needs a type and a subtype around a slash."""
    with pytest.raises(InvalidOutputError):
        MediaBlock(mime, data=PNG)  # type: ignore[arg-type]


@pytest.mark.parametrize("mime", ["image/png", "application/json", "text/plain; charset=utf-8", "audio/x-wav"])
def test_media_block_good_mime(mime: str) -> None:
    """Ordinary media types, with parameters, are accepted."""
    assert MediaBlock(mime, data=PNG).mime_type == mime


@pytest.mark.parametrize("mime", ["image png/x y", "a b/c d", "image/png/extra garbage"])
def test_media_block_unparsable_mime_rejected(mime: str) -> None:
    """A media type that does not parse (spaces inside the type/subtype tokens) is refused."""
    with pytest.raises(InvalidOutputError):
        MediaBlock(mime, data=PNG)


@pytest.mark.parametrize(
    "uri", ["relative/path.png", "//host/path", "https:", "", "a.png", "/abs/path", 5, b"https://x"]
)
def test_media_block_uri_must_be_absolute(uri: object) -> None:
    """A uri needs a scheme and a host, path or opaque part, and must be a str."""
    with pytest.raises(InvalidOutputError, match="absolute"):
        MediaBlock("image/png", uri=uri)  # type: ignore[arg-type]


@pytest.mark.parametrize("reference", ["", " ", "\t\n", 5, b"ref"])
def test_media_block_blank_reference_rejected(reference: object) -> None:
    """A reference must be a non-blank str."""
    with pytest.raises(InvalidOutputError):
        MediaBlock("image/png", reference=reference)  # type: ignore[arg-type]


def test_media_block_guess() -> None:
    """guess() infers the media type from the file extension and keeps the bytes inline."""
    block = MediaBlock.guess("photo.png", PNG)
    assert block == MediaBlock("image/png", data=PNG)
    assert MediaBlock.guess("doc.PDF", b"%PDF").mime_type == "application/pdf"


def test_media_block_guess_unknown_extension() -> None:
    """guess() refuses a filename whose type cannot be guessed."""
    with pytest.raises(InvalidOutputError):
        MediaBlock.guess("data.unknown-ext-zz", b"x")
    with pytest.raises(InvalidOutputError):
        MediaBlock.guess("noextension", b"x")


def test_media_block_guess_empty_data() -> None:
    """guess() still applies the non-empty data rule."""
    with pytest.raises(InvalidOutputError):
        MediaBlock.guess("a.png", b"")


def test_media_block_frozen() -> None:
    """A media block cannot be changed after construction."""
    block = MediaBlock("image/png", data=PNG)
    with pytest.raises(dataclasses.FrozenInstanceError):
        block.data = b"other"  # type: ignore[misc]
    assert block.data == PNG


# --------------------------------------------------------------------------------------------------
# Output construction


def test_output_default_is_empty() -> None:
    """The default output has no content and no details."""
    out = Output()
    assert out.content == ()
    assert out.details is None


def test_output_content_list_converted_to_tuple() -> None:
    """A content list becomes a tuple, detached from the caller's list."""
    blocks = [TextBlock("a"), MediaBlock("image/png", data=PNG)]
    out = Output(content=blocks)  # type: ignore[arg-type]
    blocks.append(TextBlock("later"))
    assert isinstance(out.content, tuple)
    assert out.content == (TextBlock("a"), MediaBlock("image/png", data=PNG))


def test_output_content_generator_accepted() -> None:
    """Any iterable of blocks is accepted and materialised as a tuple."""
    out = Output(content=(TextBlock(t) for t in "ab"))  # type: ignore[arg-type]
    assert out.content == (TextBlock("a"), TextBlock("b"))


@pytest.mark.parametrize("content", ["abc", b"abc", 5, None, TextBlock("a")])
def test_output_content_must_be_a_sequence(content: object) -> None:
    """A str, bytes, non-iterable or bare block is not a content sequence."""
    with pytest.raises(InvalidOutputError):
        Output(content=content)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "content",
    [["text"], (TextBlock("a"), "b"), [None], [{"kind": "text", "text": "a"}], (TextBlock("a"), Output())],
)
def test_output_content_rejects_non_blocks(content: object) -> None:
    """Every content item must be a TextBlock or MediaBlock; the error names its index."""
    with pytest.raises(InvalidOutputError, match=r"content\[\d\] must be a content block, not [A-Za-z]+$"):
        Output(content=content)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "details",
    ['{"a":1}', b"[1,2]", "null", "0", '"s"', b' {"a": 1.50} ', bytearray(b"true")],
)
def test_output_details_accepts_one_document(details: str | bytes) -> None:
    """Any single RFC 7493 document is valid details and is stored as bytes."""
    out = Output(details=details)  # type: ignore[arg-type]
    assert type(out.details) is bytes
    expected = details.encode() if isinstance(details, str) else bytes(details)
    assert out.details == expected


@pytest.mark.parametrize(
    "details",
    [
        '{"a":1,"a":2}',
        '{"x":{"\\u0061":1,"a":2}}',
        "NaN",
        '{"a":Infinity}',
        "{} {}",
        '{"a":1}x',
        "",
        "   ",
        "{",
        '"\\ud800"',
        b'"\xff"',
        '"\ud800"',
    ],
)
def test_output_details_rejects_non_i_json(details: str | bytes) -> None:
    """Duplicate keys, NaN/Infinity, trailing data, blank text, truncation and bad Unicode are refused."""
    with pytest.raises(InvalidOutputError):
        Output(details=details)
    with pytest.raises(InvalidOutputError):
        Output.from_json(details)


@pytest.mark.parametrize("details", [{"a": 1}, [1], 1, 1.5, True])
def test_output_details_must_be_json_text(details: object) -> None:
    """Details are JSON text, not Python values."""
    with pytest.raises(InvalidOutputError):
        Output(details=details)  # type: ignore[arg-type]


def test_output_details_error_does_not_echo_input() -> None:
    """The details error message does not repeat the rejected JSON text."""
    secret = "zq-SECRET-12ab"
    with pytest.raises(InvalidOutputError) as caught:
        Output.from_json(f'{{"{secret}":1,"{secret}":2}}')
    assert secret not in str(caught.value)


def test_output_frozen() -> None:
    """Output fields cannot be reassigned."""
    out = Output.from_text("a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.content = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.details = b"{}"  # type: ignore[misc]
    assert out.content == (TextBlock("a"),)


def test_output_equality_and_hash() -> None:
    """Outputs compare by value and are hashable."""
    assert Output() == Output(content=[])  # type: ignore[arg-type]
    assert Output.from_text("a") == Output(content=(TextBlock("a"),))
    assert Output.from_text("a") != Output.from_text("b")
    assert hash(Output.from_json("{}")) == hash(Output(details=b"{}"))


def test_output_pickle_round_trip() -> None:
    """An output with text, media and details survives pickling."""
    out = Output(content=(TextBlock("a"), MediaBlock("image/png", data=PNG)), details=b'{"n":1.50}')
    assert pickle.loads(pickle.dumps(out)) == out


# --------------------------------------------------------------------------------------------------
# from_text / from_json


def test_from_text_empty_is_empty_output() -> None:
    """from_text("") is the empty output, not a block with empty text."""
    assert Output.from_text("") == Output()
    assert Output.from_text("").content == ()


def test_from_text_one_block() -> None:
    """from_text makes exactly one text block and no details."""
    out = Output.from_text("done")
    assert out.content == (TextBlock("done"),)
    assert out.details is None


@pytest.mark.parametrize("text", [None, b"x", 1])
def test_from_text_non_str_rejected(text: object) -> None:
    """from_text needs a str."""
    with pytest.raises(InvalidOutputError):
        Output.from_text(text)  # type: ignore[arg-type]


@pytest.mark.parametrize("raw", ['{"b":1, "a":2.50}', b'{"b":1, "a":2.50}', '\n{ "z" : 1e2 }\t', "null"])
def test_from_json_keeps_exact_bytes(raw: str | bytes) -> None:
    """from_json keeps the document byte for byte: no reordering, reformatting or number rewriting."""
    out = Output.from_json(raw)
    expected = raw.encode() if isinstance(raw, str) else raw
    assert out.details == expected
    assert out.content == ()


def test_from_json_non_ascii_str_encoded_as_utf8() -> None:
    """A str document is stored as its UTF-8 encoding."""
    assert Output.from_json('{"k":"\u00e9\U0001f600"}').details == '{"k":"\u00e9\U0001f600"}'.encode()


@pytest.mark.parametrize("raw", [None, 1, {"a": 1}])
def test_from_json_wrong_type(raw: object) -> None:
    """from_json refuses values that are not JSON text."""
    with pytest.raises(InvalidOutputError):
        Output.from_json(raw)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------
# text() projection


def test_text_empty_output() -> None:
    """The empty output projects to the empty string."""
    assert Output().text() == ""


def test_text_details_only() -> None:
    """With no content, the projection is the details' exact JSON text."""
    assert Output.from_json('{"b":1, "a":2.50}').text() == '{"b":1, "a":2.50}'
    assert Output.from_json(b" [1] ").text() == " [1] "


def test_text_joins_text_blocks_without_separator() -> None:
    """All-text content is joined with no separator."""
    out = Output(content=(TextBlock("a"), TextBlock(" b"), TextBlock("\nc")))
    assert out.text() == "a b\nc"


@pytest.mark.parametrize(
    "content",
    [
        (MediaBlock("image/png", data=PNG),),
        (TextBlock("a"), MediaBlock("image/png", uri="https://e.com/x.png")),
        (MediaBlock("image/png", reference="r"), TextBlock("a")),
    ],
)
def test_text_any_media_gives_none(content: tuple[TextBlock | MediaBlock, ...]) -> None:
    """Any media block makes the text projection None, so media cannot be dropped silently."""
    assert Output(content=content).text() is None
    assert Output(content=content, details=b"{}").text() is None


def test_text_ignores_details_when_content_exists() -> None:
    """Details are ignored by text() whenever there is content."""
    out = Output(content=(TextBlock("shown"),), details=b'{"hidden":true}')
    assert out.text() == "shown"


# --------------------------------------------------------------------------------------------------
# details_value()


def test_details_value_none_without_details() -> None:
    """Without details, details_value() is None."""
    assert Output.from_text("x").details_value() is None


def test_details_value_exact() -> None:
    """details_value parses with exact integers and lossless floats."""
    value = Output.from_json('{"i":123456789012345678901234567890,"f":2.50,"l":[true,null,"s"]}').details_value()
    assert value["i"] == 123456789012345678901234567890
    assert isinstance(value["f"], jiter.LosslessFloat)
    assert bytes(value["f"]) == b"2.50"
    assert value["l"] == [True, None, "s"]


def test_details_value_null_document() -> None:
    """A 'null' document parses to None (but the output still has details)."""
    out = Output.from_json("null")
    assert out.details == b"null"
    assert out.details_value() is None


def test_details_value_returns_fresh_objects() -> None:
    """Mutating the parsed details never changes the output."""
    out = Output.from_json('{"a":[1]}')
    value = out.details_value()
    value["a"].append(2)
    assert out.details_value() == {"a": [1]}
    assert out.details == b'{"a":[1]}'


# --------------------------------------------------------------------------------------------------
# Result


def test_result_default_is_empty_output() -> None:
    """Result() completes with the empty output."""
    assert Result().output == Output()
    assert Result().output.text() == ""


def test_result_defaults_are_independent() -> None:
    """Two default results are equal values."""
    assert Result() == Result(Output())


def test_result_keeps_output() -> None:
    """A Result holds the given output."""
    out = Output.from_text("x")
    assert Result(out).output is out


@pytest.mark.parametrize("value", [None, "x", {"content": []}, TextBlock("a")])
def test_result_non_output_rejected(value: object) -> None:
    """A Result's output must be an Output."""
    with pytest.raises(InvalidOutputError):
        Result(value)  # type: ignore[arg-type]


def test_result_frozen() -> None:
    """A Result cannot be changed after construction."""
    result = Result()
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.output = Output.from_text("x")  # type: ignore[misc]
    assert result.output == Output()

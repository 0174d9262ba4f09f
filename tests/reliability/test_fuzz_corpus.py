"""The fuzz harness's invariants, without atheris: every seed replayed, plus Hypothesis-driven inputs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ._support import RELIABLE, TOKENS, json_objects, json_token_soup

FUZZ = Path(__file__).resolve().parents[2] / "fuzz"


def _load_harness() -> Any:
    spec = importlib.util.spec_from_file_location("scopetool_fuzz_prepare", FUZZ / "fuzz_prepare.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


harness = _load_harness()
SEEDS = sorted((FUZZ / "corpus").iterdir())


def test_the_seed_corpus_is_small_and_varied() -> None:
    """The corpus kept in the repository has at least 30 seeds, none over 4 KiB."""
    assert len(SEEDS) >= 30
    assert all(seed.stat().st_size <= 4096 for seed in SEEDS)


@pytest.mark.parametrize("seed", SEEDS, ids=[seed.name for seed in SEEDS])
def test_seed_holds_every_invariant(seed: Path) -> None:
    """Each seed passes every check the fuzzer makes."""
    harness.check(seed.read_bytes())


def test_the_harness_catches_a_broken_invariant(monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness fails when admission lets through what the schema forbids (so its checks can fail)."""
    contract, _, decoder = harness.subjects()[3]

    class Never:
        def is_valid(self, value: Any) -> bool:
            return False

        def iter_errors(self, value: Any) -> list[Any]:
            return []

    monkeypatch.setattr(harness, "_subjects", [(contract, Never(), decoder)])
    with pytest.raises(AssertionError, match="forbidden by"):
        harness.check(b"{}")


@settings(RELIABLE, max_examples=300)
@given(
    data=st.one_of(
        st.binary(max_size=96),
        json_token_soup.map(lambda text: text.encode("utf-8", "surrogatepass")),
        json_objects.map(lambda value: repr(value).replace("'", '"').encode("utf-8", "surrogatepass")),
        st.lists(st.sampled_from(TOKENS), max_size=12).map(
            lambda parts: "".join(parts).encode("utf-8", "surrogatepass")
        ),
    )
)
def test_hypothesis_inputs_hold_every_invariant(data: bytes) -> None:
    """Inputs Hypothesis makes (bytes, token soup, near-JSON) pass every check the fuzzer makes."""
    harness.check(data)

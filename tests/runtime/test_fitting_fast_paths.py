"""The fast paths of fitting (bisected cuts, printable bodies, skipped candidates) change no byte,
in the text format and the legacy JSON one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext_runtime.prepare import builder, legacy, markdown
from powercontext_runtime.prepare.budget import (
    ELLIPSIS_BYTES,
    MAX_BODY_BYTES,
    BodyCost,
    FittedBody,
    Piece,
    fit_body,
)
from powercontext_runtime.prepare.builder import AssemblyOptions, Section, build_text_context
from powercontext_runtime.prepare.legacy import build_legacy_context
from powercontext_runtime.prepare.markdown import _CONTROL_PATTERN, _visible, quote_body
from powercontext_runtime.recall import Candidate, Origin

# Mostly printable text with line breaks, CJK, astral characters and now and then a control.
BODY = st.text(
    alphabet=st.one_of(
        st.sampled_from(list("ab \n\r\u2028记忆😀\u00e9")),
        st.characters(blacklist_categories=("Cs",)),
    ),
    min_size=1,
    max_size=400,
)
# Plain text, which the text format cuts by bisection (a body with a control is walked).
PLAIN_BODY = st.text(alphabet=st.sampled_from(list("ab \n记忆😀\u00e9")), min_size=64, max_size=400)
# What JSON escapes: quotes, backslashes, the short escapes and other controls.
JSON_BODY_CHARACTERS = st.one_of(
    st.sampled_from(list('ab "\\\n\t\x01\x7f记😀')), st.characters(blacklist_categories=("Cs",))
)
JSON_BODY = st.text(alphabet=JSON_BODY_CHARACTERS, min_size=1, max_size=400)
LONG_JSON_BODY = st.text(alphabet=JSON_BODY_CHARACTERS, min_size=100, max_size=400)


def memory_pool(bodies: list[str]) -> list[Candidate]:
    """A Memory pool of the bodies that are not blank."""
    return [
        Candidate(Origin("s", "memory", "memory", 1, f"entry-{i}", f"entry-{i}-v1"), b, True)
        for i, b in enumerate(bodies)
        if b.strip()
    ]


def _walked(body: str, room_full: int, room_truncated: int) -> object:
    quoted = quote_body(body)
    return fit_body(quoted.quoted, quoted.cost, quoted.pieces, room_full, room_truncated)


# Room as a share of what the body needs, so that most examples cut it (whole percents: floats
# came mostly at the ends of the range, and almost never cut a plain body).
SHARE = st.integers(min_value=0, max_value=120).map(lambda percent: percent / 100)


def room_for(rendered: int, share: float) -> int:
    return int(share * (rendered + 64))


@settings(max_examples=300, deadline=None)
@given(st.one_of(BODY, PLAIN_BODY), SHARE)
def test_bisected_cut_equals_walking_the_pieces(body: str, share: float) -> None:
    quoted = quote_body(body)
    room = room_for(quoted.cost.rendered, share)
    fast = fit_body(quoted.quoted, quoted.cost, quoted.pieces, room, room - 1, quoted.cut)
    assert fast == _walked(body, room, room - 1)


@settings(max_examples=300, deadline=None)
@given(BODY)
def test_printable_shortcut_escapes_like_the_regex(body: str) -> None:
    quoted = quote_body(body)
    normalised = quoted.normalised
    expected = _CONTROL_PATTERN.sub(lambda m: _visible(m.group()), normalised)
    assert quoted.quoted == expected.replace("\n", "\n>     ")
    assert quoted.plain == (expected == normalised)


def test_long_bodies_are_cut_at_the_cap_by_either_path() -> None:
    body = "记忆系统 line\n" * 400
    quoted = quote_body(body)
    fitted = fit_body(quoted.quoted, quoted.cost, quoted.pieces, 10**6, 10**6, quoted.cut)
    assert fitted is not None and fitted.truncated
    assert fitted == _walked(body, 10**6, 10**6)
    assert len(fitted.text.replace("\n>     ", "\n").encode()) <= MAX_BODY_BYTES - ELLIPSIS_BYTES + 3


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(BODY, PLAIN_BODY), min_size=1, max_size=12), SHARE)
def test_builder_output_is_unchanged_by_the_fast_paths(bodies: list[str], share: float) -> None:
    pool = memory_pool(bodies)
    options = AssemblyOptions((Section("memory", 8),))
    # A budget sized to the pool, so that it often ends inside a body (see the legacy test below).
    whole = build_text_context({"memory": pool}, options, 32768).result.content_bytes
    max_bytes = max(1, int(share * whole))
    fast = build_text_context({"memory": pool}, options, max_bytes)
    # Reference: no candidate skipped before fitting, and every cut found by walking the pieces.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(builder, "MIN_TRUNCATED_BODY_BYTES", -(10**9))
        patch.setattr(markdown.QuotedBody, "cut", lambda self, cap, room: None)
        slow = build_text_context({"memory": pool}, options, max_bytes)
    assert fast == slow


def _json_pieces(body: str) -> Iterator[Piece]:
    """The legacy body's pieces: each code point, costing its UTF-8 bytes against the cap and its
    JSON escape in the text (two bytes for a short escape, six for another control)."""
    for ch in body:
        raw = len(ch.encode("utf-8", "surrogatepass"))
        if ch in '"\\\n\r\t\b\f':
            yield ch, raw, 2
        elif ch < " ":
            yield ch, raw, 6
        else:
            yield ch, raw, raw


def _legacy_fits(body: str, room: int) -> tuple[object, object]:
    """The body fitted with the bisected cut, and by walking its pieces."""
    cost = BodyCost(*legacy._json_costs(body))
    fast = fit_body(body, cost, None, room, room - 1, lambda cap, left: legacy._json_cut(body, cap, left))
    return fast, fit_body(body, cost, lambda: _json_pieces(body), room, room - 1)


@settings(max_examples=300, deadline=None)
@given(JSON_BODY, SHARE)
def test_legacy_bisected_cut_equals_walking_the_pieces(body: str, share: float) -> None:
    fast, walked = _legacy_fits(body, room_for(legacy._json_costs(body)[1], share))
    assert fast == walked


def test_long_legacy_bodies_are_cut_at_the_cap_by_either_path() -> None:
    for body in ('记忆 "quoted" \\ line\n' * 300, "\x01" * 3000):
        fast, walked = _legacy_fits(body, 10**6)
        assert fast == walked
        assert isinstance(fast, FittedBody) and fast.truncated


@settings(max_examples=150, deadline=None)
@given(st.lists(LONG_JSON_BODY, min_size=1, max_size=12), SHARE)
def test_legacy_output_is_unchanged_by_the_bisected_cut(bodies: list[str], share: float) -> None:
    pool = memory_pool(bodies)
    # A budget sized to the pool and bodies long enough to cut (at least 64 bytes must be left):
    # drawn from a fixed range, the budget seldom fell inside a body that could be cut.
    whole = build_legacy_context(pool, 10**6).result.content_bytes
    max_bytes = legacy._FRAME_BYTES + int(share * max(0, whole - legacy._FRAME_BYTES))
    fast = build_legacy_context(pool, max_bytes)

    def walking(
        text: str, cost: BodyCost, _pieces: object, room_full: int, room_truncated: int, _cut: object
    ) -> object:
        return fit_body(text, cost, lambda: _json_pieces(text), room_full, room_truncated)

    with pytest.MonkeyPatch.context() as patch:  # every cut found by walking the pieces instead
        patch.setattr(legacy, "fit_body", walking)
        slow = build_legacy_context(pool, max_bytes)
    assert fast == slow


def test_a_body_without_pieces_needs_a_cut_that_answers() -> None:
    body = "x" * 300
    cost = BodyCost(300, 300)
    with pytest.raises(ValueError, match="no pieces to walk"):
        fit_body(body, cost, None, 100, 100, lambda cap, room: None)
    assert fit_body(body, cost, None, 400, 400) == FittedBody(body, False, 300)  # it fits: nothing to cut

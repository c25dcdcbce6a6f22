"""The RFC text format as pure functions: escaping, fitting and the budget rules (A5, properties)."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext_runtime.prepare import markdown
from powercontext_runtime.prepare.builder import AssemblyOptions, Section, build_text_context
from powercontext_runtime.recall import Candidate, Origin

END = "END_POWERCONTEXT_PREPARED_TEXT_V1"


def memory(n: int, body: str, scope: str = "project:demo") -> Candidate:
    return Candidate(Origin(scope, "memory", "memory", 3, f"entry-{n}", f"entry-{n}-v1"), body, True)


def test_guide_example_from_candidates() -> None:
    exp = Candidate(
        Origin("project:demo", "experience", "experience-1", 1),
        "Situation: The HTTP API contract changed.\nAction: Run make api-generate and make contract-test.\n"
        "Outcome: Generated code matches the contract and tests pass.\nLesson: Regenerate after a contract change,"
        " then validate.",
        True,
    )
    mem = Candidate(
        Origin("project:demo", "memory", "memory", 3, "entry-1", "entry-1-v2"),
        "After changing OpenAPI, regenerate the client and run contract tests.",
        True,
    )
    options = AssemblyOptions((Section("experience", 2), Section("memory", 5)), True, True)
    content = build_text_context({"experience": [exp], "memory": [mem]}, options, 8000).result.content
    assert content is not None
    digest = hashlib.sha256(content.encode("utf-8")).hexdigest()
    assert digest == "39fdbd0eb2eed519f5dff3d34b1d52efa888398caf553b606988eca3e27f01e7"


def test_body_cap_is_2000_bytes_after_escaping() -> None:
    """Each TAB becomes 6 visible bytes, so 400 TABs (2400 bytes escaped) must be cut (a word
    first: a body of whitespace alone is blank, and cleaning drops it)."""
    built = build_text_context(
        {"memory": [memory(1, "x" + "\t" * 400)]}, AssemblyOptions((Section("memory", 1),)), 32768
    )
    content = built.result.content
    assert content is not None
    body = content.split(">     ", 1)[1].split("\n\n" + END)[0]
    assert body == "x" + "\\u0009" * 332 + "…"  # 1 + 332 * 6 = 1993 bytes; one more escape would pass 1997
    assert "    Truncated: yes" in content


def test_origins_are_exactly_the_included_entries() -> None:
    pool = [memory(1, "x" * 5000), memory(2, "short"), memory(3, "also short")]
    built = build_text_context({"memory": pool}, AssemblyOptions((Section("memory", 2),)), 1200)
    content = built.result.content
    assert content is not None and content.count("    Truncated: yes") == 1  # the long one, cut to fit
    assert built.origins == (pool[0].origin,)  # it took the whole budget: the others do not fit
    roomy = build_text_context({"memory": pool}, AssemblyOptions((Section("memory", 8),)), 900)
    included = [line for line in (roomy.result.content or "").split("\n") if line.startswith("    Entry:")]
    assert len(included) == len(roomy.origins)
    assert all(f'id="{o.entry_id}"' in line for o, line in zip(roomy.origins, included, strict=True))


bodies = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]),
    min_size=1,
    max_size=2500,
)


@settings(max_examples=300, deadline=None)
@given(
    pool=st.lists(bodies, min_size=1, max_size=10),
    max_bytes=st.integers(min_value=512, max_value=32768),
    limit=st.integers(min_value=1, max_value=8),
)
def test_any_bodies_and_budgets_keep_every_rule(pool: list[str], max_bytes: int, limit: int) -> None:
    candidates = [memory(i, b) for i, b in enumerate(pool, start=1) if b.strip()]
    built = build_text_context(
        {"memory": candidates}, AssemblyOptions((Section("memory", limit),)), max_bytes
    )
    result = built.result
    if result.content is None:
        assert (result.status, result.content_bytes, built.origins) == ("empty", 0, ())
        return
    encoded = result.content.encode("utf-8")
    assert len(encoded) == result.content_bytes <= max_bytes
    assert encoded.decode("utf-8") == result.content
    assert "\r" not in result.content and not result.content.endswith("\n")
    lines = result.content.split("\n")
    assert lines.count(END) == 1 and lines[-1] == END
    entries = result.content.split("\n\n### Memory ")[1:]
    assert len(entries) == len(built.origins) <= limit
    for number, (entry, origin) in enumerate(zip(entries, built.origins, strict=True), start=1):
        head, _, quoted = entry.partition("\n\n>     ")
        assert head.startswith(f"{number}\n\n")
        assert f'    Entry: id="{origin.entry_id}", version="{origin.entry_version_id}"' in head
        quoted = quoted.removesuffix("\n\n" + END)
        # Every body line is inside the quote block: no line of the body can escape it.
        assert all(line.startswith(">     ") for line in (">     " + quoted).split("\n"))
        body = "\n".join(line[6:] for line in (">     " + quoted).split("\n"))
        assert len(body.encode("utf-8")) <= 2000
        if "    Truncated: yes" in head:
            assert body.endswith("…") and len(body.encode("utf-8")) >= 64


def test_the_controls_table_is_what_scanning_this_python_s_unicode_database_finds() -> None:
    """RFC safety rules: every Cc/Cf character but LF is made visible. The table spares each
    process a scan of every code point; it must be exactly what the scan finds."""
    assert markdown._scanned_controls() == markdown._CONTROLS

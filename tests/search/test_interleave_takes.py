"""RFC "Selection" rule 4: interleave the per-Scope hit lists (current Scope first) and cap the
merged pool. Search plans the merge once (`merge_takes`) and the Store reads only each Scope's
share; recall interleaves the shares without a cap of its own, which must give exactly the capped
merge of the whole lists."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from powercontext_runtime.recall.pools import interleave
from powercontext_runtime.search import merge_takes

LISTS = st.lists(st.integers(min_value=0, max_value=20), max_size=6).map(
    lambda lengths: [[(scope, rank) for rank in range(length)] for scope, length in enumerate(lengths)]
)


@given(LISTS, st.integers(min_value=0, max_value=40))
def test_lists_cut_to_their_takes_merge_to_the_same_pool(
    per_scope: list[list[tuple[int, int]]], cap: int
) -> None:
    takes = merge_takes([len(hits) for hits in per_scope], cap)
    cut = [hits[:take] for hits, take in zip(per_scope, takes, strict=True)]
    assert interleave(cut) == interleave(per_scope, cap)
    assert sum(takes) == len(interleave(per_scope, cap))


def test_an_empty_scope_leaves_its_share_to_the_others() -> None:
    assert merge_takes([16, 0, 3, 16], 16) == [7, 0, 3, 6]

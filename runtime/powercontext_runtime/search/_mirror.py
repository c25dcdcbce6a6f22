"""An in-memory mirror of the search index, so ranking reads arrays instead of aggregating rows.

The database stays the only source of truth. Each (Scope, family) mirror holds its documents (key,
length, still a head?) and the postings of the terms queried so far, as of a `generation`: the
counter every index write bumps in `search_stats`, in the same transaction as the postings. A
query first brings the mirror up to the database's generation by replaying `search_log` (a row per
index write, holding the documents it added and their postings, or per removed document; a row
takes a generation per document), loads the postings of terms it has not seen, and ranks.

Replaying is idempotent: a document already mirrored is not added twice, and postings of unknown
documents are ignored, so a mirror built from reads that straddle a concurrent write converges.
A mirror too far behind the retained log, or holding too many removed documents, is rebuilt.

A reader whose snapshot began before another request moved the mirror on (a prepare reads every
family in one snapshot) must still rank as of its own generation, or it would miss an entry whose
new version it cannot see and whose old version the mirror has already removed. So a mirror keeps
its recent changes and can show which documents were alive at any generation since `floor`.
The whole mirror set is bounded by a postings budget and evicts the least recently used mirror.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Collection, Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from ._bm25 import Documents, TermPostings, contributions, length_norms, term_gains
from ._log import LoggedWrite
from ._neighbours import KeyOrder, key_order
from ._pending import PendingRows
from ._prune import term_bound, top_documents

# About 16 bytes a posting (slot, term frequency, cached contribution): 32M postings is some
# 512 MiB of arrays before eviction starts.
MAX_POSTINGS = 32_000_000
# Rebuild rather than keep scoring dead documents once a quarter of the slots are dead.
_MIN_DEAD_FOR_REBUILD = 1024
# What a kept term costs besides its postings, counted as postings: its entries in four dicts,
# the TermPostings tuple, two array objects and their blocks, about 500 bytes (bench/memory.py).
TERM_COST = 32
# What a document costs, counted as postings: its key, length, norm and flag in arrays of up to
# twice the count, and its entry in the key map once keys stop ascending.
DOC_COST = 8
# A term with fewer postings (or none: a word no entry holds) is cheap to read again. A mirror
# keeps at most RARE_TERMS of them, the least recently queried going first: a stream of new rare
# words (ticket numbers, typos) cannot grow it, and rare words queried again and again stay (in a
# family of a few dozen documents, such as Experience, every term is rare).
RARE_POSTINGS = 16
RARE_TERMS = 1024
# Changes kept for readers with older snapshots: far more than requests in flight can lag behind.
HISTORY = 4096
# A mirror maps keys to slots through a table spanning its smallest to largest key while that
# span is at most this many times its documents (4 bytes a key in the span and in its room).
DENSE_SPAN = 4
# A key table keeps room above its largest key for a quarter of its span more (and at least
# DENSE_MIN_ROOM keys), so the next keys fill it in place and a full one grows by a quarter: O(1)
# a key, amortised.
DENSE_ROOM = 4
DENSE_MIN_ROOM = 64
# A term's postings keep room for a quarter more (at least POSTINGS_MIN_ROOM) once a write has
# appended to them, so the next writes fill it in place: a write into a million-entry Scope copies
# its own postings, not the hundreds of thousands of a common word's before them. The room is not
# counted in `postings` (8 bytes a posting of it, at most a quarter of the grown terms').
POSTINGS_ROOM = 4
POSTINGS_MIN_ROOM = 64

# The last generation a `search_log` row takes, its doc_key, and the documents it added (None: it
# removed doc_key).
LogRow = tuple[int, int, LoggedWrite | None]


class FamilyMirror:
    """One Scope family's documents and the postings of the terms queried so far."""

    def __init__(self, generation: int, docs: npt.ArrayLike) -> None:
        """`docs`: the family's (doc_key, length) pairs, as rows of an array or a list."""
        self.generation = generation
        docs = np.asarray(docs, np.int64).reshape(-1, 2)
        # Documents removed before `floor` are not here: no view older than it can be shown.
        self.floor = generation
        self._changes: deque[tuple[int, int, bool]] = deque()  # (generation, slot, added), oldest first
        count = len(docs)
        capacity = max(64, count * 2)
        self._keys = np.zeros(capacity, np.int64)
        self._lengths = np.zeros(capacity, np.float64)
        self._alive = np.zeros(capacity, np.bool_)
        if count:
            self._keys[:count] = docs[:, 0]
            self._lengths[:count] = docs[:, 1]
            self._alive[:count] = True
        self._count = count
        # Slot by key, made only once keys stop ascending with the slots: until then (as the table
        # gives them, and as new documents come) a key's slot is found in `_dense` or by binary
        # search, and a million-entry dict is never built.
        self._slot_map: dict[int, int] | None = None
        self._ascending = bool((docs[1:, 0] > docs[:-1, 0]).all())
        # Slot by key minus the smallest, for ascending keys close together (`_dense_slots`), with
        # room above the largest key for the next ones (-1: no document). Every entry is a slot
        # below `_count`: one is written only as its document is added.
        self._dense: tuple[int, npt.NDArray[np.int32]] | None = None
        self._terms: dict[str, TermPostings] = {}
        # The arrays a grown term's postings are the start of, with room after them.
        self._room: dict[str, tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]] = {}
        # The generation each term's postings were read at: they lack documents removed before it.
        self._term_since: dict[str, int] = {}
        self._rare: OrderedDict[str, None] = OrderedDict()  # kept rare terms, least recently queried first
        self._dead = 0
        self.postings = 0
        # Per-posting score contributions (idf × BM25 gain) for one average length and idf; every
        # write changes both, so they live as long as the Scope family's index stays unchanged
        # (reads between writes reuse them).
        self._norms_average = -1.0
        self._norms = np.zeros(0)
        # With each term's contributions, the largest (None: it cannot prune, see `_prune.py`).
        self._added: dict[str, tuple[float, npt.NDArray[np.float64], float | None]] = {}
        # Document frequencies of loaded terms, counted over live documents; new documents add to
        # them, a removed one clears them.
        self._frequencies: dict[str, int] = {}
        # The live slots in key order (neighbours are found in it), as of `_order_generation`.
        self._order: KeyOrder | None = None
        self._order_generation = -1

    @property
    def stale(self) -> bool:
        return self._dead >= _MIN_DEAD_FOR_REBUILD and self._dead * 4 >= self._count

    def missing(self, terms: Iterable[str], generation: int) -> list[str]:
        """The terms whose postings must be read to rank as of `generation`."""
        out = []
        for term in terms:
            if self._term_since.get(term, generation + 1) > generation:
                out.append(term)
            elif term in self._rare:
                self._rare.move_to_end(term)
        return out

    def alive_at(self, generation: int) -> npt.NDArray[np.bool_] | None:
        """Which slots held a live document at `generation` (from `floor` up to now), else None."""
        if generation < self.floor:
            return None
        alive = self._alive[: self._count].copy()
        for changed, slot, added in reversed(self._changes):
            if changed <= generation:
                break
            alive[slot] = not added
        return alive

    def without(
        self, keys: Collection[int], alive: npt.NDArray[np.bool_] | None
    ) -> npt.NDArray[np.bool_] | None:
        """`alive` (None: the live documents now) with the documents `keys` left out: a mask for
        `top` that ranks as if they were not there, so they take no place in its `limit`."""
        if not keys:
            return alive
        mask = (self._alive[: self._count] if alive is None else alive).copy()
        slots = self._slots_of(np.fromiter(keys, np.int64, len(keys)), self._dense)
        mask[slots[slots >= 0]] = False
        return mask

    def _slots_of(
        self, keys: npt.NDArray[np.int64], dense: tuple[int, npt.NDArray[np.int32]] | None
    ) -> npt.NDArray[np.int64]:
        """Each key's slot (-1: not in this mirror): by the key table `dense` or by binary search
        while keys ascend with slots, by the key map once they do not."""
        count = self._count
        found = np.full(len(keys), -1, np.int64)
        if count == 0 or len(keys) == 0:
            return found
        if not self._ascending:
            slot_of = self._slot_map_made()
            return np.fromiter((slot_of.get(key, -1) for key in keys.tolist()), np.int64, len(keys))
        if dense is not None:
            low, table = dense
            at = keys - low
            inside = (at >= 0) & (at < len(table))
            found[inside] = table[at[inside]]
            return found
        at = np.searchsorted(self._keys[:count], keys)
        inside = np.minimum(at, count - 1)
        known = (at < count) & (self._keys[inside] == keys)
        found[known] = inside[known]
        return found

    def _slot_map_made(self) -> dict[int, int]:
        # A key that came back after removal is in two slots: the later (its new document) wins.
        if self._slot_map is None:
            self._slot_map = dict(zip(self._keys[: self._count].tolist(), range(self._count), strict=True))
        return self._slot_map

    def _record(self, generation: int, slot: int, added: bool) -> None:
        if len(self._changes) == HISTORY:
            self.floor = max(self.floor, self._changes.popleft()[0])
        self._changes.append((generation, slot, added))

    def _add_document(self, key: int, length: int) -> int:
        slot = self._count
        if slot == len(self._keys):
            grown = slot * 2
            self._keys = np.resize(self._keys, grown)
            self._lengths = np.resize(self._lengths, grown)
            self._alive = np.resize(self._alive, grown)
        if slot and key <= self._keys[slot - 1]:
            self._ascending = False
            self._dense = None  # only ascending keys are looked up in it
        elif self._dense is not None:
            self._dense = _dense_with(self._dense, key, slot)
        if self._slot_map is not None:
            self._slot_map[key] = slot
        self._keys[slot] = key
        self._lengths[slot] = length
        self._alive[slot] = True
        self._count += 1
        return slot

    def replay(self, rows: Sequence[LogRow]) -> None:
        """Apply logged index changes after `generation`, in generation order."""
        appended: dict[str, list[tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]]] = {}
        for last, key, logged in rows:
            self.generation = last
            if logged is None:
                slot = int(self._slots_of(np.array([key], np.int64), self._dense)[0])
                if slot >= 0 and self._alive[slot]:
                    self._alive[slot] = False
                    self._dead += 1
                    self._record(last, slot, False)
                    self._frequencies.clear()  # which terms it held is not known here
                continue
            self._replay_added(last, logged, appended)
        for term, parts in appended.items():
            grown = self._grow(term, parts)
            self._added.pop(term, None)  # its postings grew; `top` also resets all on a new count
            self.postings += grown
            if term in self._frequencies:
                # Each new posting is a new live document (a key already mirrored adds none), so
                # the count goes up by them rather than being taken again over every posting.
                self._frequencies[term] += grown

    def _grow(self, term: str, parts: list[tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]]) -> int:
        """Append new documents' postings to a term's, in the room after them when there is
        enough (readers holding the shorter postings never see past their end); how many."""
        old = self._terms[term]
        size = len(old.slots)
        need = size + sum(len(slots) for slots, _ in parts)
        room = self._room.get(term)
        if room is None or old.slots.base is not room[0] or len(room[0]) < need:
            capacity = need + max(need // POSTINGS_ROOM, POSTINGS_MIN_ROOM)
            room = (np.empty(capacity, np.int32), np.empty(capacity, np.float32))
            room[0][:size], room[1][:size] = old.slots, old.tfs
            self._room[term] = room
        at = size
        for slots, tfs in parts:
            room[0][at : at + len(slots)], room[1][at : at + len(slots)] = slots, tfs
            at += len(slots)
        self._terms[term] = TermPostings(room[0][:need], room[1][:need])
        return need - size

    def _replay_added(
        self,
        last: int,
        logged: LoggedWrite,
        appended: dict[str, list[tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]]],
    ) -> None:
        """Add a logged write's documents (generations up to `last`, in order) and, for the terms
        this mirror holds, their postings."""
        count = len(logged.doc_keys)
        slots = np.full(count, -1, np.int32)  # -1: already mirrored, its postings are here
        # Looked up before any is added: a write's keys are distinct, so adding one cannot change
        # what another finds.
        known = self._slots_of(logged.doc_keys.astype(np.int64), self._dense)
        mirrored = known >= 0
        mirrored[mirrored] = self._alive[known[mirrored]]
        for index, (key, length) in enumerate(
            zip(logged.doc_keys.tolist(), logged.lengths.tolist(), strict=True)
        ):
            if mirrored[index]:
                continue
            # A removed document's key may come back: SQLite reuses the highest key once its row
            # is erased. It is a new document in a new slot; the old slot stays dead.
            slots[index] = self._add_document(key, length)
            self._record(last - count + 1 + index, int(slots[index]), True)
        held = self._terms
        bounds = logged.bounds
        for index, term in enumerate(logged.terms):
            if term in held:
                start, end = bounds[index], bounds[index + 1]
                mapped = slots[logged.positions[start:end]]
                new = mapped >= 0
                if new.any():
                    # New documents take slots above all others: sorted, they keep postings in
                    # slot order.
                    ascending = np.argsort(mapped[new], kind="stable")
                    appended.setdefault(term, []).append(
                        (mapped[new][ascending], logged.tfs[start:end][new][ascending].astype(np.float32))
                    )

    def postings_of(self, keys: npt.NDArray[np.int64], frequencies: npt.NDArray[np.integer]) -> TermPostings:
        """A term's postings from its documents' keys and term frequencies, in slot order (pruned
        ranking looks documents up in them); documents this mirror does not know are skipped."""
        dense = self._dense_slots() if self._ascending and self._count else None
        slots = _gathered(dense, keys)
        if slots is not None and (len(slots) == 0 or int(slots.min()) >= 0):
            tfs = frequencies.astype(np.float32)  # every key known: no masks to build and apply
        else:
            found = self._slots_of(keys, dense)
            known = found >= 0
            slots = found[known].astype(np.int32)
            tfs = frequencies[known].astype(np.float32)
        if len(slots) > 1 and not bool((slots[1:] > slots[:-1]).all()):
            ascending = np.argsort(slots, kind="stable")
            slots, tfs = slots[ascending], tfs[ascending]
        return TermPostings(slots, tfs)

    def _dense_slots(self) -> tuple[int, npt.NDArray[np.int32]] | None:
        """The slot of every key from the smallest up (-1: no document), while the keys ascend
        and lie close together (a Scope's entries usually do): a common term's hundreds of
        thousands of keys map to slots by one gather instead of a binary search each, the cold
        read's largest cost at a million documents. None when they are spread too thinly.
        Made once: documents added later extend it (`_add_document`)."""
        if self._dense is not None:
            return self._dense
        count = self._count
        keys = self._keys[:count]
        low, span = int(keys[0]), int(keys[-1]) - int(keys[0]) + 1
        if span <= DENSE_SPAN * count:
            table = np.full(_dense_room(span), -1, np.int32)
            table[keys - low] = np.arange(count, dtype=np.int32)
            self._dense = (low, table)
        return self._dense

    def install(self, term: str, postings: TermPostings) -> None:
        """Keep postings read at this mirror's generation."""
        self._terms[term] = postings
        self._room.pop(term, None)
        self._term_since[term] = self.generation
        self.postings += len(postings.slots) + TERM_COST
        if len(postings.slots) < RARE_POSTINGS:
            self._rare[term] = None

    def forget_rare(self) -> None:
        """Keep RARE_TERMS rare terms at most: forget the least recently queried (after a query
        has ranked, never while it needs its terms)."""
        while len(self._rare) > RARE_TERMS:
            term = self._rare.popitem(last=False)[0]
            postings = self._terms.pop(term)
            self._room.pop(term, None)
            self._term_since.pop(term, None)
            self._added.pop(term, None)
            self._frequencies.pop(term, None)
            self.postings -= len(postings.slots) + TERM_COST

    @property
    def cost(self) -> int:
        """What this mirror holds, counted in postings (see MAX_POSTINGS): its terms, its
        documents and its key table (4 bytes a key in its span and room, a quarter of a posting)."""
        table = 0 if self._dense is None else len(self._dense[1]) // 4
        return self.postings + DOC_COST * self._count + table

    def forget_terms(self) -> None:
        """Drop every kept term; the documents stay, and a query reads its terms again."""
        self._terms.clear()
        self._room.clear()
        self._term_since.clear()
        self._rare.clear()
        self._added.clear()
        self._frequencies.clear()
        self.postings = 0

    def _lookup(self, term: str, borrowed: Mapping[str, TermPostings]) -> TermPostings:
        found = borrowed.get(term)
        return self._terms[term] if found is None else found

    def frequencies(
        self,
        terms: Iterable[str],
        borrowed: Mapping[str, TermPostings],
        alive: npt.NDArray[np.bool_] | None = None,
    ) -> dict[str, int]:
        """Each term's number of live documents (its df), now or by an older `alive` mask;
        `borrowed` supplies postings read for this query only."""
        mask = self._alive if alive is None else alive
        out: dict[str, int] = {}
        for term in terms:
            df = self._frequencies.get(term) if alive is None else None
            if df is None:
                slots = self._lookup(term, borrowed).slots
                df = int(np.count_nonzero(mask[slots])) if len(slots) else 0
                if alive is None and term not in borrowed:
                    self._frequencies[term] = df
            out[term] = df
        return out

    def key_order(self, alive: npt.NDArray[np.bool_] | None = None) -> KeyOrder:
        """The live slots in key order (`alive`: as of an older generation); found once per
        generation, as reads between writes share it."""
        keys = self._keys[: self._count]
        if alive is not None:
            return key_order(keys, alive, self._ascending)
        if self._order is None or self._order_generation != self.generation:
            self._order = key_order(keys, self._alive[: self._count], self._ascending)
            self._order_generation = self.generation
        return self._order

    def top(
        self,
        weights: Sequence[tuple[str, float]],
        average_length: float,
        limit: int,
        borrowed: Mapping[str, TermPostings],
        alive: npt.NDArray[np.bool_] | None = None,
        with_neighbours: bool = False,
    ) -> list[tuple[int, float]]:
        """The best `limit` documents' keys with their scores; `alive` ranks as of an older
        generation; `with_neighbours`: each hit gains a share of its neighbours' (_neighbours.py)."""
        count = self._count
        if count == 0 or average_length <= 0.0:
            return []
        if average_length != self._norms_average or len(self._norms) != count:
            self._norms = length_norms(self._lengths[:count], average_length)
            self._norms_average = average_length
            self._added.clear()
        weighted = []
        bounds = []
        for term, weight in weights:
            postings = self._lookup(term, borrowed)
            cached = None if term in borrowed else self._added.get(term)
            if cached is not None and cached[0] == weight:
                added, bound = cached[1], cached[2]
            else:
                added = contributions(term_gains(postings, self._norms), weight)
                bound = term_bound(postings.slots, added)
                if term not in borrowed:
                    self._added[term] = (weight, added, bound)
            weighted.append((postings, added))
            bounds.append(bound)
        order = self.key_order(alive) if with_neighbours else None
        if alive is None and self._dead:
            alive = self._alive[:count]
        documents = Documents(self._keys[:count], self._lengths[:count], alive, order)
        return top_documents(documents, weighted, bounds, limit)


class SearchMirror:
    """Every mirrored (Scope key, family), least recently used first; one lock guards them all.

    Callers take `lock` before they open the transaction they sync in, so no mirror can be newer
    than what that transaction reads.
    """

    def __init__(self, max_postings: int = MAX_POSTINGS) -> None:
        self.lock = threading.Lock()
        self._max_postings = max_postings
        self._mirrors: OrderedDict[tuple[int, str], FamilyMirror] = OrderedDict()
        # Deferred writes' rows, for the terms a mirror has not loaded yet (`_pending.py`).
        self.pending = PendingRows()

    def get(self, scope_key: int, family: str) -> FamilyMirror | None:
        mirror = self._mirrors.get((scope_key, family))
        if mirror is not None:
            self._mirrors.move_to_end((scope_key, family))
        return mirror

    def put(self, scope_key: int, family: str, mirror: FamilyMirror) -> None:
        self._mirrors[(scope_key, family)] = mirror
        self._mirrors.move_to_end((scope_key, family))

    def evict(self) -> None:
        """Fit the budget: forget the terms of the least recently used mirrors (the newest's
        last), then drop whole mirrors, least recently used first (never the newest)."""
        total = sum(m.cost for m in self._mirrors.values())
        if total <= self._max_postings:
            return
        for mirror in self._mirrors.values():
            if total <= self._max_postings:
                return
            total -= mirror.postings
            mirror.forget_terms()
        while len(self._mirrors) > 1 and total > self._max_postings:
            total -= self._mirrors.popitem(last=False)[1].cost

    def clear(self) -> None:
        self._mirrors.clear()
        self.pending.clear()


def _gathered(
    dense: tuple[int, npt.NDArray[np.int32]] | None, keys: npt.NDArray[np.int64]
) -> npt.NDArray[np.int32] | None:
    """Each key's slot by one gather from the key table (-1: no document), when every key lies
    within it; else None."""
    if dense is None or len(keys) == 0:
        return None
    low, table = dense
    at = keys - low
    if int(at.min()) < 0 or int(at.max()) >= len(table):
        return None
    return table[at]


def _dense_with(
    dense: tuple[int, npt.NDArray[np.int32]], key: int, slot: int
) -> tuple[int, npt.NDArray[np.int32]] | None:
    """A key table with `key` (above every key in it) at `slot`, grown in place while there is room
    and by a quarter when there is not; None once its span passes DENSE_SPAN times the documents
    (`slot + 1` of them), as `_dense_slots` would decide for a table made now."""
    low, table = dense
    at = key - low
    if at + 1 > DENSE_SPAN * (slot + 1):
        return None
    if at >= len(table):
        grown = np.full(_dense_room(at + 1), -1, np.int32)
        grown[: len(table)] = table
        table = grown
    table[at] = slot
    return low, table


def _dense_room(span: int) -> int:
    """The length of a key table for keys spanning `span`, with room for the next ones."""
    return span + max(DENSE_MIN_ROOM, span // DENSE_ROOM)

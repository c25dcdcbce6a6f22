"""A row's key comes from the driver; without one the write fails rather than use a made-up key
(key 0 would have filed a Memory version's postings under another document)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from powercontext_runtime.store.conn import inserted_key


def test_the_key_of_an_inserted_row_is_the_drivers_or_the_write_fails() -> None:
    assert inserted_key(SimpleNamespace(lastrowid=42)) == 42  # type: ignore[arg-type]
    for missing in (None, 0):
        with pytest.raises(RuntimeError, match="did not report the key"):
            inserted_key(SimpleNamespace(lastrowid=missing))  # type: ignore[arg-type]

"""The parts of the evaluation's all-mpnet-base-v2 encoder (devtools/mpnet.py) that need no
weights: its relative-position buckets, and reading a zip split over several files as one. (The
weights come with `make eval` only, which runs the model whole.)"""

from __future__ import annotations

import io
import itertools
import zipfile
from pathlib import Path

import numpy as np

from devtools.mpnet import BUCKETS, _Joined, relative_buckets


def test_relative_buckets_are_exact_near_logarithmic_far_and_split_by_direction() -> None:
    buckets = relative_buckets(600)
    at = {distance: int(buckets[300, 300 + distance]) for distance in range(-300, 300)}
    assert at[0] == 0
    # Keys before the query count in the lower half, keys after it in the upper half.
    assert [at[-d] for d in range(8)] == list(range(8))
    assert [at[d] for d in range(1, 8)] == [16 + d for d in range(1, 8)]
    # Logarithmic from 8 apart: 8 + floor(log(d / 8) / log(16) * 8), the last bucket from 128 on.
    assert (at[-8], at[-16], at[-32], at[-64], at[-127], at[-128], at[-299]) == (8, 10, 12, 14, 15, 15, 15)
    assert (at[8], at[16], at[127], at[128], at[299]) == (24, 26, 31, 31, 31)
    assert buckets.min() == 0 and buckets.max() == BUCKETS - 1
    # Only the distance matters.
    assert np.array_equal(relative_buckets(40), buckets[:40, :40])


def test_a_zip_split_over_several_files_reads_as_one(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    members = {"folder/weights.bin": rng.bytes(300_000), "folder/tokenizer.json": b'{"model": "x"}'}
    whole = io.BytesIO()
    with zipfile.ZipFile(whole, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    raw = whole.getvalue()
    cuts = [0, 1, 70_001, 150_000, len(raw)]  # a one-byte part too
    paths = []
    for i, (start, stop) in enumerate(itertools.pairwise(cuts)):
        path = tmp_path / f"folder.zip.{i + 1:03d}"
        path.write_bytes(raw[start:stop])
        paths.append(str(path))

    with _Joined(paths) as joined:
        # Reads across the parts' edges give the bytes of the whole.
        for start, size in [(0, 5), (69_990, 40), (149_999, 2), (len(raw) - 3, 10)]:
            joined.seek(start)
            assert joined.read(size) == raw[start : start + size]
        joined.seek(-4, io.SEEK_END)
        assert joined.read() == raw[-4:] and joined.tell() == len(raw)
        with zipfile.ZipFile(io.BufferedReader(joined, 4096)) as archive:
            assert {name: archive.read(name) for name in archive.namelist()} == members

"""An `Embed` that remembers every text's vector in a file, so a second evaluation run on the same
work directory asks the model for nothing it has embedded before (all-mpnet-base-v2 takes some
0.15 s a text here: 25 minutes for LoCoMo's turns).

The file holds one line per text, appended as it is embedded: the SHA-256 of the text (hex), a
tab, and its vector as float32 bytes in base64. A line cut short by a killed process is skipped
when the file is read back, and its text embedded again.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from devtools.embedding_models import Embed


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class VectorFile:
    """`embed` with the vectors of `path` (created if missing), in front of it; call it as an `Embed`."""

    def __init__(self, embed: Embed, path: Path, dimensions: int) -> None:
        self._embed = embed
        self._path = path
        self._dimensions = dimensions
        self._lock = threading.Lock()
        self._vectors: dict[str, npt.NDArray[np.float32]] = {}
        self._cut = False  # the file ends in a line cut short: the next starts on a line of its own
        if path.exists():
            self._read(path.read_text(encoding="ascii", errors="replace"))

    def __len__(self) -> int:
        return len(self._vectors)

    def _read(self, lines: str) -> None:
        self._cut = bool(lines) and not lines.endswith("\n")
        for line in lines.splitlines():
            key, _, packed = line.partition("\t")
            try:
                vector = np.frombuffer(base64.b64decode(packed, validate=True), dtype=np.float32)
            except (binascii.Error, ValueError):
                continue
            if len(key) == 64 and len(vector) == self._dimensions:
                self._vectors[key] = vector

    def __call__(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        keys = [_key(text) for text in texts]
        with self._lock:
            missing = list(
                {key: text for key, text in zip(keys, texts, strict=True) if key not in self._vectors}.items()
            )
        if missing:
            # Embedded outside the lock: the model serves other requests meanwhile. Two requests
            # for one new text may both embed it; the model gives both the same vector.
            found = [np.asarray(row, dtype=np.float32) for row in self._embed([text for _, text in missing])]
            lines = "".join(
                f"{key}\t{base64.b64encode(vector.tobytes()).decode()}\n"
                for (key, _), vector in zip(missing, found, strict=True)
            )
            with self._lock:
                with self._path.open("a", encoding="ascii") as file:
                    file.write("\n" * self._cut + lines)
                self._cut = False
                self._vectors.update((key, vector) for (key, _), vector in zip(missing, found, strict=True))
        with self._lock:
            return [self._vectors[key] for key in keys]

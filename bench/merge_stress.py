"""Index merges under CJK batches: per batch remember, its time, the server's peak RSS and /health/live.

Feeds `--batches` batch remembers of `--entries` entries into one Scope of a real server
(`powercontext serve`, SQLite), twice: random CJK characters (`--chars` each; their character
pairs make a vocabulary of millions, the worst case for the index's merges) and realistic Chinese
text built from a fixed word list. While each request runs, /health/live is polled on its own
connection and the server's RSS sampled. After the last batch the script waits until no merge is
due or under way (merges run in the background since they were moved off the request path) and
reports that stretch too. `--code DIR` serves another checkout (e.g. a `git worktree` of an older
commit) to compare before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from devtools.server_process import Client, ServerProcess

RESULTS = Path(__file__).resolve().parent / "results" / "merge_stress.json"
REPO = Path(__file__).resolve().parents[1]
CJK_FIRST, CJK_LAST = 0x4E00, 0x9FFF
# Common words of everyday Chinese prose (no downloads): sentences are drawn from these.
_WORD_LIST = (
    "我们 你们 他们 今天 明天 昨天 时间 工作 学习 生活 朋友 家庭 公司 项目 会议 计划 问题 方法 结果 原因 "
    "需要 可以 应该 已经 正在 开始 完成 继续 讨论 决定 发现 提出 解决 支持 负责 安排 准备 检查 更新 记录 "
    "系统 数据 用户 服务 接口 文档 版本 测试 部署 配置 性能 安全 网络 服务器 数据库 日志 错误 修复 功能 需求 "
    "客户 市场 产品 销售 价格 合同 预算 报告 季度 目标 团队 经理 同事 领导 部门 北京 上海 广州 深圳 杭州 "
    "天气 早上 下午 晚上 周末 假期 旅行 火车 飞机 酒店 餐厅 咖啡 米饭 面条 水果 医院 学校 老师 学生 孩子 "
    "重要 简单 复杂 清楚 及时 主要 具体 新的 旧的 大家 一起 关于 因为 所以 但是 如果 虽然 而且 或者 然后 "
    "记忆 上下文 模型 检索 排序 索引 合并 文本 字符 词语 中文 英文 翻译 搜索 结果 质量 成本 速度 规模 风险"
)
WORDS = _WORD_LIST.split(" ")
PUNCTUATION = "，，，。；、"


def random_cjk(rng: random.Random, chars: int) -> str:
    return "".join(chr(rng.randint(CJK_FIRST, CJK_LAST)) for _ in range(chars))


def chinese_prose(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    length = 0
    while length < chars:
        word = rng.choice(WORDS)
        out.append(word)
        length += len(word)
        if rng.random() < 0.18:
            out.append(rng.choice(PUNCTUATION))
            length += 1
    return "".join(out)[:chars]


class Probe:
    """Polls /health/live and samples the server's RSS on threads of their own while armed."""

    def __init__(self, server: ServerProcess) -> None:
        self._server = server
        self._stop = threading.Event()
        self.health_ms: list[float] = []
        self.rss_kib = 0
        self._threads = [threading.Thread(target=self._health), threading.Thread(target=self._rss)]
        for thread in self._threads:
            thread.start()

    def _health(self) -> None:
        client = Client(self._server.port)
        while not self._stop.is_set():
            started = time.perf_counter()
            try:
                status, _ = client.get("/health/live")
            except OSError:  # refused or timed out: counted as the time it took, then reconnect
                status = 0
                client.close()
                client = Client(self._server.port)
            self.health_ms.append((time.perf_counter() - started) * 1000)
            if status not in (0, 200):
                raise RuntimeError(f"/health/live answered {status}")
            self._stop.wait(0.02)
        client.close()

    def _rss(self) -> None:
        while not self._stop.is_set():
            self.rss_kib = max(self.rss_kib, self._server.status_kib("VmRSS"))
            self._stop.wait(0.02)

    def finish(self) -> dict[str, float]:
        self._stop.set()
        for thread in self._threads:
            thread.join()
        ordered = sorted(self.health_ms) or [0.0]
        return {
            "health_max_ms": ordered[-1],
            "health_p50_ms": ordered[len(ordered) // 2],
            "peak_rss_mib": self.rss_kib / 1024,
        }


class CodeServer(ServerProcess):
    """`python -m powercontext_server.cli serve` with the server's code from `code` (a checkout)."""

    code: Path = REPO

    def _launch(self) -> subprocess.Popen[bytes]:
        roots = ("generated", "runtime", "server", "client", "")
        self._env["PYTHONPATH"] = os.pathsep.join(str(self.code / root) for root in roots)
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "powercontext_server.cli",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            env=self._env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )


def merges_left(db: Path) -> int:
    """Merges under way or due: deferred writes waiting (0 once merged) plus merges recorded."""
    conn = sqlite3.connect(db)
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        waiting = conn.execute("SELECT COALESCE(SUM(documents), 0) FROM search_pending").fetchone()[0]
        under_way = (
            conn.execute("SELECT COUNT(*) FROM search_merges").fetchone()[0]
            if "search_merges" in tables
            else 0
        )
        return int(under_way) + (1 if waiting >= 4096 else 0)
    finally:
        conn.close()


def run_corpus(name: str, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    rng = random.Random(37)
    make = random_cjk if name == "cjk" else chinese_prose
    db = scratch / f"{name}.sqlite3"
    CodeServer.code = Path(args.code).resolve()
    server = CodeServer(f"sqlite:///{db}", scratch / f"server-{name}.log")
    client = Client(server.port)
    batches: list[dict[str, Any]] = []
    started_all = time.perf_counter()
    try:
        scope_id = f"bench:merge-{name}"
        status, _ = client.post("/v1/scopes", json.dumps({"scope_id": scope_id}).encode())
        assert status == 201, status
        for number in range(1, args.batches + 1):
            entries = [{"text": make(rng, args.chars)} for _ in range(args.entries)]
            body = json.dumps({"scope_id": scope_id, "entries": entries}, ensure_ascii=False).encode()
            probe = Probe(server)
            started = time.perf_counter()
            try:
                status, answer = client.post("/v1/memory/remember/batch", body)
            except OSError as exc:  # the client's 120 s timeout, or the server died
                figures = probe.finish()
                batches.append({"batch": number, "request_s": None, "error": repr(exc), **figures})
                print(f"{name} batch {number:>3}: no answer ({exc!r}), {figures}", flush=True)
                break
            seconds = time.perf_counter() - started
            figures = probe.finish()
            if status != 200:
                raise RuntimeError(f"batch {number} answered {status}: {answer[:200]!r}")
            batches.append({"batch": number, "request_s": seconds, **figures})
            print(
                f"{name} batch {number:>3}: {seconds:7.2f} s, peak RSS {figures['peak_rss_mib']:7.0f} MiB,"
                f" /health/live max {figures['health_max_ms']:7.1f} ms",
                flush=True,
            )
            if time.perf_counter() - started_all > args.cap_seconds:
                print(
                    f"{name}: stopped after batch {number}, over the {args.cap_seconds:.0f} s cap", flush=True
                )
                break
        probe = Probe(server)
        started = time.perf_counter()
        while merges_left(db) and time.perf_counter() - started < args.cap_seconds:
            time.sleep(0.2)
        settle = {"settle_s": time.perf_counter() - started, "left": merges_left(db), **probe.finish()}
        print(
            f"{name} background merges after the last batch: {settle['settle_s']:.1f} s, peak RSS"
            f" {settle['peak_rss_mib']:.0f} MiB, /health/live max {settle['health_max_ms']:.1f} ms",
            flush=True,
        )
    finally:
        client.close()
        server.stop()
    return {"batches": batches, "settle": settle, "total_s": time.perf_counter() - started_all}


def summary(name: str, result: dict[str, Any]) -> str:
    rows = result["batches"] + [result["settle"]]
    return (
        f"{name:<8} {len(result['batches']):>3} batches  max request"
        f" {max(b['request_s'] or float('inf') for b in result['batches']):6.2f} s"
        f"  peak RSS {max(r['peak_rss_mib'] for r in rows):6.0f} MiB"
        f"  /health/live max {max(r['health_max_ms'] for r in rows):7.1f} ms"
        f"  merges after the last batch {result['settle']['settle_s']:.1f} s  total {result['total_s']:.0f} s"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.merge_stress", description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=40, help="Batch remembers per corpus (40).")
    parser.add_argument("--entries", type=int, default=1000, help="Entries per batch (1000).")
    parser.add_argument("--chars", type=int, default=330, help="Characters per entry (330).")
    parser.add_argument("--corpora", default="cjk,chinese", help="cjk (random characters), chinese (prose).")
    parser.add_argument(
        "--cap-seconds", type=float, default=900.0, help="Stop a corpus after this long (900)."
    )
    parser.add_argument("--code", default=str(REPO), help="Checkout whose server runs (this one).")
    parser.add_argument("--label", default="after", help="Key of this run in the results file (after).")
    args = parser.parse_args(argv)
    results: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    run: dict[str, Any] = {
        "code": args.code,
        "batches": args.batches,
        "entries": args.entries,
        "chars": args.chars,
    }
    with tempfile.TemporaryDirectory(prefix="pc-merge-") as scratch:
        for name in args.corpora.split(","):
            run[name] = run_corpus(name, args, Path(scratch))
    results[args.label] = run
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    for label, recorded in results.items():
        for name in ("cjk", "chinese"):
            if name in recorded:
                print(f"{label:<7} {summary(name, recorded[name])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`make bench-profile`: pyinstrument profiles of the prepare path, as text, into bench/profiles/.

Two views of the same request (SQLite, 10k entries per Scope, `assembly: {}` unless told):
- `inprocess-<mode>.txt`: the Runtime called in process (what prepare itself costs);
- `http-<mode>.txt`: the same requests against `powercontext serve` as its own process, sampled
  from outside by py-spy (what the HTTP stack adds: uvicorn, routing, parsing, JSON out).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyinstrument import Profiler

from devtools.server_process import Client, ServerProcess
from powercontext_api.models import PrepareContextRequest
from powercontext_server import keep_freed_memory

from .datagen import queries
from .run import open_app, prepare_database, server_env
from .scenarios import MODES

PROFILES = Path(__file__).resolve().parent / "profiles"


def profile_in_process(url: str, mode_key: str, seconds: float) -> str:
    mode = next(m for m in MODES if m.key == mode_key)
    app, _ = open_app(url)
    bodies = [mode.body(q) for q in queries()]
    try:
        for body in bodies:  # warm
            app.prepare_context(PrepareContextRequest.model_validate(body))
        profiler = Profiler(interval=0.0005)
        count = 0
        profiler.start()
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            app.prepare_context(PrepareContextRequest.model_validate(bodies[count % len(bodies)]))
            count += 1
        profiler.stop()
    finally:
        app.close()
    header = f"# in-process prepare, mode {mode_key}: {count} requests in {seconds:.0f} s\n"
    return header + profiler.output_text(unicode=True, color=False, show_all=False)


def profile_server(url: str, mode_key: str, seconds: float, work: Path) -> str:
    """The same requests against `powercontext serve` as its own process, sampled by py-spy.

    py-spy reads the server's stacks from outside (every thread, idle ones left out), so the
    profile covers uvicorn, routing, parsing, the worker thread's Runtime call and JSON out as the
    server runs them. Shown as a tree of our own functions; library frames are folded into them.
    """
    mode = next(m for m in MODES if m.key == mode_key)
    bodies = [mode.wire(q) for q in queries()]
    samples = work / f"py-spy-{mode_key}.txt"
    server = ServerProcess(url, work / "profile-server.log", server_env())
    client = Client(server.port)
    try:
        for body in bodies:  # warm the search mirror
            assert client.post("/v1/context/prepare", body)[0] == 200
        spy = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("py-spy")),
                "record",
                "--pid",
                str(server.pid),
                "--duration",
                str(round(seconds)),
                "--rate",
                "1000",
                "--format",
                "raw",
                "--nonblocking",
                "--output",
                str(samples),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        count = 0
        while spy.poll() is None:
            assert client.post("/v1/context/prepare", bodies[count % len(bodies)])[0] == 200
            count += 1
        if spy.returncode != 0:
            raise RuntimeError(f"py-spy failed with exit status {spy.returncode}")
    finally:
        client.close()
        server.stop()
    header = f"# powercontext serve sampled by py-spy, mode {mode_key}: {count} prepares in {seconds:.0f} s\n"
    return header + collapsed_tree(samples.read_text())


def collapsed_tree(collapsed: str, min_share: float = 0.01) -> str:
    """py-spy's collapsed stacks (`frame;frame;… count`) as an indented tree of our own frames
    (`powercontext_*` packages), each with its share of all samples."""
    root: dict[str, Any] = {"n": 0, "children": {}}
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        node = root
        node["n"] += int(count)
        for frame in stack.split(";"):
            if "powercontext_" not in frame:
                continue
            name = frame.split(" (")[0] + " (" + frame.rsplit("/", 1)[-1].split(":")[0] + ")"
            node = node["children"].setdefault(name, {"n": 0, "children": {}})
            node["n"] += int(count)
    total = max(root["n"], 1)
    lines = [f"{root['n']} samples; our frames below, library time folded into them"]

    def walk(children: dict[str, Any], depth: int) -> None:
        for name, child in sorted(children.items(), key=lambda item: -item[1]["n"]):
            if child["n"] / total >= min_share:
                lines.append(f"{100 * child['n'] / total:6.1f}%  {'  ' * depth}{name}")
                walk(child["children"], depth + 1)

    walk(root["children"], 0)
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile")
    parser.add_argument("--entries", default="1000,10000", help="comma-separated corpus sizes")
    parser.add_argument("--modes", default="assembly,legacy,four")
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args(argv)
    PROFILES.mkdir(exist_ok=True)
    from .run import Database

    keep_freed_memory()  # profile the process as the server runs it
    with tempfile.TemporaryDirectory(prefix="pc-profile-") as tmp:
        work = Path(tmp)
        for entries in (int(n) for n in args.entries.split(",")):
            url, _ = prepare_database(Database("sqlite", ""), entries, work)
            size = f"{entries // 1000}k" if entries % 1000 == 0 else str(entries)
            for old in PROFILES.glob(f"*-{size}.txt"):  # this size's set is written afresh
                old.unlink()
            for mode in args.modes.split(","):
                for name, text in (
                    (f"inprocess-{mode}-{size}.txt", profile_in_process(url, mode, args.seconds)),
                    (f"http-{mode}-{size}.txt", profile_server(url, mode, args.seconds, work)),
                ):
                    (PROFILES / name).write_text(text)
                    print(f"wrote bench/profiles/{name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

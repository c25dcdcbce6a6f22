// What the tests share: a real `powercontext serve` in a temporary data directory, the repository's
// paths, and the operationIds of the contract read from the spec itself.
import { spawn, execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

export const PACKAGE = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const REPO = resolve(PACKAGE, "..");
// The Makefile's virtualenv; a worktree sharing another checkout's venv names it in POWERCONTEXT_VENV.
export const VENV_BIN = join(process.env.POWERCONTEXT_VENV ?? join(REPO, ".venv"), "bin");
export const run = promisify(execFile);

/** Every operationId in openapi/powercontext.yaml, straight from the text. */
export function specOperationIds() {
  const spec = readFileSync(join(REPO, "openapi", "powercontext.yaml"), "utf-8");
  return [...spec.matchAll(/^\s+operationId:\s*([A-Za-z_]+)\s*$/gm)].map((m) => m[1]).sort();
}

export function freePort() {
  return new Promise((done, fail) => {
    const probe = createServer();
    probe.once("error", fail);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => done(port));
    });
  });
}

/** `powercontext serve` on a free loopback port, ready; `stop()` ends it and removes its data. */
export async function startServer() {
  const dataDir = mkdtempSync(join(tmpdir(), "pc-ts-"));
  const port = await freePort();
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("POWERCONTEXT_SERVER_")));
  env.POWERCONTEXT_SERVER_DATA_DIR = dataDir;
  const child = spawn(join(VENV_BIN, "powercontext"), ["serve", "--host", "127.0.0.1", "--port", String(port)], {
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  child.stderr.on("data", (chunk) => (log = (log + chunk).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}:\n${log}`);
    if (Date.now() > deadline) throw new Error(`server did not become ready:\n${log}`);
    try {
      if ((await fetch(`${url}/health/ready`)).status === 200) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const stop = async () => {
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
  };
  return { url, port, stop };
}

/** A fetch that records which operation of the table each request was. */
export function recordingFetch(operations, seen) {
  const routes = Object.entries(operations).map(([id, { method, path }]) => ({
    id,
    method,
    pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, "[^/]+")}$`),
  }));
  return (request, init) => {
    const { pathname } = new URL(request.url);
    const match = routes.find((r) => r.method === request.method && r.pattern.test(pathname));
    if (match) seen.add(match.id);
    return fetch(request, init);
  };
}

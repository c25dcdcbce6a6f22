// `api_generate --check` fails when the committed TypeScript is stale.
import assert from "node:assert/strict";
import { test } from "node:test";
import { REPO, VENV_BIN, run } from "./support.mjs";

// The check against a copy of client-ts/src/generated/ with a line added to each file.
const STALE_CHECK = `
import shutil, sys, tempfile
from pathlib import Path
import devtools.api_generate as generate
with tempfile.TemporaryDirectory(dir=generate.ROOT / "client-ts", prefix=".stale-") as scratch:
    stale = Path(scratch) / "generated"
    shutil.copytree(generate.TS_GENERATED, stale)
    for name in sys.argv[1:]:
        with (stale / name).open("a", encoding="utf-8") as handle:
            handle.write("// stale\\n")
    generate.TS_GENERATED = stale
    sys.exit(generate.main(["--check"]))
`;

test("a stale schema.ts or operations.ts fails the check", async () => {
  const names = ["schema.ts", "operations.ts"];
  const failed = await run(`${VENV_BIN}/python`, ["-c", STALE_CHECK, ...names], { cwd: REPO }).catch((e) => e);
  assert.equal(failed.code, 1);
  for (const name of names) {
    const escaped = name.replace(".", "\\.");
    assert.match(failed.stderr, new RegExp(`\\+\\+\\+ spec/client-ts/\\.stale-[^/]+/generated/${escaped}\\n[^]*?-// stale`));
  }
  assert.match(failed.stderr, /run make api-generate/);
});

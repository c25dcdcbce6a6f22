// The docs example, compiled with tsc against the `npm pack` tarball installed into a fresh
// directory, runs there against a real server.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { PACKAGE, REPO, run, startServer } from "./support.mjs";

const MARKER = "<!-- ts-example -->\n```ts\n";
let server;
let work;

before(async () => {
  server = await startServer();
  work = mkdtempSync(join(tmpdir(), "pc-ts-pack-"));
});
after(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

function docsExample() {
  const page = readFileSync(join(REPO, "docs", "typescript.md"), "utf-8");
  const start = page.indexOf(MARKER);
  assert.ok(start >= 0, "docs/typescript.md has no <!-- ts-example --> block");
  const body = page.slice(start + MARKER.length);
  return body.slice(0, body.indexOf("\n```\n") + 1);
}

test("the packed client installs into a fresh directory and runs the docs example", async () => {
  // `make ts-test` has built dist/ already: no second build by the prepack script.
  assert.ok(existsSync(join(PACKAGE, "dist", "index.d.ts")), "build the package first (npm run build)");
  const packed = await run("npm", ["pack", "--ignore-scripts", "--pack-destination", work, "--silent"], { cwd: PACKAGE });
  const tarball = join(work, packed.stdout.trim().split("\n").pop());
  const app = join(work, "app");
  await run("mkdir", [app]);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error", tarball], { cwd: app });

  writeFileSync(join(app, "example.ts"), docsExample());
  const tsconfig = {
    compilerOptions: {
      target: "ES2022",
      module: "NodeNext",
      moduleResolution: "NodeNext",
      strict: true,
      noEmitOnError: true,
      skipLibCheck: true, // the example is checked against the package's declarations, not @types/node's own
      types: ["node"],
      typeRoots: [join(PACKAGE, "node_modules", "@types")],
    },
    files: ["example.ts"],
  };
  writeFileSync(join(app, "tsconfig.json"), JSON.stringify(tsconfig));
  await run(join(PACKAGE, "node_modules", ".bin", "tsc"), ["-p", "tsconfig.json"], { cwd: app });

  const env = { ...process.env, POWERCONTEXT_URL: server.url };
  delete env.POWERCONTEXT_TOKEN;
  const { stdout } = await run("node", ["example.js"], { cwd: app, env });
  assert.match(stdout, /BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1\n.*After changing the OpenAPI document, run make api-generate\./s);
  assert.match(stdout, /\n404 scope_not_found \(request [0-9a-f]{32}\)\n$/);
});

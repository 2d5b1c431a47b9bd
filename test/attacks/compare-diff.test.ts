/**
 * The diff between two candidates (GET /api/groups/:code/diff?from=A&to=B) under attack: a local
 * process without the token, and names that are no candidate of the group — a revision (HEAD~1),
 * an option git would obey (--output=FILE writes a file), another group's task, a branch by its
 * full name, a path. Each is refused naming the group's candidates, and none reaches git: the
 * daemon's git is a logging wrapper here, and its log never shows the hostile text.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { upstream } from "../helpers/fixtures";
import { handMadeGroup } from "../helpers/groups";
import { cleanupAll, Project, sh } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const bin = mkdtempSync(join(tmpdir(), "lazy-gitlog-"));
const LOG = join(bin, "argv.log");
const OUT = join(tmpdir(), `lazy-diff-attack-${process.pid}`);
let mock: Mock.MockProvider;
let p: Project;
let other: { id: string; code: string };

beforeAll(async () => {
  const real = sh("/", "command -v git").out.trim();
  writeFileSync(join(bin, "git"), `#!/bin/sh\nprintf '%s\\n' "$*" >> ${LOG}\nexec ${real} "$@"\n`);
  chmodSync(join(bin, "git"), 0o755);
  mock = await Mock.anthropic();
  p = new Project({
    toml: `${upstream(mock.url)}\n[profiles.a]\nharness = "claude"\n`,
    env: { PATH: `${bin}:${process.env.PATH}` },
  });
  sh(p.root, "printf 'x\\n' > f.txt && git add f.txt && git -c user.name=Dev -c user.email=dev@example.com commit -qm init");
  sh(p.root, "printf 'y\\n' > f.txt && git -c user.name=Dev -c user.email=dev@example.com commit -qam second");
  await p.setCredential("anthropic", `sk-ant-api03-DIFFATTACK-${"k".repeat(66)}AA`);
  await handMadeGroup(p, "g", [{ "f.txt": "a" }, { "f.txt": "b" }]);
  await handMadeGroup(p, "other", [{ "f.txt": "secret plan" }, {}]);
  other = (await p.json(["task", "show", "other-1"])).task;
}, 120_000);

afterAll(() => cleanupAll(mock));

const get = async (query: string, token: string | null = p.token()) =>
  fetch(`http://127.0.0.1:${p.runtime()!.api.port}/api/groups/g/diff?${query}`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });

describe("the diff between candidates under attack", () => {
  test("the daemon's git is the logging wrapper (the assertions below would otherwise prove nothing)", async () => {
    const ok = await get("from=g-1&to=g-2");
    expect(ok.status).toBe(200);
    const d = await ok.json();
    expect(d.total).toEqual({ files: 1, added: 1, removed: 1 });
    expect(readFileSync(LOG, "utf8")).toContain("refs/heads/lazy/g-2^{commit}");
  });

  test("no token, a wrong token: 401, no diff", async () => {
    for (const token of [null, "not-the-token"]) {
      const r = await get("from=g-1&to=g-2", token);
      expect(r.status).toBe(401);
      expect(await r.text()).not.toContain("f.txt");
    }
  });

  test("a revision, an option, another group's task, a full ref, a path: refused naming the candidates; git never sees them", async () => {
    const before = readFileSync(LOG, "utf8").length;
    const hostile = [
      "HEAD~1",
      `--output=${OUT}`,
      "other-1",
      other.id,
      "refs/heads/main",
      "lazy/g-1",
      "../../../etc/passwd",
      "g-1^",
      "g-1 --output=x",
      "",
    ];
    for (const name of hostile)
      for (const query of [`from=${encodeURIComponent(name)}&to=g-2`, `from=g-1&to=${encodeURIComponent(name)}`]) {
        const r = await get(query);
        expect(r.status, `${query}`).toBe(400);
        const body = await r.json();
        expect(body.error.message, query).toMatch(
          /is not a candidate of group g: (from|to) names one of g-1, g-2\.|Name two candidates of group g/,
        );
        expect(JSON.stringify(body)).not.toContain("secret plan");
      }
    // Repeated keys (?from=g-1&from=HEAD~1) are no way around it either.
    const twice = await get("from=g-1&from=HEAD~1&to=g-2");
    expect(twice.status).toBe(400);
    const ran = readFileSync(LOG, "utf8").slice(before);
    for (const s of ["HEAD~1", "--output", "other-1", other.id, "etc/passwd", "g-1^"]) expect(ran, s).not.toContain(s);
    expect(existsSync(OUT)).toBe(false);
  });

  test("the CLI refuses the same, exit 2, naming the candidates", async () => {
    for (const name of ["HEAD~1", "other-1"]) {
      const r = await p.run(["compare", "g", "--diff", name, "g-2"]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`"${name}" is not a candidate of group g: from names one of g-1, g-2.`);
    }
    expect(existsSync(OUT)).toBe(false);
  });
});

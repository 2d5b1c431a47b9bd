/**
 * The dashboard's hover (GET /api/tasks/:ref/trace) against a hostile agent's branch (issue 38).
 * The agent commits what it likes: here a file of 20,000 lines changed by 400 commits, so that
 * blaming its first line walks the whole history (seconds of git each time), and a file named
 * with non-ASCII characters (données/é.ts), which git quotes in blame's output. A task made by
 * hand (no container), its branch written with git fast-import as the agent's commits land
 * there; the record of the last one written by lazy's own writer. A `git` first on the
 * daemon's PATH logs every call. What must hold:
 *
 * - the hover on données/é.ts names its task, tool call and range;
 * - hovers on the long history, many at once, do not stall the daemon: /api/health and the
 *   task list answer while every one of them is still tracing, and each ends with its answer
 *   or the time limit's refusal (cause and remedy); each blame is of its one line (-L N,N);
 * - past the time limit (LAZY_TRACE_TIMEOUT_MS) git is killed and the hover says so, on the
 *   page too (the line's title), and so does lazy trace;
 * - lazy export reads the notes of the task's commits through the one note reader: no
 *   `git notes list` of the whole notes ref, the record there.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as Provenance from "../../src/provenance";
import { closeBrowser, signedIn } from "../dashboard/browser";
import { upstream } from "../helpers/fixtures";
import { handMadeTask } from "../helpers/groups";
import { cleanupAll, Project, sh, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-TRACEHOVER-${"h".repeat(67)}AA`;
const COMMITS = 400;
const LINES = 20_000;
let mock: Mock.MockProvider;
let p: Project;
let log = "";
let uni = "";

const ok = (cwd: string, cmd: string) => {
  const r = sh(cwd, cmd);
  if (r.code !== 0) throw new Error(`${cmd}: ${r.err}`);
  return r.out.trim();
};

/** A request to the daemon's API with its token, answered as it is (status and body). */
const fetchApi = (path: string) => {
  const rt = JSON.parse(readFileSync(join(p.stateDir, "daemon.json"), "utf8"));
  return fetch(`http://127.0.0.1:${rt.api.port}${path}`, { headers: { authorization: `Bearer ${p.token()}` } });
};

/** The agent's commits, as they land on its branch: `COMMITS` edits of big.txt, then données/é.ts. */
async function hostileHistory(root: string, branch: string, from: string): Promise<void> {
  const git = Bun.spawn(["git", "fast-import", "--quiet"], { cwd: root, stdin: "pipe", stderr: "pipe" });
  const data = (s: string) => `data ${Buffer.byteLength(s)}\n${s}\n`;
  const who = (n: number) =>
    `author Agent <agent@example.com> ${1_700_000_000 + n} +0000\ncommitter Agent <agent@example.com> ${1_700_000_000 + n} +0000\n`;
  const lines = Array.from({ length: LINES }, (_, i) => `line ${i} ${"x".repeat(20)}`);
  for (let c = 0; c < COMMITS; c++) {
    lines[LINES - 1 - (c % 50)] = `changed by commit ${c}`;
    git.stdin.write(
      `commit ${branch}\n${who(c)}${data(`edit ${c}`)}${c === 0 ? `from ${from}\n` : ""}M 100644 inline big.txt\n${data(`${lines.join("\n")}\n`)}`,
    );
    await git.stdin.flush();
  }
  git.stdin.write(
    `commit ${branch}\n${who(COMMITS)}${data("module français")}M 100644 inline données/é.ts\n${data("export const un = 1;\nexport const deux = 2;\n")}`,
  );
  await git.stdin.end();
  if ((await git.exited) !== 0) throw new Error(`git fast-import: ${await new Response(git.stderr).text()}`);
}

/** A git blame still running in `root` (not a zombie). */
function blameIn(root: string): boolean {
  for (const pid of readdirSync("/proc").filter((x) => /^\d+$/.test(x))) {
    try {
      if (readlinkSync(`/proc/${pid}/cwd`) !== root) continue;
      if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes("blame")) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z") return true;
    } catch {}
  }
  return false;
}

beforeAll(async () => {
  mock = await Mock.anthropic();
  const bin = mkdtempSync(join(tmpdir(), "lazy-gitlog-"));
  log = join(bin, "git.log");
  writeFileSync(join(bin, "git"), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\nexec '${Bun.which("git")}' "$@"\n`);
  chmodSync(join(bin, "git"), 0o755);
  p = new Project({ toml: `${upstream(mock.url)}\n[profiles.a]\nharness = "claude"\n`, env: { PATH: `${bin}:${process.env.PATH}` } });
  await p.setCredential("anthropic", KEY);
  await handMadeTask(p, "big", [], "Edit the big file");
  const base = ok(p.root, "git rev-parse main");
  await hostileHistory(p.root, "refs/heads/lazy/big", base);
  uni = ok(p.root, "git rev-parse refs/heads/lazy/big");
  const tool = { id: "toolu_fr", name: "Write", input: JSON.stringify({ file_path: "/w/données/é.ts", content: "…" }), at: 2 };
  const written = await Provenance.writeTurn(p.root, "lazy/big", `${uni}~1`, uni, {
    task: { id: "abcd1234", code: "big", title: "Edit the big file" },
    turn: 1,
    harness: "claude",
    profile: "a",
    wire: "anthropic",
    tools: [tool],
    calls: [{ id: 1, at: 1, served: "claude-sonnet-4-5", asked: "claude-sonnet-4-5" }],
    asked: { kind: "task", text: "Edit the big file" },
    prompts: true,
    cut: { secrets: [] },
  });
  expect(written.written).toEqual([uni]);
}, 180_000);

afterAll(async () => {
  await closeBrowser();
  await cleanupAll(mock);
});

describe("the dashboard's hover against a hostile branch", () => {
  test("a line of données/é.ts is traced to its task, tool call and range", async () => {
    const t = await p.api("GET", `/api/tasks/big/trace?path=${encodeURIComponent("données/é.ts")}&line=2`);
    expect(t).toMatchObject({
      file: "données/é.ts",
      commit: uni,
      at: { path: "données/é.ts", line: 2 },
      agent: true,
      task: { code: "big" },
      tool: { id: "toolu_fr", name: "Write" },
      range: { start_line: 1, end_line: 2 },
    });
  }, 60_000);

  test("many hovers on a history that takes seconds to blame: the daemon answers meanwhile; each blame is of its one line", async () => {
    writeFileSync(log, "");
    const tracing = new Set<number>();
    const hovers = Array.from({ length: 8 }, (_, i) => {
      tracing.add(i);
      return fetchApi(`/api/tasks/big/trace?path=big.txt&line=${i + 1}`).then(async (r) => {
        tracing.delete(i);
        return { line: i + 1, status: r.status, body: (await r.json()) as any };
      });
    });
    // Once git blame runs, the daemon's other answers come while every hover is still tracing.
    await until(() => readFileSync(log, "utf8").includes(" blame "), 30_000, "a git blame of a hover");
    const health = await fetchApi("/api/health");
    expect(health.status).toBe(200);
    expect((await health.json()).ok).toBe(true);
    const tasks = await fetchApi("/api/tasks");
    expect(tasks.status).toBe(200);
    expect(tracing.size).toBe(8);

    for (const h of await Promise.all(hovers)) {
      if (h.status === 200) expect(h.body, `line ${h.line}`).toMatchObject({ line: h.line, agent: false, author: { name: "Agent" } });
      else {
        expect(h.status, JSON.stringify(h.body)).toBe(409);
        // Its git ran out of time, or it waited its whole time behind the four running and never started: each says which.
        expect(h.body.error.message).toMatch(
          new RegExp(
            `^Tracing big\\.txt:${h.line} (took over 10 s, so lazy stopped git blame|waited 10 s behind 4 other lines being traced and did not start)`,
          ),
        );
      }
    }
    const blames = readFileSync(log, "utf8")
      .split("\n")
      .filter((l) => / blame /.test(l));
    expect(blames.length).toBeGreaterThanOrEqual(1);
    for (const b of blames) expect(b).toMatch(/ -L (\d+),\1 refs\/heads\/lazy\/big -- big\.txt$/);
  }, 300_000);

  test("past the time limit git is killed and the hover says why and what to do", async () => {
    await p.ok(["daemon", "stop"]);
    await p.ok(["daemon", "start"], { env: { LAZY_TRACE_TIMEOUT_MS: "300" } });
    const r = await fetchApi("/api/tasks/big/trace?path=big.txt&line=1");
    expect(r.status).toBe(409);
    expect(((await r.json()) as any).error.message).toBe(
      "Tracing big.txt:1 took over 300 ms, so lazy stopped git blame: the file's history is too long to walk in that time. Run git blame -L 1,1 refs/heads/lazy/big -- big.txt yourself.",
    );
    await until(() => !blameIn(p.root), 10_000, "no git blame left running in the project");
    expect((await fetchApi("/api/health")).status).toBe(200);

    // The page: the line's title says it, as the answer does.
    const { ctx, origin, page } = await signedIn(p);
    try {
      const pg = page.page;
      await pg.goto(`${origin}/tasks/big`);
      await pg.waitForSelector(".files >> text=big.txt", { timeout: 30_000 });
      const files = await pg.locator(".files a").allTextContents();
      const i = files.indexOf("big.txt");
      const line = pg.locator(`[data-file="${i}"] .hunk [data-k="new:1"]`);
      await line.hover();
      await pg.waitForFunction((i) => !!document.querySelector<HTMLElement>(`[data-file="${i}"] .hunk [data-k="new:1"]`)?.title, i, {
        timeout: 30_000,
      });
      expect(await line.getAttribute("title")).toStartWith("Tracing big.txt:1 took over 300 ms, so lazy stopped git blame");
    } finally {
      await ctx.close();
    }
  }, 120_000);

  test("lazy export reads the task's notes by its commits, not by listing the notes ref", async () => {
    writeFileSync(log, "");
    const out = join(p.root, "..", `${p.root.split("/").at(-1)}-evidence.json`);
    await p.ok(["export", "big", "-o", out]);
    const doc = JSON.parse(readFileSync(out, "utf8"));
    const trace = JSON.parse(doc.parts["trace.json"]);
    expect(trace.records.map((r: any) => [r.commit, r.record.vcs.revision])).toEqual([[uni, uni]]);
    expect(trace.without).toHaveLength(COMMITS);
    const calls = readFileSync(log, "utf8").split("\n");
    expect(calls.some((l) => /^(-c \S+ )*notes .*list/.test(l) || / notes .*list/.test(l))).toBe(false);
    expect(calls.some((l) => / cat-file --batch-check/.test(l))).toBe(true);
  }, 120_000);

  test("lazy trace: the same time limit, git killed, the cause and the remedy (exit 1); a line of données/é.ts traced", async () => {
    ok(p.root, "git merge -q --ff-only lazy/big");
    const r = await p.run(["trace", "big.txt:1"], { env: { LAZY_TRACE_TIMEOUT_MS: "300" } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      "Tracing big.txt:1 took over 300 ms, so lazy stopped git blame: the file's history is too long to walk in that time.",
    );
    expect(r.stderr).toContain("git blame -L 1,1 -- big.txt yourself.");
    await until(() => !blameIn(p.root), 10_000, "no git blame left running in the project");
    const fr = await p.ok(["trace", "données/é.ts:1"]);
    expect(fr.stdout).toContain("données/é.ts:1 was written by an agent task:");
    expect(fr.stdout).toContain("tool call  Write toolu_fr: ");
  }, 120_000);
});

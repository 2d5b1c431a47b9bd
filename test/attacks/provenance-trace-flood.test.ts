/**
 * A flood of work against the trace records (issue 38, the review's finding that writing them
 * could stall the daemon): real Claude Code in its task container, told by the mock provider to
 * commit 2,000 files at once and then 510 more commits in one Bash call; the turn's tool calls
 * are then 5,000 Write calls naming those files (put in the daemon's store as the harness's
 * stream records them — a real turn of 5,000 calls would take hours of model round trips —
 * while the daemon is held at the records' first git run, before it gathers the turn's facts).
 * Asserted on the host: while lazy writes the turn's records (held at their first git run and at
 * their one notes commit by a `git` first on the daemon's PATH that logs every run and waits on
 * gate files), the daemon's API answers (/api/health, lazy task show); each file's range goes to
 * the Write call that wrote it; the records cost one diff per commit and one notes
 * commit for the whole turn; commits past MAX_COMMITS get none and the daemon's log says so; the
 * 2,000-file record is within MAX_NOTE and valid against the Agent Trace schema
 * (test/fixtures/agent-trace-record.schema.json); a person's note under the ref stays. Then the
 * flood task is rejected: its records go with its branch, while an accepted task's stay.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Ajv from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { anthropicProject, settledAs, teardown } from "../helpers/fixtures";
import { type Project, until } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-TRACEFLOOD-${"f".repeat(69)}AA`;
let anthropic: Mock.MockProvider;
let p: Project;

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
// https://github.com/cursor/agent-trace/blob/2754f077f3e50c1fb5088183f5c9362077cc8ca1/README.md (6.1)
const valid = ajv.compile(JSON.parse(readFileSync(join(import.meta.dir, "../fixtures/agent-trace-record.schema.json"), "utf8")));

const shim = mkdtempSync(join(tmpdir(), "lazy-trace-flood-"));
const LOG = join(shim, "git.log");
const GATE = join(shim, "gate");
const LIST_GATE = join(shim, "list-gate");
const REAL_GIT = Bun.which("git")!;
/** MAX_NOTE (src/provenance/notes.ts): what readers accept. */
const MAX_NOTE = 4 * 1024 * 1024;

beforeAll(async () => {
  mkdirSync(join(shim, "bin"));
  writeFileSync(
    join(shim, "bin", "git"),
    `#!/bin/sh
printf '%s\\n' "$*" >> '${LOG}'
case " $* " in
  *" fast-import "*)
    if [ -e '${GATE}' ]; then : > '${GATE}.reached'; while [ -e '${GATE}' ]; do sleep 0.05; done; fi ;;
  *" rev-list --reverse --parents "*)
    if [ -e '${LIST_GATE}' ]; then : > '${LIST_GATE}.reached'; while [ -e '${LIST_GATE}' ]; do sleep 0.05; done; fi ;;
esac
exec '${REAL_GIT}' "$@"
`,
  );
  chmodSync(join(shim, "bin", "git"), 0o755);
  ({ anthropic, p } = await anthropicProject(KEY, { env: { PATH: `${join(shim, "bin")}:${process.env.PATH}` } }));
}, 120_000);
afterAll(async () => {
  rmSync(GATE, { force: true });
  rmSync(LIST_GATE, { force: true });
  await teardown(p, anthropic);
  rmSync(shim, { recursive: true, force: true });
});

const git = (args: string[]) => {
  const r = Bun.spawnSync(["git", ...args], { cwd: p.root, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
};
const hasNote = (c: string) => git(["notes", "--ref", "agent-trace", "show", c]).code === 0;
const noted = () =>
  git(["notes", "--ref", "agent-trace", "list"])
    .out.trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => l.split(" ")[1]!);
const runs = () => (existsSync(LOG) ? readFileSync(LOG, "utf8").trim().split("\n") : []);
const daemonLog = () => readFileSync(join(p.home, "daemon", readdirSync(join(p.home, "daemon"))[0]!, "daemon.log"), "utf8");
const fetchApi = (path: string) => {
  const rt = JSON.parse(readFileSync(join(p.stateDir, "daemon.json"), "utf8"));
  return fetch(`http://127.0.0.1:${rt.api.port}${path}`, { headers: { authorization: `Bearer ${p.token()}` } });
};

const TOOLS = 5_000;
/** Write call i names many/file-<i mod 2000 + 1>.txt; a file's last writer is 4000+k-1 (k ≤ 1000), else 2000+k-1. */
const writeInput = (wt: string, i: number) =>
  `file_path: ${wt}/many/file-${(i % 2000) + 1}.txt\ncontent: line ${(i % 2000) + 1}\n${"// pad\n".repeat(280)}`;
const lastWriter = (k: number) => (k <= 1000 ? 4000 + k - 1 : 2000 + k - 1);

// 2,000 files in one commit, then 510 commits of one line each: 511 commits in one turn.
const FLOOD = [
  "mkdir -p many",
  "for i in $(seq 1 2000); do printf 'line %s\\n' $i > many/file-$i.txt; done",
  "git add -A many && git commit -qm 'two thousand files'",
  "for i in $(seq 1 510); do printf '%s\\n' $i > more.txt && git add more.txt && git commit -qm more-$i; done",
  "echo flooded",
].join("; ");

describe("a flood of commits and files against the trace records", () => {
  test("while a turn's records are written the daemon answers; bounded git runs, one notes commit, notes within MAX_NOTE", async () => {
    // A person's own note under the ref, before any of lazy's.
    const init = git(["rev-parse", "HEAD"]).out.trim();
    expect(
      git(["-c", "user.name=Dev", "-c", "user.email=dev@example.com", "notes", "--ref", "agent-trace", "add", "-m", "person's", init]).code,
    ).toBe(0);

    await p.ok(["task", "add", "Flood the records", "--code", "flood"]);
    anthropic.answer({ text: "Flooded.", steps: [{ name: "Bash", input: { command: FLOOD, description: "flood" } }] });
    writeFileSync(GATE, "");
    writeFileSync(LIST_GATE, "");
    await p.ok(["start", "flood"]);
    await settledAs(p, "flood", "done", 600_000);
    const commits = git(["rev-list", "--reverse", "HEAD..refs/heads/lazy/flood"]).out.trim().split("\n");
    expect(commits).toHaveLength(511);

    // Held at the records' first git run (listing the turn's commits): no facts gathered yet.
    await until(() => existsSync(`${LIST_GATE}.reached`), 60_000, "the records' first git run");
    expect((await fetchApi("/api/health")).status).toBe(200);
    // The turn's 5,000 Write calls, as the harness's stream would have left them.
    const task = (await p.json(["task", "show", "flood"])).task;
    const wt = join(p.stateDir, "worktrees", "flood");
    const db = new Database(join(p.stateDir, "store.db"));
    try {
      db.exec("PRAGMA busy_timeout = 10000");
      const add = db.query("INSERT INTO events (task_id, at, kind, data) VALUES (?, ?, 'tool', ?)");
      db.transaction(() => {
        for (let i = 0; i < TOOLS; i++)
          add.run(task.id, Date.now(), JSON.stringify({ id: `toolu_${i}`, name: "Write", input: writeInput(wt, i) }));
      })();
    } finally {
      db.close();
    }
    rmSync(LIST_GATE);

    // Held at its notes commit: the records are made, and the daemon still answers.
    await until(() => existsSync(`${GATE}.reached`), 300_000, "the turn's notes commit");
    const health = await fetchApi("/api/health");
    expect(health.status).toBe(200);
    expect((await health.json()).ok).toBe(true);
    expect((await p.json(["task", "show", "flood"])).task.status).toBe("done");
    expect(hasNote(commits[0]!)).toBe(false);
    rmSync(GATE);

    await until(() => hasNote(commits[0]!), 60_000, "the flood's first record");
    // One diff per commit written (500 at most: MAX_COMMITS), one fast-import for the turn.
    expect(runs().filter((l) => l.includes("diff-tree") && l.includes("--full-index")).length).toBeLessThanOrEqual(500);
    expect(runs().filter((l) => l.includes("fast-import"))).toHaveLength(1);
    // The person's note and one notes commit of lazy's for the whole turn.
    expect(git(["rev-list", "--count", "refs/notes/agent-trace"]).out.trim()).toBe("2");
    expect(git(["log", "-1", "--format=%an", "refs/notes/agent-trace"]).out.trim()).toBe("lazy");
    expect(git(["notes", "--ref", "agent-trace", "show", init]).out.trim()).toBe("person's");
    expect(noted().filter((c) => commits.includes(c))).toHaveLength(500);
    expect(hasNote(commits.at(-1)!)).toBe(false);
    await until(() => /11 commit\(s\) past the first 500 of the turn/.test(daemonLog()), 10_000, "the skipped commits said");

    const note = git(["notes", "--ref", "agent-trace", "show", commits[0]!]).out;
    expect(Buffer.byteLength(note)).toBeLessThanOrEqual(MAX_NOTE);
    const rec = JSON.parse(note);
    expect(valid(rec), JSON.stringify(valid.errors)).toBe(true);
    // 2,000 tool inputs of 2 KB made it too large: cut to fit, and said.
    expect(rec.metadata["dev.lazy"].trimmed.join(" ")).toContain("tool inputs");
    expect(rec.files).toHaveLength(2000);
    expect(rec.files[0].conversations[0].ranges).toEqual([{ start_line: 1, end_line: 1, content_hash: expect.stringMatching(/^sha256:/) }]);
    // Each file's range goes to the last Write call that wrote it.
    for (const k of [1, 1000, 1001, 2000]) {
      const file = rec.files.find((f: any) => f.path === `many/file-${k}.txt`);
      const url = file.conversations[0].related.find((x: any) => x.type === "tool_call").url;
      expect(url).toEndWith(`/tool/toolu_${lastWriter(k)}`);
    }
    // The turn's audit rows are linked once for the record, not in each of its 2,000 files.
    expect(rec.metadata["dev.lazy"].related.length).toBeGreaterThan(0);
    // Each conversation links its own tool call and model call, no more.
    expect(rec.files.every((f: any) => f.conversations.every((c: any) => (c.related?.length ?? 0) <= 2))).toBe(true);
  }, 900_000);

  test("rejected: the flood's records go with its branch; an accepted task's records stay", async () => {
    await p.ok(["task", "add", "Keep a file", "--code", "keep"]);
    const wt = join(p.stateDir, "worktrees", "keep");
    anthropic.answer({
      text: "Kept.",
      steps: [
        { name: "Write", input: { file_path: `${wt}/kept.txt`, content: "kept\n" } },
        { name: "Bash", input: { command: "git add kept.txt && git commit -qm kept", description: "commit" } },
      ],
    });
    await p.ok(["start", "keep"]);
    await settledAs(p, "keep");
    const kept = git(["rev-parse", "refs/heads/lazy/keep"]).out.trim();
    await until(() => hasNote(kept), 30_000, "the kept task's record");
    anthropic.answer({ text: "Keeps a file." }); // the accept summary
    await p.ok(["accept", "keep"]);
    const flood = git(["rev-list", "refs/heads/lazy/flood", "--not", "HEAD"]).out.trim().split("\n");
    const init = git(["rev-list", "--max-parents=0", "HEAD"]).out.trim();

    await p.ok(["reject", "flood", "--yes"]);
    await until(() => !noted().some((c) => flood.includes(c)), 30_000, "the rejected task's records dropped");
    expect(noted().sort()).toEqual([init, kept].sort());
    expect(git(["notes", "--ref", "agent-trace", "show", init]).out.trim()).toBe("person's");
    expect(JSON.parse(git(["notes", "--ref", "agent-trace", "show", kept]).out).vcs.revision).toBe(kept);
    expect(git(["log", "-1", "--format=%an %s", "refs/notes/agent-trace"]).out).toStartWith("lazy ");
    expect((await p.ok(["trace", "kept.txt:1"])).stdout).toContain("kept.txt:1 was written by an agent task:");
  }, 600_000);
});

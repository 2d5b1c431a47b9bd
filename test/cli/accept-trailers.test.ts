/**
 * `lazy accept` says on its merge commit where the work came from ([provenance] trailers):
 * Lazy-Task, Lazy-Model (the model that served the task's requests, from its usage counters),
 * Lazy-Candidate for a best-of-N candidate, Co-Authored-By (the harness's identity); `trailers =
 * []` adds none. The agent's commits, and the Agent Trace notes on them, survive the merge.
 * Tasks made by hand (no container); the requests are the task's own, through the real proxy on
 * the task's grant.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { upstream } from "../helpers/fixtures";
import { handMadeGroup, handMadeTask, markDone } from "../helpers/groups";
import { cleanupAll, Project, sh } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

let mock: Mock.MockProvider;
let p: Project;
const toml = (extra = "") => `${upstream(mock.url)}\n[profiles.a]\nharness = "claude"\n${extra}`;

/** A model request on the task's own grant (as its agent makes them), asking for `model`. */
async function asTask(code: string, model: string): Promise<void> {
  const g = await p.grant({ role: "agent", task: code });
  const res = await fetch(`${g.proxyUrl}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": g.placeholder },
    body: JSON.stringify({ model, max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
  });
  await res.arrayBuffer();
  expect(res.status).toBe(200);
}

const trailers = (commit = "main") => sh(p.root, `git log -1 '--format=%(trailers)' ${commit}`).out.trim();

beforeAll(async () => {
  mock = await Mock.anthropic();
  p = new Project({ toml: toml() });
  sh(p.root, "printf 'x\\n' > f.txt && git add f.txt && git -c user.name=Dev -c user.email=dev@example.com commit -qm base");
  await p.setCredential("anthropic", `sk-ant-api03-TRAILERS-${"t".repeat(68)}AA`);
}, 120_000);

afterAll(() => cleanupAll(mock));

describe("accept's trailers", () => {
  test("the merge carries Lazy-Task, Lazy-Model and Co-Authored-By from lazy's records; the agent's commits and their notes stay", async () => {
    const [c1, c2] = await handMadeTask(p, "tr", [
      { files: { "a.txt": "one\n" }, message: "add a\n\nCo-Authored-By: Someone <s@example.com>\n" },
      { files: { "b.txt": "two\n" }, message: "add b\n" },
    ]);
    await asTask("tr", "claude-sonnet-4-5-20250929");
    await asTask("tr", "claude-sonnet-4-5-20250929");
    await asTask("tr", "claude-haiku-4-5-20251001");
    // Agent Trace records as the turn's end writes them (refs/notes/agent-trace, one per commit).
    for (const c of [c1, c2]) sh(p.root, `git notes --ref agent-trace add -m '{"version":"0.1","vcs":{"revision":"${c}"}}' ${c}`);
    await markDone(p, ["tr"]);
    await p.ok(["accept", "tr"]);
    const t = trailers();
    expect(t.split("\n")).toEqual([
      "Lazy-Task: tr",
      "Lazy-Model: claude-sonnet-4-5-20250929",
      "Lazy-Model: claude-haiku-4-5-20251001",
      "Co-Authored-By: Claude <noreply@anthropic.com>",
    ]);
    // The merge keeps the agent's commits as they were: their ids, messages (their own trailers) and notes.
    expect(sh(p.root, `git merge-base --is-ancestor ${c1} main && git merge-base --is-ancestor ${c2} main`).code).toBe(0);
    expect(trailers(c1)).toBe("Co-Authored-By: Someone <s@example.com>");
    for (const c of [c1, c2]) expect(sh(p.root, `git notes --ref agent-trace show ${c}`).out).toContain(`"revision":"${c}"`);
    // Who accepted it, as the daemon recorded it.
    const shown = await p.json(["task", "show", "tr"]);
    const moved = shown.events.find((e: any) => e.kind === "status" && e.data.to === "accepted");
    expect(moved.data.by).toEqual({ user: sh(p.root, "id -un").out.trim(), uid: process.getuid!(), via: "cli" });
    expect((await p.ok(["logs", "tr"])).stdout).toContain(`-- done → accepted by ${sh(p.root, "id -un").out.trim()} (cli)`);
  });

  test("a best-of-N candidate gets Lazy-Candidate: its place in its group", async () => {
    const codes = await handMadeGroup(p, "grp", [{ "g.txt": "first" }, { "g.txt": "second" }]);
    await p.ok(["accept", codes[1]!]);
    const t = trailers().split("\n");
    expect(t).toContain(`Lazy-Task: ${codes[1]}`);
    expect(t).toContain("Lazy-Candidate: 2/2 of grp");
    expect(t).toContain("Co-Authored-By: Claude <noreply@anthropic.com>");
  });

  test("a reject from the dashboard is recorded as the dashboard's, by the daemon's user", async () => {
    await handMadeTask(p, "dash", [{ files: { "d.txt": "d\n" }, message: "d\n" }]);
    await markDone(p, ["dash"]);
    await p.ok(["task", "list"]);
    const base = `http://127.0.0.1:${p.runtime()!.api.port}`;
    const s = await fetch(`${base}/api/session`, {
      method: "POST",
      headers: { authorization: `Bearer ${p.token()}`, "content-type": "application/json", origin: base },
      body: "{}",
    });
    const cookie = (s.headers.get("set-cookie") ?? "").split(";")[0]!;
    const r = await fetch(`${base}/api/tasks/dash/reject`, {
      method: "POST",
      headers: { cookie, origin: base, "content-type": "application/json" },
      body: "{}",
    });
    expect(r.status).toBe(200);
    const shown = await p.json(["task", "show", "dash"]);
    const moved = shown.events.find((e: any) => e.kind === "status" && e.data.to === "rejected");
    expect(moved.data.by).toEqual({ user: sh(p.root, "id -un").out.trim(), uid: process.getuid!(), via: "dashboard" });
  });

  test("[provenance] trailers names which; trailers = [] adds none", async () => {
    p.writeToml(toml('\n[provenance]\ntrailers = ["Lazy-Task"]\n'));
    await handMadeTask(p, "only", [{ files: { "o.txt": "o\n" }, message: "o\n" }]);
    await markDone(p, ["only"]);
    await p.ok(["accept", "only"]);
    expect(trailers()).toBe("Lazy-Task: only");

    p.writeToml(toml("\n[provenance]\ntrailers = []\n"));
    await handMadeTask(p, "none", [{ files: { "n.txt": "n\n" }, message: "n\n" }]);
    await markDone(p, ["none"]);
    await p.ok(["accept", "none"]);
    expect(trailers()).toBe("");
    expect(sh(p.root, "git log -1 --format=%s main").out.trim()).toBe("lazy: accept none: Task none");
  });
});

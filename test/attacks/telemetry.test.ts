/**
 * Attacks on the OpenTelemetry export ([telemetry] otlp, issue 38): a hostile agent in a real
 * container (real Claude Code, the mock provider scripting its Bash tool call) puts its placeholder,
 * its MCP token, a JWT and query strings where lazy makes spans from (a model's name, an MCP tool's
 * name, URLs); it floods its turn with more model calls than a turn exports spans; an untrusted lazy.toml edit points the export at another collector while a turn runs; the
 * collector hangs or answers with a huge body. The receivers decode with the official protobuf
 * definitions (helpers/otlp.ts) and every byte they got is searched.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { anthropicProject, bash, edit, inFlight, launched, oneRequest, settledAs, teardown } from "../helpers/fixtures";
import { type Project, until } from "../helpers/lazy";
import { type Receiver, receiver, type Span } from "../helpers/otlp";
import type * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-OTLPATTACK-${"t".repeat(70)}AA`;
let anthropic: Mock.MockProvider;
let p: Project;
let rx: Receiver;
let other: Receiver;
let trusted: string;

beforeAll(async () => {
  rx = await receiver();
  other = await receiver();
  ({ anthropic, p } = await anthropicProject(KEY, {
    extra: `\n[telemetry]\notlp = "${rx.url}"\n`,
    files: (root) => {
      for (const f of ["telemetry-agent.cjs", "telemetry-flood.cjs"]) copyFileSync(join(import.meta.dir, f), join(root, f));
    },
  }));
  trusted = readFileSync(join(p.root, "lazy.toml"), "utf8");
}, 300_000);
afterAll(async () => {
  await teardown(p, anthropic);
  await rx?.close();
  await other?.close();
});

const idOf = async (code: string) => (await p.json(["task", "show", code])).task.id as string;
const turnOf = (r: Receiver, id: string) =>
  until(
    () => {
      const mine = r.spans.filter((s) => s.attributes["gen_ai.conversation.id"] === id);
      return mine.some((s) => s.attributes["gen_ai.operation.name"] === "invoke_agent") ? mine : undefined;
    },
    30_000,
    "the turn's spans at the receiver",
  );
const text = (s: Span) => `${s.name} ${JSON.stringify(s.attributes)} ${JSON.stringify(s.events)}`;

test("a hostile agent's placeholder, MCP token and query strings never reach the collector", async () => {
  anthropic.answer(bash("Done.", "node telemetry-agent.cjs && cat attack-results.json", "run the script"));
  await launched(p, "leaky", "Run the script");
  await settledAs(p, "leaky", "done");
  const id = await idOf("leaky");
  const spans = await turnOf(rx, id);
  const tokens = JSON.parse(readFileSync(join(p.stateDir, "proxy-tokens.json"), "utf8"));
  const placeholder = tokens.grants.find((g: any) => g.taskId === id && g.role === "agent")?.token as string;
  const mcp = tokens.mcpTokens.find((t: any) => t.taskId === id)?.token as string;
  expect(placeholder).toBeTruthy();
  expect(mcp).toBeTruthy();
  const all = Buffer.concat(rx.bodies).toString("latin1");
  // The JWT-shaped model name (the agent wrote it into attack-results.json): neither it nor its payload.
  const jwt = JSON.parse(readFileSync(join(p.stateDir, "worktrees", "leaky", "attack-results.json"), "utf8")).jwt as string;
  expect(jwt).toMatch(/^eyJ/);
  for (const secret of [
    placeholder,
    mcp,
    "QSECRET",
    KEY,
    Buffer.from(placeholder).toString("base64").slice(4, 40),
    jwt,
    jwt.split(".")[1]!,
  ])
    expect(all).not.toContain(secret);
  // The attempts were seen and made spans without the secret: the MCP token as a tool's name is
  // not shown, and a model named with the placeholder is not kept (in the audit either).
  const shown = spans.map(text).join("\n");
  expect(shown).toContain("execute_tool (a name lazy does not show)");
  expect(spans.filter((s) => s.attributes["gen_ai.operation.name"] === "chat").length).toBeGreaterThanOrEqual(3);
  const audit = (await p.run(["stats", "audit", "--task", "leaky", "--json"])).stdout;
  expect(audit).toContain("(a name lazy does not show)");
  for (const secret of [placeholder, mcp]) expect(audit).not.toContain(secret);
  const turn = spans.find((s) => s.attributes["gen_ai.operation.name"] === "invoke_agent")!;
  const egress = turn.events.filter((e) => e.name === "lazy.egress");
  expect(
    egress.map((e) => e.attributes),
    spans.map(text).join("\n"),
  ).toContainEqual(expect.objectContaining({ "server.address": "blocked.example", "lazy.egress.decision": "refused" }));
}, 600_000);

test("a hostile agent's flood of model calls: its turn arrives as one whole tree within the cap, and lazy daemon status says what was cut", async () => {
  anthropic.answer(bash("Flooded.", "node telemetry-flood.cjs && cat flood-results.json", "run the script"));
  await launched(p, "flood", "Run the script");
  await settledAs(p, "flood", "done");
  const id = await idOf("flood");
  const spans = await turnOf(rx, id);
  const flood = JSON.parse(readFileSync(join(p.stateDir, "worktrees", "flood", "flood-results.json"), "utf8"));
  expect(flood.ok).toBe(4300);
  // Every span of the turn came, each with its parent: the turn's span is there, none is an orphan.
  await until(
    () => (rx.spans.filter((s) => s.attributes["gen_ai.conversation.id"] === id).length >= 4096 ? true : undefined),
    30_000,
    "the turn's spans",
  );
  const mine = rx.spans.filter((s) => s.attributes["gen_ai.conversation.id"] === id);
  expect(mine.length).toBe(4096);
  const ids = new Set(mine.map((s) => s.spanId));
  expect(mine.filter((s) => s.parentSpanId !== "" && !ids.has(s.parentSpanId))).toEqual([]);
  const turn = spans.find((s) => s.attributes["gen_ai.operation.name"] === "invoke_agent")!;
  const cut = Number(turn.attributes["lazy.spans.chat_dropped"] ?? 0) + Number(turn.attributes["lazy.spans.tool_dropped"] ?? 0);
  expect(cut).toBeGreaterThan(4300 - 4096);
  const status = await p.json(["daemon", "status"]);
  expect(status.telemetry).toMatchObject({ cut, dropped: 0 });
  const shown = await p.run(["daemon", "status"]);
  expect(shown.stdout).toContain(`${cut} cut (turns past their cap of spans)`);
}, 600_000);

test("an untrusted lazy.toml edit pointing the export elsewhere is not used", async () => {
  await inFlight(p, anthropic, { code: "redir", prompt: "Say hi", reply: "hi", delayMs: 6000 });
  // While the turn runs: another process (a pull, the agent) points the export at its own collector.
  edit(p, trusted.replace(rx.url, other.url));
  const refused = await p.run(["task", "add", "Another", "--code", "next"]);
  expect(refused.code).toBe(4);
  expect(refused.stderr).toContain("lazy trust");
  await settledAs(p, "redir", "done");
  const id = await idOf("redir");
  await turnOf(rx, id);
  await Bun.sleep(3000);
  expect(other.requests).toBe(0);
  edit(p, trusted);
}, 600_000);

for (const mode of ["hang", "huge"] as const)
  test(`a collector that ${mode === "hang" ? "hangs" : "answers with 64 MiB"}: turns and requests go on at their pace`, async () => {
    rx.mode = mode;
    const pid = (await p.json(["daemon", "status"])).pid;
    try {
      anthropic.answer({ text: `ok ${mode}` });
      const before = rx.requests;
      const t0 = Date.now();
      await launched(p, `c${mode}`, "Say ok");
      await settledAs(p, `c${mode}`, "done");
      const turnMs = Date.now() - t0;
      // The export of that turn is now in flight against the collector: the proxy answers as ever.
      await until(() => rx.requests > before || undefined, 30_000, "an export to the collector");
      const times: number[] = [];
      for (let i = 0; i < 20; i++) {
        const s = performance.now();
        expect(await oneRequest(p)).toBe(200);
        times.push(performance.now() - s);
      }
      times.sort((a, b) => a - b);
      expect(times[10]!).toBeLessThan(250);
      expect(turnMs).toBeLessThan(120_000);
      // The daemon is whole (the same one, no crash), and it says what the collector does.
      const status = await p.json(["daemon", "status"]);
      expect(status.pid).toBe(pid);
      await until(
        async () => ((await p.json(["daemon", "status"])).telemetry?.failing ? true : undefined),
        30_000,
        "the export to count as failing",
      );
      const shown = await p.run(["daemon", "status"]);
      expect(shown.stdout).toContain(`Telemetry: ${rx.url}`);
      expect(shown.stdout).toContain("the collector fails");
    } finally {
      rx.mode = "ok";
    }
  }, 600_000);

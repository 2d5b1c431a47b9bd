/**
 * Attacks on the OpenTelemetry export ([telemetry] otlp, issue 38): a hostile agent in a real
 * container (real Claude Code, the mock provider scripting its Bash tool call) puts its placeholder,
 * its MCP token and query strings where lazy makes spans from (a model's name, an MCP tool's name,
 * URLs); an untrusted lazy.toml edit points the export at another collector while a turn runs; the
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
    files: (root) => copyFileSync(join(import.meta.dir, "telemetry-agent.cjs"), join(root, "telemetry-agent.cjs")),
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
  for (const secret of [placeholder, mcp, "QSECRET", KEY, Buffer.from(placeholder).toString("base64").slice(4, 40)])
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

/**
 * The daemon's side of the export (src/telemetry/index.ts `Telemetry`) on a real store and a real
 * bus, against loopback receivers decoding with the official protobuf definitions (helpers/otlp.ts):
 * the secrets are read once per turn, anything shaped like a placeholder, an MCP token or a JWT
 * is cut from the spans, and the daemon's stop sends the last turn (one it ended included) within
 * its bound, or gives it up, counted, when the collector hangs. The stop through the real binary
 * is in otlp.test.ts.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Bus } from "../../src/bus";
import { Config } from "../../src/config";
import type { AuditRow } from "../../src/proxy";
import { Placeholders } from "../../src/proxy";
import * as Store from "../../src/store";
import { Tasks } from "../../src/store";
import { Telemetry } from "../../src/telemetry";
import { auditRow } from "../helpers/audit-row";
import { type Receiver, receiver, type Span } from "../helpers/otlp";

const dir = mkdtempSync(join(tmpdir(), "lazy-telemetry-"));
const opened: Receiver[] = [];
afterAll(async () => {
  for (const r of opened) await r.close();
  rmSync(dir, { recursive: true, force: true });
});

const row = (taskId: string, at: number, more: Partial<AuditRow> = {}): AuditRow =>
  auditRow({ at, taskId, modelAsked: "claude-sonnet-4-5", modelServed: "claude-sonnet-4-5-20250929", ...more });

interface Setup {
  rx: Receiver;
  bus: Bus;
  telemetry: Telemetry;
  secretsRead: () => number;
  /** A task whose turn ran `tools` tool calls (named by `name`) and `chats` model calls, now ended. */
  turn: (o: { tools: number; chats: number; name?: (i: number) => string }) => string;
}

async function setup(o: { grants?: string[]; auditMs?: number; rows?: (taskId: string, t0: number) => AuditRow[] } = {}): Promise<Setup> {
  const rx = await receiver();
  opened.push(rx);
  const db = Store.open(join(dir, `${crypto.randomUUID()}.db`));
  const bus = new Bus();
  const config = Config.parse({ telemetry: { otlp: rx.url } });
  let reads = 0;
  const rowsOf = new Map<string, AuditRow[]>();
  const telemetry = new Telemetry({
    db,
    bus,
    audit: {
      query: async (q: { taskId?: string }) => {
        if (o.auditMs) await Bun.sleep(o.auditMs);
        return rowsOf.get(q.taskId ?? "") ?? [];
      },
    } as never,
    secrets: () => {
      reads++;
      return { version: 1, tokens: o.grants ?? [] };
    },
    config: () => config,
    log: { debug() {}, info() {}, warn() {}, error() {}, repeated() {} },
    version: "test",
  });
  telemetry.start();
  const turn: Setup["turn"] = ({ tools, chats, name }) => {
    const task = Tasks.add(db, { prompt: "do it", profile: "claude" });
    const t0 = Date.now();
    Tasks.move(db, task.id, "running", {}, t0);
    for (let i = 0; i < tools; i++) {
      Tasks.addEvent(db, task.id, "tool", { name: name?.(i) ?? "Bash", input: "ls", id: `toolu_${i}` }, t0 + 10 + i);
      Tasks.addEvent(db, task.id, "output", { text: "x", id: `toolu_${i}` }, t0 + 11 + i);
    }
    rowsOf.set(task.id, [...Array.from({ length: chats }, (_, i) => row(task.id, t0 + i)), ...(o.rows?.(task.id, t0) ?? [])]);
    Tasks.move(db, task.id, "done", {}, t0 + tools + 20);
    bus.publish({ kind: "status", taskId: task.id, from: "running", to: "done", data: {} });
    return task.id;
  };
  return { rx, bus, telemetry, secretsRead: () => reads, turn };
}

const turnAt = (rx: Receiver, id: string) => {
  const mine = rx.spans.filter((s) => s.attributes["gen_ai.conversation.id"] === id);
  return mine.some((s) => s.attributes["gen_ai.operation.name"] === "invoke_agent") ? mine : undefined;
};
async function spansOf(rx: Receiver, id: string): Promise<Span[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const got = turnAt(rx, id);
    if (got || Date.now() > deadline) return got ?? [];
    await Bun.sleep(50);
  }
}

test("a turn's secrets are read once, however many strings its spans scrub", async () => {
  const s = await setup({ grants: [Placeholders.mint("anthropic-api-key"), Placeholders.mint("generic")] });
  const id = s.turn({ tools: 200, chats: 200 });
  const spans = await spansOf(s.rx, id);
  expect(spans.length).toBe(401);
  expect(s.secretsRead()).toBe(1);
  await s.telemetry.stop();
});

test("what is shaped like a placeholder, an MCP token or a JWT is cut from every span, as is each form of a grant", async () => {
  const grant = Placeholders.mint("anthropic-api-key");
  // A Cursor session stand-in and a JWT that is no grant of this daemon (another daemon's, a real one).
  const session = Placeholders.sessionToken();
  const jwt = `${Buffer.from('{"alg":"HS256"}').toString("base64url")}.${Buffer.from('{"sub":"someone","exp":1}').toString("base64url")}.c2lnbmF0dXJlLWJ5dGVz`;
  const mcp = `lazy-mcp-${"Q".repeat(40)}`;
  const base64 = Buffer.from(grant).toString("base64");
  const names = [`Bash${jwt}`, `x${session}y`, `mcp__${mcp}`, `b64:${base64}`, `raw ${grant}`];
  const s = await setup({
    grants: [grant],
    rows: (taskId, t0) => [row(taskId, t0 + 1, { modelAsked: `m-${jwt}`, modelServed: `m-${session}` })],
  });
  const id = s.turn({ tools: names.length, chats: 1, name: (i) => names[i]! });
  const spans = await spansOf(s.rx, id);
  const tools = spans.filter((x) => x.attributes["gen_ai.operation.name"] === "execute_tool");
  expect(tools.length).toBe(names.length);
  const all = Buffer.concat(s.rx.bodies).toString("latin1");
  for (const secret of [grant, session, jwt, mcp, base64.slice(4, 60), jwt.split(".")[1]!, session.split(".")[2]!])
    expect(all).not.toContain(secret);
  // A word glued to a JWT goes with it: the shape is looked for where a run of its characters begins.
  expect(tools.map((x) => x.attributes["gen_ai.tool.name"])).toContain("[secret]");
  await s.telemetry.stop();
});

test("the daemon's stop sends the turn it ended, its spans still being made, before it returns", async () => {
  const s = await setup({ auditMs: 150 });
  // A first turn: the exporter is made and has sent.
  const first = s.turn({ tools: 3, chats: 3 });
  expect((await spansOf(s.rx, first)).length).toBe(7);
  // The stop ends a turn (lazy daemon stop: quiesce moves it to failed), then stops at once.
  const last = s.turn({ tools: 700, chats: 700 });
  await s.telemetry.stop();
  // No waiting here: what the stop sent is at the receiver as it returns.
  const got = turnAt(s.rx, last);
  expect(got?.length).toBe(1401);
  expect(s.telemetry.stats()).toMatchObject({ sent: 1408, dropped: 0, failed: 0, queued: 0 });
});

test("the daemon's stop with a collector that hangs: it returns within its bound, the spans it gave up counted", async () => {
  const s = await setup();
  s.rx.mode = "hang";
  s.turn({ tools: 600, chats: 600 });
  // The turn's spans are queued (the stop waits for them too).
  const t0 = performance.now();
  await s.telemetry.stop(1500);
  const took = performance.now() - t0;
  expect(took).toBeLessThan(10_000);
  const st = s.telemetry.stats()!;
  expect(st.sent).toBe(0);
  expect(st.queued).toBe(0);
  expect(st.dropped + st.failed).toBe(1201);
});

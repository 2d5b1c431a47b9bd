/**
 * Issue 35, finding 3: a caller with no credential erased every task's audit trail. 105,000
 * tokenless requests in 5 s, each a 401 row, pushed every real row out of the 100,000-row bound
 * (`lazy stats audit --task X` went 100 → 0). Here the same flood, on loopback against the
 * real compiled daemon, over keep-alive connections with pipelined requests: every real row of
 * the task survives, the refusals are one counted line per minute, source, reason and status
 * (`lazy stats audit`, text and --json), and `lazy watch` shows them as a line or two, not as
 * 105,000.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { connect } from "node:net";
import { anthropicHost, watching } from "../helpers/fixtures";
import { cleanupAll, type Project, until } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-FLOOD-" + "f".repeat(76) + "AA";
const REAL = 100;
const FLOOD = 105_000;
let anthropic: Mock.MockProvider;
let p: Project;

beforeAll(async () => {
  ({ anthropic, p } = await anthropicHost(KEY));
  await p.ok(["task", "add", "real work", "--code", "real"]);
});

afterAll(() => cleanupAll(anthropic));

/** One model call of the task's agent through the proxy, as its harness makes it. */
async function realCall(placeholder: string): Promise<number> {
  const res = await fetch(`${p.runtimeProxyUrl()}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": placeholder },
    body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

/**
 * `total` requests with no credential, over `conns` keep-alive connections, up to `window`
 * pipelined on each (what a prober in a container can do): the statuses answered. A connection
 * the proxy closes takes its unanswered requests back into the pool.
 */
async function flood(port: number, total: number, conns = 24, window = 64): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  const one = `POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`;
  let queued = total;
  let answered = 0;
  const connection = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const s = connect(port, "127.0.0.1");
      let outstanding = 0;
      let buf = "";
      const more = () => {
        let n = 0;
        while (outstanding + n < window && queued > 0) {
          n++;
          queued--;
        }
        outstanding += n;
        if (n) s.write(one.repeat(n));
        else if (outstanding === 0) s.end();
      };
      s.on("connect", more);
      s.on("data", (d) => {
        buf += d.toString("latin1");
        for (;;) {
          const end = buf.indexOf("\r\n\r\n");
          if (end === -1) break;
          const head = buf.slice(0, end);
          const length = /\r\ncontent-length: *(\d+)/i.exec(head);
          if (!length) return reject(new Error(`an answer without a length: ${head}`));
          const whole = end + 4 + Number(length[1]);
          if (buf.length < whole) break;
          const status = Number(head.slice(9, 12));
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          buf = buf.slice(whole);
          outstanding--;
          answered++;
        }
        more();
      });
      s.on("error", () => {});
      s.on("close", () => {
        queued += outstanding;
        outstanding = 0;
        resolve(queued > 0 ? connection() : undefined);
      });
    });
  await Promise.all(Array.from({ length: conns }, connection));
  expect(answered).toBe(total);
  return statuses;
}

test(`${FLOOD.toLocaleString("en-US")} tokenless 401s leave the task's audit rows intact and show as counted lines`, async () => {
  const g = await p.grant({ role: "agent", task: "real" });
  // The task's real work: REAL attributed model calls, each a row.
  for (let i = 0; i < REAL; i += 10) {
    const got = await Promise.all(Array.from({ length: 10 }, () => realCall(g.placeholder)));
    expect(got).toEqual(Array(10).fill(200));
  }
  const before = (await p.json(["stats", "audit", "--task", "real", "--limit", "1000"])).rows;
  expect(before).toHaveLength(REAL);
  expect(before.every((r: any) => r.taskRef === "real" && r.status === 200 && r.usage)).toBe(true);

  const watch = watching(p, []);
  try {
    await Bun.sleep(1_000); // the text watch prints nothing until something happens

    // The attack: 105,000 requests with no credential, as fast as loopback takes them.
    const statuses = await flood(Number(new URL(p.runtimeProxyUrl()).port), FLOOD);
    expect(Object.fromEntries(statuses)).toEqual({ 401: FLOOD });

    // Every real row is still there, as it was.
    const after = (await p.json(["stats", "audit", "--task", "real", "--limit", "1000"])).rows;
    expect(after.map((r: any) => r.id)).toEqual(before.map((r: any) => r.id));
    expect(after.every((r: any) => r.taskRef === "real" && r.status === 200)).toBe(true);
    // The trail as a whole holds no row for the refusals: the real rows are its newest.
    const all = (await p.json(["stats", "audit", "--limit", "10000"])).rows;
    expect(all.filter((r: any) => r.status === 401)).toEqual([]);

    // The refusals, counted: per minute, source, reason and status, summing to the flood.
    const refused = (await p.json(["stats", "audit"])).refused as any[];
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(refused.length).toBeLessThanOrEqual(2); // seconds of flood fall in one minute, or two
    for (const l of refused) expect(l).toMatchObject({ source: "127.0.0.1", reason: "no credential", status: 401, taskRef: "" });
    expect(refused.reduce((n, l) => n + l.count, 0)).toBe(FLOOD);
    // As a person reads them.
    const text = (await p.ok(["stats", "audit"])).stdout;
    const lines = text.split("\n").filter((l) => / refused [\d,]+ requests from 127\.0\.0\.1: no credential \(401\)$/.test(l));
    expect(lines).toHaveLength(refused.length);
    for (const [i, l] of lines.entries())
      expect(l).toStartWith(
        `${new Date(refused[i].minute).toISOString().slice(11, 16)} refused ${refused[i].count.toLocaleString("en-US")} requests`,
      );
    // A task's view is its own rows: the tokenless refusals named no task.
    expect((await p.json(["stats", "audit", "--task", "real"])).refused).toEqual([]);

    // lazy watch: the first refusal of each minute as a net> line, then the minute's count
    // once the minute is over, never a line per refusal.
    const counted = await until(
      () => {
        const c = watch.lines.filter((l) => / net> \d\d:\d\d refused [\d,]+ requests from 127\.0\.0\.1: no credential \(401\)$/.test(l));
        const sum = c.reduce((n, l) => n + Number(/refused ([\d,]+) requests/.exec(l)![1]!.replace(/,/g, "")), 0);
        return sum === FLOOD ? c : undefined;
      },
      90_000,
      "the watch's counted lines for the flood",
    );
    expect(counted.length).toBe(refused.length);
    const firsts = watch.lines.filter((l) => l.includes("net>") && l.includes(" 401 "));
    expect(firsts.length).toBe(refused.length);
    expect(firsts[0]).toMatch(/ {2}- {2}net> - - POST \/v1\/messages 401 0ms {2}\(no credential\)$/);
    expect(watch.lines.length).toBeLessThan(10);
  } finally {
    watch.stop();
  }
}, 300_000);

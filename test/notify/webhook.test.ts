/**
 * The webhook channel and the notification's words, in process against real HTTP servers on
 * 127.0.0.1 (port 0): how often a failing receiver is tried, that a log line never carries the
 * URL's path or query (where webhook secrets live), that a slow or redirecting receiver cannot
 * hold or redirect a send, and that a dead one cannot grow the queue without bound. The waits
 * are shortened here; the daemon's are 1 s and 2 s (test/notify/turns.test.ts sees them).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { desktopArgv as argv, BACKOFF_MS, originOf, TIMEOUT_MS, Webhook } from "../../src/notify";
import type { Logger } from "../../src/util/log";
import { until } from "../helpers/lazy";

const SECRET = "T0KEN-in-the-path-9f8e7d";
const QSECRET = "q-secret-1a2b3c";

function logger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const at = (level: string) => (m: string) => void lines.push(`${level} ${m}`);
  return { lines, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), repeated: (level, _key, m) => at(level)(m) };
}

type Hit = { at: number; path: string; headers: Headers; body: string };
const servers: ReturnType<typeof Bun.serve>[] = [];
function receiver(answer: (n: number) => Response | Promise<Response>) {
  const hits: Hit[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      hits.push({
        at: Date.now(),
        path: new URL(req.url).pathname + new URL(req.url).search,
        headers: req.headers,
        body: await req.text(),
      });
      return answer(hits.length);
    },
  });
  servers.push(server);
  return { hits, url: `http://127.0.0.1:${server.port}/hooks/${SECRET}?token=${QSECRET}`, origin: `http://127.0.0.1:${server.port}` };
}
afterEach(() => {
  for (const s of servers.splice(0)) s.stop(true);
});

const noSecret = (lines: string[]) => {
  for (const l of lines) {
    expect(l).not.toContain(SECRET);
    expect(l).not.toContain(QSECRET);
  }
};

describe("the webhook", () => {
  test("the daemon's schedule: 10 s a try, three tries, 1 s then 2 s apart", () => {
    expect(TIMEOUT_MS).toBe(10_000);
    expect(BACKOFF_MS).toEqual([1000, 2000]);
  });

  test("a receiver answering 500 is tried 3 times, backing off, then one warning naming only its origin", async () => {
    const r = receiver(() => new Response("down", { status: 500 }));
    const log = logger();
    const w = new Webhook({ log, userAgent: "lazy/test", backoffMs: [50, 100] });
    w.send(r.url, JSON.stringify({ event: "done" }), "done of fix-login");
    expect(r.hits).toHaveLength(0); // send never waits for the receiver: back before the receiver heard anything
    await w.idle();
    expect(r.hits).toHaveLength(3);
    const gaps = r.hits.slice(1).map((h, i) => h.at - r.hits[i]!.at);
    expect(gaps[0]!).toBeGreaterThanOrEqual(45);
    expect(gaps[1]!).toBeGreaterThanOrEqual(95);
    for (const h of r.hits) {
      expect(h.headers.get("content-type")).toBe("application/json");
      expect(h.headers.get("user-agent")).toBe("lazy/test");
      expect(h.body).toBe('{"event":"done"}');
    }
    const warns = log.lines.filter((l) => l.startsWith("warn "));
    expect(warns).toEqual([
      `warn webhook ${r.origin} failed 3 times (last: HTTP 500); the done of fix-login notification was dropped. Check [notify] webhook in lazy.toml and that the receiver answers 2xx.`,
    ]);
    noSecret(log.lines);
  });

  test("a receiver that recovers gets the notification once, and no warning is logged", async () => {
    const r = receiver((n) => new Response(null, { status: n < 3 ? 503 : 204 }));
    const log = logger();
    const w = new Webhook({ log, userAgent: "lazy/test", backoffMs: [10, 10, 10] });
    w.send(r.url, "{}", "waiting of a");
    await w.idle();
    expect(r.hits).toHaveLength(3);
    expect(log.lines.filter((l) => l.startsWith("warn "))).toEqual([]);
    expect(log.lines).toContain(`info webhook ${r.origin}: sent the waiting of a notification on try 3`);
    noSecret(log.lines);
  });

  test("a receiver that never answers is cut at the per-try timeout", async () => {
    const r = receiver(() => new Promise<Response>(() => {}));
    const log = logger();
    const w = new Webhook({ log, userAgent: "lazy/test", timeoutMs: 150, backoffMs: [10] });
    w.send(r.url, "{}", "failed of b");
    await w.idle();
    expect(r.hits).toHaveLength(2);
    expect(log.lines.at(-1)).toContain("(last: no answer within 0.15 s)");
    noSecret(log.lines);
  });

  test("a refused connection's error is logged without the URL's path or query", async () => {
    const r = receiver(() => new Response(null));
    const url = r.url;
    for (const s of servers.splice(0)) s.stop(true); // nothing listens there now
    const log = logger();
    const w = new Webhook({ log, userAgent: "lazy/test", backoffMs: [10] });
    w.send(url, "{}", "done of c");
    await w.idle();
    const warn = log.lines.find((l) => l.startsWith("warn "));
    expect(warn).toStartWith(`warn webhook ${r.origin} failed 2 times (last: ECONNREFUSED`);
    noSecret(log.lines);
  });

  test("a redirect is not followed: the body never reaches a host the user did not name", async () => {
    const elsewhere = receiver(() => new Response(null));
    const r = receiver(() => new Response(null, { status: 307, headers: { location: elsewhere.url } }));
    const log = logger();
    const w = new Webhook({ log, userAgent: "lazy/test", backoffMs: [10] });
    w.send(r.url, '{"event":"done"}', "done of d");
    await w.idle();
    expect(r.hits).toHaveLength(2);
    expect(elsewhere.hits).toHaveLength(0);
    expect(log.lines.at(-1)).toContain("HTTP 307 (a redirect; lazy does not follow a webhook's redirects");
  });

  test("sends go one at a time in order, and a dead receiver's queue is bounded (the oldest is dropped)", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const r = receiver(async (n) => {
      if (n === 1) await gate;
      return new Response(null, { status: 200 });
    });
    const log = logger();
    const w = new Webhook({ log, userAgent: "lazy/test", backoffMs: [], maxQueue: 3 });
    for (let i = 1; i <= 6; i++) w.send(r.url, `{"n":${i}}`, `done of t${i}`);
    // 1 is being sent; 2..6 queued into 3 places: 2 and 3 are dropped. The receiver holds 1 until released.
    await until(() => r.hits.length === 1, 5_000, "the first send at the receiver");
    release();
    await w.idle();
    expect(r.hits.map((h) => JSON.parse(h.body).n)).toEqual([1, 4, 5, 6]);
    expect(log.lines.filter((l) => l.includes("dropped the oldest"))).toHaveLength(2);
    noSecret(log.lines);
  });

  test("originOf keeps scheme, host and port only", () => {
    expect(originOf("https://user:pw@hooks.example.com:8443/a/b?c=d#e")).toBe("https://hooks.example.com:8443");
    expect(originOf("not a url")).toBe("(an invalid URL)");
  });
});

describe("the desktop notification's argv", () => {
  const hostile = `-h "$(touch /tmp/pwned)" <a href="x">&</a>' & do shell script "id"`;
  test("notify-send: options end at --, the agent's markup shows as text", () => {
    const a = argv({ name: "notify-send", path: "/usr/bin/notify-send" }, "lazy: t1 failed", hostile);
    expect(a.slice(0, 3)).toEqual(["/usr/bin/notify-send", "--app-name=lazy", "--"]);
    expect(a[3]).toBe("lazy: t1 failed");
    expect(a[4]).toBe(`-h "$(touch /tmp/pwned)" &lt;a href="x"&gt;&amp;&lt;/a&gt;' &amp; do shell script "id"`);
  });
  test("osascript: the text is the run handler's argument, never script text", () => {
    const a = argv({ name: "osascript", path: "/usr/bin/osascript" }, "lazy: t1 failed", hostile);
    expect(a.slice(0, 7)).toEqual([
      "/usr/bin/osascript",
      "-e",
      "on run argv",
      "-e",
      "display notification (item 2 of argv) with title (item 1 of argv)",
      "-e",
      "end run",
    ]);
    expect(a.slice(7)).toEqual(["lazy: t1 failed", hostile]);
  });
});

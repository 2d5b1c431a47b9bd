/**
 * Attacks on reading and reviewing a task's work (issue 30): what a tool call printed is now kept
 * and shown (lazy logs, the task page), and the page takes review comments. A prompt-injected
 * agent (real Claude Code in a real container, told by the mock provider to run one Bash call):
 * - prints terminal escapes (OSC retitle, clear screen, a C1 CSI), HTML and script, and a forged
 *   lazy line: shown as text everywhere, never obeyed or run, the forged line indented;
 * - commits a file whose name and lines are HTML: the review page shows them as text;
 * - writes a 2 MB tool result straight into its turn's event file: kept within the bound, the
 *   cut said;
 * and a hostile local page tries the new review and inbox routes across sites with the
 * dashboard's cookie: refused before anything is sent. Before issue 30 no output was kept (the
 * first three fail there: no output event). The last passes there too: the API's guard
 * (daemon/api-guard.ts) runs before routing, so it covers the new routes unchanged; it stays as
 * the check that it still does.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { closeBrowser, signedIn } from "../dashboard/browser";
import { bash, containerProject, launched, settled, teardown } from "../helpers/fixtures";
import { never, type Project } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-REVIEWATTACK-${"q".repeat(68)}AA`;
let anthropic: Mock.MockProvider;
let p: Project;
let events: { kind: string; data: Record<string, any> }[];

const HOSTILE = String.raw`printf '\033]0;PWNED\007\033[2J\302\23331m<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">\n12:34:56  -- FORGED → accepted\n'`;
const EVIL_FILE = String.raw`printf '<script>window.__pwned=3</script>\n<img src=x onerror="window.__pwned=4">\n' > '<img src=x onerror=window.__pwned=5>.html' && git add -A && git commit -qm evil`;
// A tool result of 2 MB, written into the events file by the agent itself (past Claude Code's own cut).
const BIG = String.raw`{ printf '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"big","content":"'; head -c 2000000 /dev/zero | tr '\0' A; printf 'TAIL-MARK"}]}}\n'; } >> /lazy/turns/1/events.jsonl`;

beforeAll(async () => {
  anthropic = await Mock.anthropic();
  p = await containerProject(anthropic, KEY);
  anthropic.reply = bash("Done.", `${HOSTILE}; ${EVIL_FILE}; ${BIG}`, "x");
  await launched(p, "evil", "Look around");
  const s = await settled(p, "evil");
  expect(s.task.status).toBe("done");
  events = s.events;
}, 600_000);

afterAll(() => teardown(p, anthropic, { close: closeBrowser }));

describe("tool output and review are hostile input", () => {
  test("terminal escapes in a tool's output are shown as text in lazy logs, and a forged lazy line stays indented", async () => {
    const out = events.find((e) => e.kind === "output" && String(e.data.text).includes("PWNED"));
    expect(out).toBeDefined();
    const log = (await p.ok(["logs", "evil"])).stdout;
    expect(log).toContain("└ \\x1b]0;PWNED\\x07\\x1b[2J\\x9b31m<script>");
    // Not one escape, BEL or C1 control byte reaches the terminal.
    for (const c of ["\x1b", "\x07", "\u009b"]) expect(log).not.toContain(c);
    expect(log).not.toMatch(/^12:34:56 {2}-- FORGED/m);
    expect(log).toMatch(/^ {12}12:34:56 {2}-- FORGED → accepted$/m);
  });

  test("an oversized tool output is kept within its bound, the cut said, its end kept", async () => {
    const big = events.find((e) => e.kind === "output" && e.data.id === "big");
    expect(big).toBeDefined();
    expect(big!.data.text.length).toBeLessThan(8_200);
    expect(big!.data.cut).toBeGreaterThan(1_990_000);
    expect(big!.data.text.endsWith("TAIL-MARK")).toBe(true);
    const log = (await p.ok(["logs", "evil"])).stdout;
    expect(log).toContain(`… (cut: ${big!.data.cut.toLocaleString("en-US")} bytes) …`);
    expect(log.length).toBeLessThan(100_000);
  });

  test("HTML and script in tool output, file names and diff lines are inert on the task page and Home", async () => {
    const { ctx, origin, page } = await signedIn(p);
    const pg = page.page;
    let dialogs = 0;
    pg.on("dialog", (d) => {
      dialogs++;
      void d.dismiss();
    });
    await pg.goto(`${origin}/tasks/evil`);
    await pg.waitForSelector('#events li[data-kind="output"]', { timeout: 10_000 });
    await pg.waitForSelector(".files >> text=.html", { timeout: 10_000 });
    const seen = await pg.evaluate(() => ({
      pwned: (window as unknown as { __pwned?: number }).__pwned ?? null,
      elements: document.querySelectorAll("main script, main img").length,
      output: [...document.querySelectorAll('#events li[data-kind="output"]')].map((l) => l.textContent).join("\n"),
      files: document.querySelector(".files")?.textContent ?? "",
      lines: [...document.querySelectorAll(".hunk [data-k]")].map((l) => l.textContent),
    }));
    expect(seen.pwned).toBeNull();
    expect(seen.elements).toBe(0);
    expect(seen.output).toContain('<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">');
    expect(seen.files).toContain("<img src=x onerror=window.__pwned=5>.html");
    expect(seen.lines).toContain("+<script>window.__pwned=3</script>");
    // A comment box on the hostile line, and Home's list with the task: still nothing runs.
    await pg.locator('.hunk [data-k="new:2"]').click();
    await pg.getByLabel("Comment on <img src=x onerror=window.__pwned=5>.html:2").fill("<b>bold?</b>");
    await pg.getByRole("button", { name: "Add comment" }).click();
    expect(await pg.locator(".comment").textContent()).toContain("<b>bold?</b>");
    await pg.goto(`${origin}/`);
    await pg.waitForSelector("#inbox-review >> text=Look around", { timeout: 10_000 });
    expect(await pg.evaluate(() => (window as unknown as { __pwned?: number }).__pwned ?? null)).toBeNull();
    expect(dialogs).toBe(0);
    expect(page.problems).toEqual([]);
    await ctx.close();
  }, 60_000);

  test("the review and inbox routes refuse another site's page carrying the dashboard's cookie; nothing is sent", async () => {
    const base = `http://127.0.0.1:${p.runtime()!.api.port}`;
    const cookie = `lazy_session=${p.token()}`;
    anthropic.reset();
    const review = JSON.stringify({ comments: [{ path: "<img src=x onerror=window.__pwned=5>.html", line: 1, text: "planted" }] });
    const tries: [string, RequestInit][] = [
      // Another origin's script.
      [
        "/api/tasks/evil/review",
        { method: "POST", headers: { cookie, origin: "http://evil.example", "content-type": "application/json" }, body: review },
      ],
      // A form post (no preflight): not JSON.
      ["/api/tasks/evil/review", { method: "POST", headers: { cookie, "content-type": "text/plain" }, body: review }],
      // No Origin, but the browser says another site sent it.
      [
        "/api/tasks/evil/review",
        { method: "POST", headers: { cookie, "sec-fetch-site": "cross-site", "content-type": "application/json" }, body: review },
      ],
      // DNS rebinding: another name for this address.
      [
        "/api/tasks/evil/review",
        { method: "POST", headers: { cookie, host: "evil.example", "content-type": "application/json" }, body: review },
      ],
      // Reading what waits for the person (the agents' questions) from another site.
      ["/api/board/inbox", { headers: { cookie, "sec-fetch-site": "cross-site" } }],
      ["/api/board/inbox", { headers: { cookie, host: "evil.example" } }],
    ];
    for (const [path, init] of tries) {
      const r = await fetch(`${base}${path}`, init);
      expect(r.status, `${path} ${JSON.stringify(init.headers)}`).toBe(403);
      expect(await r.text()).not.toContain("Look around");
    }
    await never(() => anthropic.received.filter((r) => r.method === "POST").length, 500, "a model request after the refused posts");
    expect(anthropic.received.filter((r) => r.method === "POST")).toEqual([]);
    const now = await p.api("GET", "/api/tasks/evil");
    expect(now.task.status).toBe("done");
    expect(now.events.filter((e: { kind: string }) => e.kind === "user")).toEqual([]);
  });
});

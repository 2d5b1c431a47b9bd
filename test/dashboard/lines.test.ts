/**
 * The dashboard prints events as the CLI does: its client's port of cli/lines.ts gives the same
 * text for every event kind and watch item (the client cannot import the CLI's module).
 */
import { describe, expect, test } from "bun:test";
import * as Cli from "../../src/cli/lines";
import * as Page from "../../src/dashboard/client/lines";

const at = "2026-12-04T10:11:12.000Z";
const events = [
  { kind: "message", data: { text: "I fixed it." } },
  { kind: "user", data: { text: "go on" } },
  { kind: "tool", data: { name: "Bash", input: "ls -la" } },
  { kind: "result", data: { ok: true, text: "done" } },
  { kind: "result", data: { ok: false, text: "exit 1" } },
  { kind: "usage", data: { input: 1, output: 2, cacheRead: 3, cacheWrite: 4 } },
  { kind: "status", data: { from: "running", to: "failed", error: "boom" } },
  { kind: "status", data: { from: "running", to: "done", result: "ok" } },
  {
    kind: "status",
    data: { from: "queued", to: "waiting", reason: "usage_pause", credential: "anthropic", detail: "5h at 95 %", resetsAt: at },
  },
  { kind: "held", data: { credential: "anthropic", detail: "5h at 95 %", resetsAt: at } },
  { kind: "refused", data: { reason: "a link" } },
  { kind: "stop", data: { by: "user" } },
  { kind: "summary", data: { commits: ["abc add x", "def add y"], branch: "lazy/x" } },
  { kind: "setup", data: { code: 0 } },
];

describe("event lines", () => {
  test("every kind reads the same on the page as in lazy logs and lazy watch", () => {
    for (const e of events) {
      expect(Page.line({ at, ...e })).toBe(Cli.line({ at, ...e }));
      const item = { type: "event" as const, at, id: 1, task: { id: "deadbeef00", code: null }, ...e };
      expect(Page.watchLine(item)).toBe(Cli.watchLine(item));
    }
    const net = {
      type: "net" as const,
      at,
      task: { id: "deadbeef00", code: "fix" },
      role: "agent",
      profile: "claude",
      credential: "anthropic",
      method: "POST",
      path: "/v1/messages",
      status: 429,
      durationMs: 12,
      input: 5,
      output: 6,
      refused: null,
      note: "rate limited",
    };
    expect(Page.watchLine(net)).toBe(Cli.watchLine(net));
    expect(Page.watchLine({ ...net, refused: "grant gone" })).toBe(Cli.watchLine({ ...net, refused: "grant gone" }));
    const dropped = { type: "dropped" as const, at, count: 3 };
    expect(Page.watchLine(dropped)).toBe(Cli.watchLine(dropped));
  });
});

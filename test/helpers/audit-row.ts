/** An audit row of one model call through the proxy, made up for a test: an agent's Messages call answered 200. `over` says what differs. */
import type { AuditRow } from "../../src/proxy";

export const auditRow = (over: Partial<AuditRow> = {}): AuditRow => ({
  at: Date.now(),
  taskId: "t1",
  taskRef: "demo",
  role: "agent",
  profile: "claude",
  credential: "anthropic",
  upstream: "https://api.anthropic.com",
  method: "POST",
  path: "/v1/messages",
  status: 200,
  durationMs: 20,
  ttfbMs: 10,
  bytesIn: 10,
  bytesOut: 10,
  usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 },
  retries: 0,
  note: null,
  hop: 0,
  lazyInMs: 0.1,
  lazyOutMs: 0.1,
  ...over,
});

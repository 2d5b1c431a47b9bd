/**
 * The patterns that cut secrets and URL queries out of what lazy keeps or sends (provenance's
 * records, lazy export's bundle, telemetry's spans) against text an agent shaped to make them
 * slow: megabytes of "eyJ" (a JWT's start, never a dot), of "a://" (a scheme, never a "?"),
 * of prefixes lazy's placeholders start with. Each such text used to be walked again from every
 * start: 300 KB of "eyJ" as a tool name took 8.7 s of the daemon's one thread, 240 KB of "a://"
 * in a diff 9.2 s, and a few megabytes (what an events line may hold) would take minutes. Each
 * must now finish (the test's own timeout is the bound: a thousand times what a linear pass
 * takes here) and still cut what it must.
 */
import { expect, test } from "bun:test";
import { Redactor } from "../../src/export";
import { cutQueries, inert } from "../../src/provenance";
import { Placeholders } from "../../src/proxy";
import { matcherOf, scrubWith, turnSpans } from "../../src/telemetry";

const MB = 4_000_000;
const fill = (unit: string) => unit.repeat(Math.ceil(MB / unit.length));
const HOSTILE = ["eyJ", "a://", "eyJa.", "lazy-", "key_lazy_", "sk-ant-api03-lazy-x", "http://x/", "a.", "x://?"].map(fill);
const JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0YXNrIn0.c2lnbmF0dXJlLXNpZ25hdHVyZQ";
const PLACEHOLDER = `sk-ant-api03-lazy-${"Q".repeat(40)}`;
const BOUND = 60_000;

test(
  "the shapes and the URL queries are found in one pass over hostile megabytes, and still cut",
  () => {
    for (const text of HOSTILE) {
      text.replace(Placeholders.IN_TEXT, "[s]");
      cutQueries(text, "?…");
    }
    const tail = ` then ${JWT} and ${PLACEHOLDER} and https://h.example/p?token=abc`;
    for (const text of HOSTILE) {
      const out = cutQueries((text + tail).replace(Placeholders.IN_TEXT, "[s]"), "?…").text;
      expect(out.endsWith(" then [s] and [s] and https://h.example/p?…")).toBe(true);
    }
  },
  BOUND,
);

test(
  "an evidence bundle's redaction of a hostile diff finishes and cuts the task's secret in every form",
  () => {
    const secret = `lazy-mcp-${"m".repeat(39)}`; // 48 bytes: its base64 has no partial group
    const r = new Redactor([secret]);
    for (const text of HOSTILE) {
      const s = r.scrub(`${text}\n${Buffer.from(secret).toString("base64")} ${JWT}\nfetch("https://h/p?k=v")`);
      expect(s.text.endsWith(`\n[redacted] [redacted]\nfetch("https://h/p?[query removed]")`)).toBe(true);
      expect(s.count).toBeGreaterThanOrEqual(3);
    }
  },
  BOUND,
);

test(
  "a provenance record's text and a turn's spans are cut before the patterns run",
  () => {
    for (const text of HOSTILE) expect(inert(text + PLACEHOLDER, { secrets: [] }).length).toBeLessThan(4_100);
    const scrub = scrubWith(matcherOf([PLACEHOLDER]));
    const T0 = Date.parse("2026-12-07T00:00:00Z");
    const plan = turnSpans({
      taskId: "t1",
      taskRef: "demo",
      turn: 1,
      harness: "claude",
      wire: "anthropic",
      start: T0,
      end: T0 + 5000,
      to: "done",
      events: HOSTILE.map((name, i) => ({
        id: i + 1,
        taskId: "t1",
        at: new Date(T0 + 100 + i).toISOString(),
        kind: "tool",
        data: { name, id: `toolu_${i}` },
      })),
      rows: [],
      scrub,
    });
    const text = JSON.stringify(plan);
    expect(text).not.toContain(PLACEHOLDER);
    expect(text.length).toBeLessThan(200_000); // each name cut to its bound, not megabytes
  },
  BOUND,
);

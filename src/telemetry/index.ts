/**
 * OpenTelemetry export of what agents do (`[telemetry] otlp` in lazy.toml, off when absent):
 * when a turn ends, its spans (spans.ts: invoke_agent → chat → execute_tool, egress decisions as
 * events, GenAI conventions) are made from what lazy already recorded — the turn's events in the
 * store and the proxy's audit rows — and handed to the exporter (export.ts: OTLP/HTTP protobuf
 * through the OpenTelemetry JS SDK, a bounded queue, one warning while the collector is down).
 * All of it on the daemon's main thread after the turn: nothing on the proxy's request path.
 *
 * The URL is lazy.toml's, so it needs `lazy trust` like any key that sends data somewhere
 * (config/trust.ts): an untrusted edit leaves the last trusted config, and its URL, in force.
 */
import type { Database } from "bun:sqlite";
import type { Bus } from "../bus";
import type { Config } from "../config";
import { resolveProfile } from "../config";
import { formsPattern } from "../egress";
import { type ModelProxy, Placeholders } from "../proxy";
import { Runs, Tasks } from "../store";
import type { Logger } from "../util/log";
import type { Exporter, ExportStats } from "./export";
import { turnSpans } from "./spans";
import { within } from "./within";

export { type SpanPlan, turnSpans } from "./spans";

/** How long the daemon's stop gives the spans still queued (and a turn's being made) to reach the collector. */
export const STOP_MS = 2000;

/** What a turn's strings are scrubbed of: every form of every secret given out, as one matcher. */
export interface Matcher {
  /** Each form of each secret (as is, base64 at each offset, hex, reversed, URL-encoded: egress formsPattern), longest first, in one RegExp. */
  forms: RegExp | null;
  shortest: number;
}

/** The matcher of these secrets (made once per grants version: one RegExp of every form, egress's formsPattern). */
export function matcherOf(tokens: readonly string[]): Matcher {
  const p = formsPattern(tokens);
  return { forms: p?.pattern ?? null, shortest: p?.shortest ?? Number.POSITIVE_INFINITY };
}

/** A string cut of the matcher's secrets and of anything shaped like a placeholder, an MCP token or a JWT (proxy/identity IN_TEXT). */
export const scrubWith =
  (m: Matcher) =>
  (s: string): string => {
    let out = s.includes("lazy") || s.includes("eyJ") ? s.replace(Placeholders.IN_TEXT, "[secret]") : s;
    // Most strings (tool and model names) are shorter than any form of a secret: nothing to look for.
    if (m.forms && out.length >= m.shortest) out = out.replace(m.forms, "[secret]");
    return out;
  };

export interface TelemetryDeps {
  db: Database;
  bus: Bus;
  audit: Pick<ModelProxy["audit"], "query">;
  /** Every secret lazy gave out (placeholders, MCP tokens): none reaches a span. */
  secrets: () => { version: number; tokens: readonly string[] };
  config: () => Config;
  log: Logger;
  version: string;
}

export class Telemetry {
  private exporter: Exporter | undefined;
  private making: Promise<Exporter | undefined> | undefined;
  private unsubscribe: (() => void) | undefined;
  private matcher: { version: number; m: Matcher } | undefined;
  /** Turns whose spans are being made: the daemon's stop waits for them (bounded). */
  private pending = new Set<Promise<void>>();

  constructor(private d: TelemetryDeps) {}

  start(): void {
    this.unsubscribe = this.d.bus.subscribe((c) => {
      if (c.kind === "status" && c.from === "running" && c.to !== "running") {
        const at = Date.now();
        // After this tick: the bus's publisher (the turn's end) is not held up by it.
        const made = new Promise<void>((resolve) =>
          setTimeout(
            () =>
              void this.turnEnded(c.taskId, c.to, at)
                .catch((e) => this.d.log.warn(`telemetry: ${(e as Error).message}`))
                .finally(resolve),
            0,
          ),
        );
        this.pending.add(made);
        void made.then(() => this.pending.delete(made));
      }
    });
  }

  /** What the exporter did so far (null while off). */
  stats(): (ExportStats & { url: string }) | null {
    return this.exporter ? { url: this.exporter.url, ...this.exporter.stats } : null;
  }

  /** The exporter for the configured URL, made (or remade for a new URL) when needed; undefined while off. */
  private async current(): Promise<Exporter | undefined> {
    const url = this.d.config().telemetry.otlp;
    if (this.exporter?.url === url) return this.exporter;
    if (this.making) {
      const e = await this.making;
      if (e?.url === url) return e;
    }
    const old = this.exporter;
    this.exporter = undefined;
    if (old) void old.stop();
    if (!url) return undefined;
    this.making = (async () => {
      // Loaded only when a project turns telemetry on: the SDK stays out of every other start.
      const { Exporter } = await import("./export");
      const e = new Exporter(url, this.d.version, (failing) =>
        failing === null
          ? this.d.log.info(`telemetry: ${url} takes spans again`)
          : this.d.log.warn(
              `telemetry: spans could not be sent to ${url} (${failing}); lazy keeps at most the newest few thousand and drops the oldest (counted) until it answers. Is the collector running? Check [telemetry] otlp in lazy.toml.`,
            ),
      );
      this.exporter = e;
      this.d.log.info(`telemetry: spans go to ${url} (OTLP/HTTP)`);
      return e;
    })();
    try {
      return await this.making;
    } finally {
      this.making = undefined;
    }
  }

  /** A turn's scrub: the secrets read once (secrets() copies every grant), the matcher remade only when the grants changed. */
  private scrubber(): (s: string) => string {
    const sec = this.d.secrets();
    if (this.matcher?.version !== sec.version) this.matcher = { version: sec.version, m: matcherOf(sec.tokens) };
    return scrubWith(this.matcher.m);
  }

  /** A turn ended: its spans go out (when telemetry is on). */
  async turnEnded(taskId: string, to: string, end: number): Promise<void> {
    const exporter = await this.current();
    if (!exporter) return;
    const task = Tasks.byId(this.d.db, taskId);
    if (!task) return;
    const events = Tasks.turnEvents(this.d.db, taskId);
    const began = events.find((e) => e.kind === "status");
    const start = began ? Date.parse(began.at) : end;
    const rows = await this.d.audit.query({ taskId, since: start - 1000, limit: 5000 });
    let harness = task.profile;
    let wire = "anthropic";
    try {
      const p = resolveProfile(this.d.config(), task.profile);
      harness = p.harness;
      wire = p.wire;
    } catch {}
    const plan = turnSpans({
      taskId,
      taskRef: task.code ?? task.id,
      turn: Runs.get(this.d.db, taskId).turn,
      harness,
      wire,
      start,
      end,
      to,
      events,
      rows,
      scrub: this.scrubber(),
    });
    exporter.add(plan);
  }

  /**
   * The daemon's stop: a turn whose spans are being made (one the stop itself ended) is awaited,
   * and what is queued is sent, all within `ms`; what could not go by then is counted dropped.
   */
  async stop(ms = STOP_MS): Promise<void> {
    this.unsubscribe?.();
    const until = Date.now() + ms;
    await within(Promise.all([...this.pending]), ms);
    const e = this.exporter;
    if (!e) return;
    const lost = () => e.stats.dropped + e.stats.failed;
    const before = lost();
    await e.flush(until - Date.now());
    const gaveUp = lost() - before;
    if (gaveUp)
      this.d.log.warn(
        `telemetry: stopping, ${gaveUp} spans did not reach ${e.url} within ${ms / 1000} s and are dropped (the collector did not take them in time). Is it running? Check [telemetry] otlp in lazy.toml.`,
      );
    await within(e.stop(), until - Date.now());
  }
}

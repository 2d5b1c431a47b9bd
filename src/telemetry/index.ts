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
import { formsOf } from "../egress";
import { type ModelProxy, SECRET_SHAPE } from "../proxy";
import { Runs, Tasks } from "../store";
import type { Logger } from "../util/log";
import type { Exporter, ExportStats } from "./export";
import { turnSpans } from "./spans";

export { type SpanPlan, turnSpans } from "./spans";

/** Placeholders and MCP tokens by their shape (proxy/identity), every one in a text. */
const SHAPED = new RegExp(SECRET_SHAPE.source, "g");

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
  private scrubAt: { version: number; forms: string[]; shortest: number } | undefined;

  constructor(private d: TelemetryDeps) {}

  start(): void {
    this.unsubscribe = this.d.bus.subscribe((c) => {
      if (c.kind === "status" && c.from === "running" && c.to !== "running") {
        const at = Date.now();
        // After this tick: the bus's publisher (the turn's end) is not held up by it.
        setTimeout(() => void this.turnEnded(c.taskId, c.to, at).catch((e) => this.d.log.warn(`telemetry: ${(e as Error).message}`)), 0);
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

  private scrub = (s: string): string => {
    const sec = this.d.secrets();
    if (this.scrubAt?.version !== sec.version) {
      const forms = sec.tokens.flatMap((t) => formsOf(t).map((f) => f.text));
      this.scrubAt = { version: sec.version, forms, shortest: Math.min(...forms.map((f) => f.length)) };
    }
    let out = s.includes("lazy") ? s.replace(SHAPED, "[secret]") : s;
    // Most strings (tool and model names) are shorter than any form of a secret: nothing to look for.
    if (out.length < this.scrubAt.shortest) return out;
    for (const f of this.scrubAt.forms) if (out.includes(f)) out = out.split(f).join("[secret]");
    return out;
  };

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
      scrub: this.scrub,
    });
    exporter.add(plan);
  }

  /** The daemon's stop: what is queued gets one bounded try. */
  async stop(): Promise<void> {
    this.unsubscribe?.();
    const e = this.exporter;
    if (!e) return;
    await Promise.race([e.flush(), Bun.sleep(2000)]);
    await Promise.race([e.stop(), Bun.sleep(1000)]);
  }
}

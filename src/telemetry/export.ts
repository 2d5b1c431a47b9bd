/**
 * Spans out over OTLP/HTTP (protobuf) with the OpenTelemetry JS SDK's exporter
 * (`@opentelemetry/exporter-trace-otlp-proto`: its protobuf encoding, `@opentelemetry/otlp-transformer`,
 * and its HTTP transport, which reads at most 4 MiB of an answer and gives up after `timeoutMillis`;
 * it runs in the compiled binary). The spans themselves are the SDK's `ReadableSpan` shape, made
 * here from a turn's plan with its explicit times and parents: the SDK's TracerProvider would
 * cost ~12 µs a span on the daemon's thread for clocks and checks a finished record does not need
 * (bench/otlp.ts). The SDK's BatchSpanProcessor drops the NEWEST span when full and logs each
 * drop; lazy's `Queue` keeps a bounded queue that drops the OLDEST, counts it, sends one batch at
 * a time and backs off while the collector fails, so a collector that is down or slow costs that
 * queue and one warning, never more. It runs on the daemon's main thread at a turn's end: the
 * proxy's threads never see it.
 */
import { randomBytes } from "node:crypto";
import { type HrTime, type SpanContext, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import type { Attrs, SpanPlan } from "./spans";

/** Spans the queue holds at most: past it the oldest go (counted). */
export const MAX_QUEUE = 4096;
/** Spans one request carries at most. */
const BATCH = 512;
/** How long one export may take before it counts as failed. */
const TIMEOUT_MS = 5000;
/** How often a partial batch goes. */
const EVERY_MS = 1000;
/** While the collector fails, the next try waits twice as long as the last, up to this. */
const MAX_BACKOFF_MS = 60_000;

export interface ExportStats {
  queued: number;
  sent: number;
  /** Dropped because the queue was full (oldest first). */
  dropped: number;
  /** Lost in exports that failed. */
  failed: number;
  /** The last export's failure while the collector stays unreachable (null once one succeeds). */
  failing: string | null;
}

/** The bounded queue between spans made and the exporter. */
class Queue {
  private spans: ReadableSpan[] = [];
  private busy = false;
  private timer: Timer | undefined;
  private backoff = 0;
  readonly stats: ExportStats = { queued: 0, sent: 0, dropped: 0, failed: 0, failing: null };

  constructor(
    private exporter: OTLPTraceExporter,
    private said: (failing: string | null) => void,
  ) {}

  push(span: ReadableSpan): void {
    if (this.spans.length >= MAX_QUEUE) {
      this.spans.shift();
      this.stats.dropped++;
    }
    this.spans.push(span);
    this.stats.queued = this.spans.length;
  }

  /** After a turn's spans were pushed: a full batch goes now (unless the collector is backed off), a partial one soon. */
  kick(): void {
    if (this.timer || this.busy) return;
    this.later(this.backoff || (this.spans.length >= BATCH ? 0 : EVERY_MS));
  }

  private later(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.send(), ms);
    this.timer.unref();
  }

  send(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.busy || !this.spans.length) return;
    this.busy = true;
    const batch = this.spans.splice(0, BATCH);
    this.stats.queued = this.spans.length;
    let done = false;
    const finish = (ok: boolean, why?: string) => {
      if (done) return;
      done = true;
      clearTimeout(guard);
      this.busy = false;
      if (ok) {
        this.stats.sent += batch.length;
        this.backoff = 0;
        if (this.stats.failing !== null) {
          this.stats.failing = null;
          this.said(null);
        }
      } else {
        this.stats.failed += batch.length;
        this.backoff = Math.min(MAX_BACKOFF_MS, this.backoff ? this.backoff * 2 : EVERY_MS);
        if (this.stats.failing === null) {
          this.stats.failing = why ?? "the export failed";
          this.said(this.stats.failing);
        }
      }
      if (this.spans.length) this.later(ok ? 0 : this.backoff);
    };
    // The exporter's own retries stay within this bound: past it the batch counts as lost.
    const guard = setTimeout(() => finish(false, `no answer within ${TIMEOUT_MS / 1000} s`), TIMEOUT_MS + 1000);
    guard.unref();
    try {
      this.exporter.export(batch, (r) => finish(r.code === 0, r.error?.message));
    } catch (e) {
      finish(false, (e as Error).message);
    }
  }

  clear(): void {
    clearTimeout(this.timer);
    this.spans = [];
  }
}

const hr = (ms: number): HrTime => {
  const s = Math.floor(ms / 1000);
  return [s, Math.round((ms - s * 1000) * 1e6)];
};
const id = (bytes: number) => randomBytes(bytes).toString("hex");

/** One collector's exporter: spans made from plans, queued, sent in batches. */
export class Exporter {
  private queue: Queue;
  private exporter: OTLPTraceExporter;
  private resource;
  private scope;

  constructor(
    readonly url: string,
    version: string,
    said: (failing: string | null) => void,
  ) {
    // A collector's base URL gets the OTLP/HTTP traces path (the spec's OTEL_EXPORTER_OTLP_ENDPOINT rule).
    const target = /\/v1\/traces\/?$/.test(url) ? url : `${url.replace(/\/+$/, "")}/v1/traces`;
    this.exporter = new OTLPTraceExporter({ url: target, timeoutMillis: TIMEOUT_MS, concurrencyLimit: 1, headers: {} });
    this.queue = new Queue(this.exporter, said);
    this.resource = resourceFromAttributes({ "service.name": "lazy", "service.version": version });
    this.scope = { name: "lazy", version };
  }

  get stats(): ExportStats {
    return this.queue.stats;
  }

  /** The plan's spans, children before their parent (as an SDK ends them), into the queue. */
  add(plan: SpanPlan): void {
    const traceId = id(16);
    const emit = (p: SpanPlan, parent: SpanContext | undefined) => {
      const ctx: SpanContext = { traceId, spanId: id(8), traceFlags: 1 };
      for (const c of p.children) emit(c, ctx);
      const start = hr(p.start);
      const end = hr(Math.max(p.start, p.end));
      const span: ReadableSpan = {
        name: p.name,
        kind: p.kind === "client" ? SpanKind.CLIENT : SpanKind.INTERNAL,
        spanContext: () => ctx,
        parentSpanContext: parent,
        startTime: start,
        endTime: end,
        duration: hr(Math.max(0, p.end - p.start)),
        status: p.error ? { code: SpanStatusCode.ERROR, message: p.error } : { code: SpanStatusCode.UNSET },
        attributes: p.attributes,
        links: [],
        events: (p.events ?? []).map((e) => ({
          name: e.name,
          time: hr(e.at),
          attributes: e.attributes as Attrs,
          droppedAttributesCount: 0,
        })),
        ended: true,
        resource: this.resource,
        instrumentationScope: this.scope,
        droppedAttributesCount: 0,
        droppedEventsCount: 0,
        droppedLinksCount: 0,
      };
      this.queue.push(span);
    };
    emit(plan, undefined);
    this.queue.kick();
  }

  /** Send what is queued now (the daemon's stop: bounded by the caller). */
  async flush(): Promise<void> {
    this.queue.send();
  }

  async stop(): Promise<void> {
    this.queue.clear();
    await this.exporter.shutdown().catch(() => {});
  }
}

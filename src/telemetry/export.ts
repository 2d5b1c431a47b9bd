/**
 * Spans out over OTLP/HTTP (protobuf) with the OpenTelemetry JS SDK: `@opentelemetry/sdk-trace`
 * makes the spans (explicit times and parents), `@opentelemetry/exporter-trace-otlp-proto` encodes
 * and sends them (it runs in the compiled binary; its transport reads at most 4 MiB of an answer
 * and gives up after `timeoutMillis`). The SDK's BatchSpanProcessor drops the NEWEST span when
 * full and logs each drop through its diag logger; lazy's own processor (`Queue`) keeps a bounded
 * queue that drops the OLDEST, counts it, and sends one batch at a time, so a collector that is
 * down or slow costs that queue and one warning, never more. It runs on the daemon's main thread
 * at a turn's end: the proxy's threads never see it.
 */
import { type Context, context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { type ReadableSpan, type SpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import type { SpanPlan } from "./spans";

/** Spans the queue holds at most: past it the oldest go (counted). */
export const MAX_QUEUE = 4096;
/** Spans one request carries at most. */
const BATCH = 512;
/** How long one export may take before it counts as failed. */
const TIMEOUT_MS = 5000;
/** How often a partial batch goes. */
const EVERY_MS = 1000;

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

/** The bounded queue between spans that ended and the exporter. */
class Queue implements SpanProcessor {
  private spans: ReadableSpan[] = [];
  private busy = false;
  private timer: Timer | undefined;
  readonly stats: ExportStats = { queued: 0, sent: 0, dropped: 0, failed: 0, failing: null };

  constructor(
    private exporter: OTLPTraceExporter,
    private said: (failing: string | null) => void,
  ) {}

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if (this.spans.length >= MAX_QUEUE) {
      this.spans.shift();
      this.stats.dropped++;
    }
    this.spans.push(span);
    this.stats.queued = this.spans.length;
    if (this.spans.length >= BATCH) this.send();
    else if (!this.timer) {
      this.timer = setTimeout(() => this.send(), EVERY_MS);
      this.timer.unref();
    }
  }

  private send(): void {
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
        if (this.stats.failing !== null) {
          this.stats.failing = null;
          this.said(null);
        }
      } else {
        this.stats.failed += batch.length;
        if (this.stats.failing === null) {
          this.stats.failing = why ?? "the export failed";
          this.said(this.stats.failing);
        }
      }
      if (this.spans.length) {
        this.timer = setTimeout(() => this.send(), ok ? 0 : EVERY_MS);
        this.timer.unref();
      }
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

  async forceFlush(): Promise<void> {
    this.send();
  }

  async shutdown(): Promise<void> {
    clearTimeout(this.timer);
    this.spans = [];
  }
}

/** One collector's exporter: spans made from plans, queued, sent in batches. */
export class Exporter {
  private provider: TracerProvider;
  private queue: Queue;
  private exporter: OTLPTraceExporter;

  constructor(
    readonly url: string,
    version: string,
    said: (failing: string | null) => void,
  ) {
    // A collector's base URL gets the OTLP/HTTP traces path (the spec's OTEL_EXPORTER_OTLP_ENDPOINT rule).
    const target = /\/v1\/traces\/?$/.test(url) ? url : `${url.replace(/\/+$/, "")}/v1/traces`;
    this.exporter = new OTLPTraceExporter({ url: target, timeoutMillis: TIMEOUT_MS, concurrencyLimit: 1, headers: {} });
    this.queue = new Queue(this.exporter, said);
    this.provider = new TracerProvider({
      resource: resourceFromAttributes({ "service.name": "lazy", "service.version": version }),
      spanProcessors: [this.queue],
      spanLimits: { attributeValueLengthLimit: 1024, attributeCountLimit: 64, eventCountLimit: 256 },
    });
  }

  get stats(): ExportStats {
    return this.queue.stats;
  }

  /** The plan's spans, ended (children first, as an SDK would): they go into the queue. */
  add(plan: SpanPlan): void {
    const tracer = this.provider.getTracer("lazy");
    const emit = (p: SpanPlan, parent: Context) => {
      const span: Span = tracer.startSpan(
        p.name,
        { kind: p.kind === "client" ? SpanKind.CLIENT : SpanKind.INTERNAL, startTime: p.start, attributes: p.attributes },
        parent,
      );
      for (const e of p.events ?? []) span.addEvent(e.name, e.attributes, e.at);
      if (p.error) span.setStatus({ code: SpanStatusCode.ERROR, message: p.error });
      const mine = trace.setSpan(parent, span);
      for (const c of p.children) emit(c, mine);
      span.end(p.end);
    };
    context.with(ROOT_CONTEXT, () => emit(plan, ROOT_CONTEXT));
  }

  /** Send what is queued (the daemon's stop: bounded by the caller). */
  async flush(): Promise<void> {
    await this.queue.forceFlush();
  }

  async stop(): Promise<void> {
    await this.provider.shutdown().catch(() => {});
    await this.exporter.shutdown().catch(() => {});
  }
}

/**
 * Spans out over OTLP/HTTP (protobuf) with the OpenTelemetry JS SDK's exporter
 * (`@opentelemetry/exporter-trace-otlp-proto`: its protobuf encoding, `@opentelemetry/otlp-transformer`,
 * and its HTTP transport, which reads at most 4 MiB of an answer and gives up after `timeoutMillis`;
 * it runs in the compiled binary). The spans themselves are the SDK's `ReadableSpan` shape, made
 * here from a turn's plan with its explicit times and parents: the SDK's TracerProvider would
 * cost ~12 µs a span on the daemon's thread for clocks and checks a finished record does not need
 * (bench/otlp.ts). The SDK's BatchSpanProcessor drops the NEWEST span when full and logs each
 * drop; lazy's `Queue` keeps a bounded queue that drops the OLDEST turns whole (a span never goes
 * without its parent), counts them, sends one batch at a time and backs off while the collector
 * fails, so a collector that is down or slow costs that queue and one warning, never more; the
 * daemon's stop sends what is queued within a bound (`flush`). It runs on the daemon's main
 * thread at a turn's end: the proxy's threads never see it.
 */
import { randomBytes } from "node:crypto";
import { type HrTime, type SpanContext, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import { type Attrs, MAX_SPANS, type SpanPlan } from "./spans";
import { within } from "./within";

/** Spans the queue holds at most (a turn has at most as many: spans.ts MAX_SPANS); past it the oldest turns go whole (counted). */
export const MAX_QUEUE = MAX_SPANS;
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
  /** Dropped: whole turns, oldest first, when the queue was full; what the daemon's stop could not send in time. */
  dropped: number;
  /** Lost in exports that failed (with the rest of a turn such an export cut apart). */
  failed: number;
  /** Never made: the spans turns had past their cap (spans.ts MAX_SPANS). */
  cut: number;
  /** The last export's failure while the collector stays unreachable (null once one succeeds). */
  failing: string | null;
}

/** One turn's spans in the queue, parent before child; `next` is the first not yet taken into a batch. */
interface Turn {
  spans: ReadableSpan[];
  next: number;
}

/**
 * The bounded queue between spans made and the exporter, by turn: a full queue drops whole turns,
 * the oldest first, so no span reaches the collector without its parent. A turn goes out parent
 * first, so what of it a batch took is a tree of its own (its parents sent before it).
 */
class Queue {
  private turns: Turn[] = [];
  private held = 0;
  private inflight: { done: Promise<void>; give: () => void } | undefined;
  private timer: Timer | undefined;
  private backoff = 0;
  /** The daemon's stop sends batch after batch itself: no timer of its own then. */
  private flushing = false;
  readonly stats: ExportStats = { queued: 0, sent: 0, dropped: 0, failed: 0, cut: 0, failing: null };

  constructor(
    private exporter: OTLPTraceExporter,
    private said: (failing: string | null) => void,
  ) {}

  /** A turn's spans, parent first: the oldest turns go whole (one splice) until it fits. */
  push(spans: ReadableSpan[]): void {
    if (spans.length > MAX_QUEUE) {
      // turnSpans never makes one: its head is still a tree.
      this.stats.dropped += spans.length - MAX_QUEUE;
      spans = spans.slice(0, MAX_QUEUE);
    }
    let k = 0;
    let freed = 0;
    while (this.held - freed + spans.length > MAX_QUEUE) {
      const t = this.turns[k++]!;
      freed += t.spans.length - t.next;
    }
    if (k) {
      this.turns.splice(0, k);
      this.held -= freed;
      this.stats.dropped += freed;
    }
    this.turns.push({ spans, next: 0 });
    this.held += spans.length;
    this.stats.queued = this.held;
  }

  /** The next `n` spans, the oldest first (one splice for the turns taken whole). */
  private take(n: number): ReadableSpan[] {
    const out: ReadableSpan[] = [];
    let k = 0;
    while (out.length < n && k < this.turns.length) {
      const t = this.turns[k]!;
      const end = Math.min(t.spans.length, t.next + n - out.length);
      for (let i = t.next; i < end; i++) out.push(t.spans[i]!);
      t.next = end;
      if (end === t.spans.length) k++;
    }
    if (k) this.turns.splice(0, k);
    this.held -= out.length;
    this.stats.queued = this.held;
    return out;
  }

  /** The rest of a turn a failed export cut apart: its children would reach the collector without their parents. */
  private dropCutTurn(): void {
    const t = this.turns[0];
    if (!t?.next) return;
    const rest = t.spans.length - t.next;
    this.turns.shift();
    this.held -= rest;
    this.stats.queued = this.held;
    this.stats.failed += rest;
  }

  /** After a turn's spans were pushed: a full batch goes now (unless the collector is backed off), a partial one soon. */
  kick(): void {
    if (this.timer || this.inflight) return;
    this.later(this.backoff || (this.held >= BATCH ? 0 : EVERY_MS));
  }

  private later(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.send(), ms);
    this.timer.unref();
  }

  send(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.inflight || !this.held) return;
    const batch = this.take(BATCH);
    let done = false;
    let resolve = () => {};
    // `quiet`: the daemon's stop gave the batch up (it says so itself), no collector failed.
    const finish = (ok: boolean, why?: string, quiet = false) => {
      if (done) return;
      done = true;
      clearTimeout(guard);
      this.inflight = undefined;
      if (ok) {
        this.stats.sent += batch.length;
        this.backoff = 0;
        if (this.stats.failing !== null) {
          this.stats.failing = null;
          this.said(null);
        }
      } else {
        this.stats.failed += batch.length;
        this.dropCutTurn();
        this.backoff = Math.min(MAX_BACKOFF_MS, this.backoff ? this.backoff * 2 : EVERY_MS);
        if (this.stats.failing === null && !quiet) {
          this.stats.failing = why ?? "the export failed";
          this.said(this.stats.failing);
        }
      }
      resolve();
      if (this.held && !this.flushing) this.later(ok ? 0 : this.backoff);
    };
    this.inflight = { done: new Promise<void>((r) => (resolve = r)), give: () => finish(false, undefined, true) };
    // The exporter's own retries stay within this bound: past it the batch counts as lost.
    const guard = setTimeout(() => finish(false, `no answer within ${TIMEOUT_MS / 1000} s`), TIMEOUT_MS + 1000);
    guard.unref();
    try {
      this.exporter.export(batch, (r) => finish(r.code === 0, r.error?.message));
    } catch (e) {
      finish(false, (e as Error).message);
    }
  }

  /**
   * Everything queued, sent now batch after batch (no backoff), for at most `ms`: what is still
   * queued or unanswered then is given up (dropped, failed), counted.
   */
  async flush(ms: number): Promise<void> {
    const until = Date.now() + ms;
    this.flushing = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    try {
      while (Date.now() < until) {
        if (this.inflight) await within(this.inflight.done, until - Date.now());
        else if (this.held) this.send();
        else return;
      }
      this.inflight?.give();
      this.stats.dropped += this.held;
      this.turns = [];
      this.held = 0;
      this.stats.queued = 0;
    } finally {
      this.flushing = false;
    }
  }

  clear(): void {
    clearTimeout(this.timer);
    this.stats.dropped += this.held;
    this.turns = [];
    this.held = 0;
    this.stats.queued = 0;
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

  /** The plan's spans, each parent before its children, into the queue as one turn. */
  add(plan: SpanPlan): void {
    const traceId = id(16);
    const spans: ReadableSpan[] = [];
    const emit = (p: SpanPlan, parent: SpanContext | undefined) => {
      const ctx: SpanContext = { traceId, spanId: id(8), traceFlags: 1 };
      const start = hr(p.start);
      const end = hr(Math.max(p.start, p.end));
      spans.push({
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
      });
      for (const c of p.children) emit(c, ctx);
    };
    emit(plan, undefined);
    this.queue.stats.cut += plan.cut ?? 0;
    this.queue.push(spans);
    this.queue.kick();
  }

  /** Send what is queued now, for at most `ms` (the daemon's stop): what is left then is dropped, counted. */
  flush(ms: number): Promise<void> {
    return this.queue.flush(ms);
  }

  /** No more sending: what is still queued is dropped (counted); the exporter's transport closes. */
  async stop(): Promise<void> {
    this.queue.clear();
    await this.exporter.shutdown().catch(() => {});
  }
}

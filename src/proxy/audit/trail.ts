/**
 * The audit trail on the daemon's main thread (the proxy's threads record rows with a
 * Recorder, recorder.ts): batches go to the writer thread (writer.ts), reads wait for what was
 * recorded before them, live readers (lazy watch) and budget checks hear of new rows.
 */
import type { Database } from "bun:sqlite";
import type { Own } from "../../prices";
import { AuditRefusals, Usage } from "../../store";
import type { Logger } from "../../util/log";
import { workerUrl } from "../../util/worker-url";
import type * as Refusals from "./refusals";
import * as Store from "./store";
import type { FromWriter, ToWriter } from "./writer";

/** `[proxy.audit] max_refusal_lines`' default, for a trail made without it. */
const MAX_REFUSALS = 10_000;

/**
 * The trail itself, on the daemon's main thread: batches from the proxy's thread go to the
 * writer thread (audit-writer.ts), and reads wait until everything recorded before them is in
 * the store — first what the proxy's thread still holds (`pending`), then the writer's queue.
 */
export class Audit {
  private pruneTimer: Timer;
  private writer!: Worker;
  private posted = 0;
  private written = 0;
  private waiters: { id: number; resolve: () => void }[] = [];
  private respawns = 0;
  private live = new Set<(rows: Store.Row[]) => void>();
  private liveRefused = new Set<(tally: Refusals.Tally) => void>();
  private written_ = new Set<(taskIds: ReadonlySet<string>) => void>();
  /** Batches posted and not yet written → the tasks whose tokens they carry. */
  private spent = new Map<number, Set<string>>();

  constructor(
    private db: Database,
    /** The bounds, and the project's own prices ([prices]) the writer prices usage by, as of now. */
    private bounds: () => Store.Bounds & Partial<Refusals.Bounds> & { prices?: Own },
    private log: Logger,
    private pending: () => Promise<void> = async () => {},
  ) {
    Store.packLegacy(db);
    this.spawn();
    this.pruneTimer = setInterval(() => this.prune(), 60_000);
    this.pruneTimer.unref();
  }

  private spawn(): void {
    const writer = new Worker(workerUrl("proxy/audit/writer.ts"));
    (writer as unknown as { unref(): void }).unref(); // Bun's: the writer alone keeps no process alive
    writer.onmessage = (e: MessageEvent<FromWriter>) => {
      const m = e.data;
      if (m.error) this.log.error(`audit write failed: ${m.error}`);
      this.release(m.id);
    };
    // A writer that died takes what it was given with it: say so, let readers go on with what is
    // stored, and start another (a few times; after that the trail is off, and the log says so).
    writer.onerror = (e) => {
      this.log.error(`the audit writer failed: ${e.message}; rows posted to it may be lost`);
      this.release(this.posted);
      writer.terminate();
      if (this.respawns++ < 3) this.spawn();
      else this.log.error("the audit writer failed repeatedly: the audit trail is off until the daemon restarts");
    };
    this.writer = writer;
    this.writer.postMessage({ type: "open", path: this.db.filename } satisfies ToWriter);
  }

  private release(id: number): void {
    this.written = Math.max(this.written, id);
    if (this.spent.size) {
      const tasks = new Set<string>();
      for (const [k, ts] of this.spent)
        if (k <= id) {
          for (const t of ts) tasks.add(t);
          this.spent.delete(k);
        }
      if (tasks.size)
        for (const l of this.written_) {
          try {
            l(tasks);
          } catch (e) {
            this.log.warn(`a listener to written audit rows failed: ${(e as Error).message}`);
          }
        }
    }
    this.waiters = this.waiters.filter((w) => {
      if (w.id > this.written) return true;
      w.resolve();
      return false;
    });
  }

  /** Apply both bounds now (the trail does once a minute). */
  prune(): void {
    const b = this.bounds();
    this.post({ type: "prune", id: ++this.posted, bounds: { ...b, maxRefusals: b.maxRefusals ?? MAX_REFUSALS } });
  }

  /** Refusals of callers lazy cannot attribute, counted by a proxy thread (refusals.ts): stored beside the rows, never as rows. */
  refused(tally: Refusals.Tally): void {
    for (const l of this.liveRefused) {
      try {
        l(tally);
      } catch (e) {
        this.liveRefused.delete(l);
        this.log.warn(`a live reader of refusals failed and was dropped: ${(e as Error).message}`);
      }
    }
    const { maxAgeDays, maxRefusals = MAX_REFUSALS } = this.bounds();
    this.post({ type: "refused", id: ++this.posted, tally, bounds: { maxAgeDays, maxRefusals } });
  }

  /** Counted refusals as they are handed over (within ~50 ms): lazy watch shows the first of each, then a count. */
  onRefused(listener: (tally: Refusals.Tally) => void): () => void {
    this.liveRefused.add(listener);
    return () => this.liveRefused.delete(listener);
  }

  /** The newest `limit` counted lines (of one task's placeholder; from `since` on), oldest first. */
  async refusals(opts: { taskId?: string; limit?: number; since?: number } = {}): Promise<Refusals.Tally> {
    await this.settled();
    return AuditRefusals.newest(this.db, { taskId: opts.taskId, since: opts.since, limit: opts.limit ?? 100 });
  }

  /** A batch of rows (from a Recorder): written in one transaction, off this thread. */
  write(batch: Store.Batch): void {
    // Live readers (lazy watch) get the rows first: posting hands the batch's buffers over.
    if (this.live.size) {
      const rows = Array.from({ length: batch.n }, (_, i) => Store.rowOf(batch, i));
      for (const l of this.live) {
        try {
          l(rows);
        } catch (e) {
          this.live.delete(l);
          this.log.warn(`a live audit reader failed and was dropped: ${(e as Error).message}`);
        }
      }
    }
    const id = ++this.posted;
    if (this.written_.size) {
      const tasks = new Set<string>();
      for (let i = 0; i < batch.n; i++) {
        const t = Store.stringOf(batch, i, "task_id");
        if (t !== null && !Number.isNaN(Store.numberOf(batch, i, Store.NUM.input_tokens))) tasks.add(t);
      }
      if (tasks.size) this.spent.set(id, tasks);
    }
    this.post({ type: "rows", id, batch, bounds: this.bounds() });
  }

  /** Tasks whose token counters a batch moved, once that batch is in the store (budgets read them). */
  onWritten(listener: (taskIds: ReadonlySet<string>) => void): () => void {
    this.written_.add(listener);
    return () => this.written_.delete(listener);
  }

  /** Rows as they are recorded (after the proxy's thread hands them over, within ~50 ms). */
  onRows(listener: (rows: Store.Row[]) => void): () => void {
    this.live.add(listener);
    return () => this.live.delete(listener);
  }

  /** Resolves once every row recorded so far is in the store. */
  async settled(): Promise<void> {
    await this.pending();
    if (this.written >= this.posted) return;
    return new Promise((resolve) => this.waiters.push({ id: this.posted, resolve }));
  }

  private post(m: ToWriter): void {
    if (this.respawns > 3) {
      this.release(this.posted);
      return;
    }
    this.writer.postMessage(m, m.type === "rows" ? Store.buffers(m.batch) : []);
  }

  /** The newest `limit` rows (of one task; recorded at or after `since`), oldest first. */
  async query(opts: { taskId?: string; limit?: number; since?: number } = {}): Promise<(Store.Row & { id: number })[]> {
    await this.settled();
    const limit = opts.limit ?? 100;
    const since = opts.since ?? 0;
    const out: (Store.Row & { id: number })[] = [];
    scan: for (const { id, batch } of Store.newestFirst(this.db)) {
      // A task's rows hold its id's index in the batch's strings; a batch without it has none.
      const task = opts.taskId === undefined ? undefined : batch.table.indexOf(opts.taskId);
      if (task === -1) continue;
      for (let i = batch.n - 1; i >= 0 && out.length < limit; i--) {
        if (task !== undefined && Store.taskOf(batch, i) !== task) continue;
        const row = Store.rowOf(batch, i);
        if (row.at < since) break scan;
        out.push({ id: id + i, ...row });
      }
      if (out.length >= limit) break;
    }
    return out.reverse();
  }

  async count(): Promise<number> {
    await this.settled();
    return Store.count(this.db);
  }

  async totals(taskId: string): Promise<{ requests: number; input: number; output: number; cacheRead: number; cacheWrite: number }> {
    await this.settled();
    return Usage.ofTask(this.db, taskId);
  }

  /** Write what was posted, then let the writer go. */
  async stop(): Promise<void> {
    clearInterval(this.pruneTimer);
    this.post({ type: "close", id: ++this.posted });
    const last = new Promise<void>((resolve) => this.waiters.push({ id: this.posted, resolve }));
    await Promise.race([last, Bun.sleep(5000)]);
    this.writer.terminate();
  }
}

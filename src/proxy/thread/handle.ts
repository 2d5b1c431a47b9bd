/**
 * One proxy thread as the daemon's main thread holds it: its Worker (entry.ts), the calls
 * waiting on it, and its restarts when it dies. What it needs of the proxy it belongs to is
 * the Owner below (the ModelProxy in main/model-proxy.ts), so this file does not import the facade.
 */

import { LazyError } from "../../util/errors";
import type { Logger } from "../../util/log";
import { workerUrl } from "../../util/worker-url";
import type { Audit } from "../audit";
import type { Ask, Call, FromThread, Init, ToThread } from "./messages";

/** What a thread asks of the proxy that owns it. */
export interface Owner {
  readonly audit: Pick<Audit, "write" | "refused">;
  readonly log: Logger;
  /** The proxy is stopping: a thread ending now is no failure. */
  readonly stopping: boolean;
  /** What a new thread starts from. */
  init(): Init;
  /** A thread's question for the main thread (Cursor sessions, the MCP route). */
  answer(a: Ask): unknown;
  /** A thread was given up on. */
  lost(why: string): void;
  /** A restarted thread: listen where the others do. */
  rejoin(t: Thread): Promise<void>;
}

/** How many times a proxy thread that died is started again before the proxy is reported failed. */
const RESPAWNS = 3;

/** One proxy thread: its Worker, the calls waiting on it, and its restarts. */
export class Thread {
  worker!: Worker;
  private calls = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private nextId = 0;
  private respawns = 0;
  gone: string | undefined;

  constructor(private owner: Owner) {
    this.spawn();
  }

  private spawn(): void {
    const worker = new Worker(workerUrl("proxy/thread/entry.ts"));
    worker.onmessage = (e: MessageEvent<FromThread>) => {
      const m = e.data;
      if (m.type === "audit") return this.owner.audit.write(m.batch);
      if (m.type === "refused") return this.owner.audit.refused(m.tally);
      if (m.type === "ask") {
        const v = this.owner.answer(m.ask);
        if (v instanceof Promise) return void v.then((value) => this.post({ type: "answer", id: m.id, value }));
        return this.post({ type: "answer", id: m.id, value: v });
      }
      const waiter = this.calls.get(m.id);
      this.calls.delete(m.id);
      if (m.error !== undefined) waiter?.reject(new Error(m.error));
      else waiter?.resolve(m.value);
    };
    // The thread died (a bug; each request's own errors are caught there), by an uncaught error
    // or by exiting: requests in flight on it are lost. Start another with the same state on
    // the same addresses, a few times.
    let ended = false;
    const died = (why: string) => {
      if (ended) return;
      ended = true;
      worker.terminate();
      for (const w of this.calls.values()) w.reject(new Error(`lazy's proxy failed: ${why}`));
      this.calls.clear();
      if (this.owner.stopping) return;
      this.owner.log.error(`lazy's proxy failed: ${why}`);
      if (this.respawns++ >= RESPAWNS) {
        this.gone = `a thread stopped ${RESPAWNS + 1} times; the last time: ${why}`;
        return this.owner.lost(this.gone);
      }
      this.spawn();
      void this.owner.rejoin(this);
    };
    worker.onerror = (e) => died(`its thread stopped (${errorLine(e.message)})`);
    worker.addEventListener("close", () => died("its thread exited"));
    this.worker = worker;
    this.post({ type: "init", init: this.owner.init() });
  }

  post(m: ToThread): void {
    if (!this.gone) this.worker.postMessage(m);
  }

  call<T>(c: Call): Promise<T> {
    // A thread that was given up on answers nothing: fail at once rather than wait forever.
    if (this.gone)
      return Promise.reject(
        new LazyError("proxy_unavailable", `lazy's proxy failed: ${this.gone}; restart the daemon: lazy daemon restart.`),
      );
    const id = ++this.nextId;
    return new Promise<T>((resolve, reject) => {
      this.calls.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker.postMessage({ type: "call", id, call: c } satisfies ToThread);
    });
  }

  terminate(): void {
    this.worker.terminate();
  }
}

/** Bun's worker error message carries a code frame and a stack: keep the "TypeError: …" line. */
function errorLine(message: string): string {
  const lines = message.split("\n").map((l) => l.trim());
  return lines.find((l) => /^\w+: /.test(l)) ?? lines.find(Boolean) ?? "unknown error";
}

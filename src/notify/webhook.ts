/**
 * The webhook channel: POSTs a notification's JSON to the URL in [notify] webhook. Sends run
 * detached from the turn that caused them (never awaited on its path), one at a time in the
 * order the moves happened, from a bounded queue: each is tried 3 times (the first try, then
 * 1 s and 2 s later), 10 s per try, and a send that still fails is logged and dropped. Nothing here throws to its caller.
 *
 * A webhook URL often carries its secret in the path or query (Slack, Discord, ntfy tokens):
 * log lines name the URL's origin only, never the full URL, and errors are scrubbed of it.
 */
import type { Logger } from "../util/log";

export interface WebhookOptions {
  log: Logger;
  userAgent: string;
  /** Per try. */
  timeoutMs?: number;
  /** The waits before each retry; their count is the number of retries. */
  backoffMs?: number[];
  /** Sends waiting beyond this drop the oldest (a dead webhook must not grow the daemon). */
  maxQueue?: number;
}

interface Item {
  url: string;
  body: string;
  /** For the log: which notification this is, e.g. "done of fix-login". */
  what: string;
}

export const TIMEOUT_MS = 10_000;
/** Three tries in all ("tried three times"): the first, then after 1 s and after 2 s more. */
export const BACKOFF_MS = [1000, 2000];
export const MAX_QUEUE = 100;

/** The part of a webhook URL that may be logged: scheme, host and port (no user, path or query). */
export function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "(an invalid URL)";
  }
}

export class Webhook {
  private queue: Item[] = [];
  private busy = false;
  private stopped = false;
  private readonly timeoutMs: number;
  private readonly backoffMs: number[];
  private readonly maxQueue: number;

  constructor(private o: WebhookOptions) {
    this.timeoutMs = o.timeoutMs ?? TIMEOUT_MS;
    this.backoffMs = o.backoffMs ?? BACKOFF_MS;
    this.maxQueue = o.maxQueue ?? MAX_QUEUE;
  }

  /** Queue a POST of `body` (JSON) to `url`; returns at once. */
  send(url: string, body: string, what: string): void {
    if (this.stopped) return;
    const dropped = this.queue.length >= this.maxQueue ? this.queue.shift() : undefined;
    if (dropped) {
      this.o.log.warn(
        `webhook ${originOf(dropped.url)}: ${this.maxQueue} notifications are waiting to be sent; dropped the oldest (${dropped.what})`,
      );
    }
    this.queue.push({ url, body, what });
    void this.drain();
  }

  /** Drop what is queued; a send under way finishes its current try. */
  stop(): void {
    this.stopped = true;
    this.queue = [];
  }

  /** Resolves once nothing is queued or being sent (for tests and an orderly stop). */
  async idle(): Promise<void> {
    while (this.busy || this.queue.length) await Bun.sleep(20);
  }

  private async drain(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      for (let item = this.queue.shift(); item; item = this.queue.shift()) await this.deliver(item);
    } catch (e) {
      this.o.log.error(`webhook: ${(e as Error).message}`);
    } finally {
      this.busy = false;
    }
  }

  private async deliver(item: Item): Promise<void> {
    const origin = originOf(item.url);
    const tries = this.backoffMs.length + 1;
    let last = "";
    for (let n = 1; n <= tries; n++) {
      last = await this.attempt(item);
      if (!last) {
        if (n > 1) this.o.log.info(`webhook ${origin}: sent the ${item.what} notification on try ${n}`);
        return;
      }
      this.o.log.debug(`webhook ${origin}: try ${n} of ${tries} for the ${item.what} notification failed: ${last}`);
      if (n < tries && !this.stopped) await Bun.sleep(this.backoffMs[n - 1] ?? 0);
      if (this.stopped) return;
    }
    this.o.log.warn(
      `webhook ${origin} failed ${tries} times (last: ${last}); the ${item.what} notification was dropped. Check [notify] webhook in lazy.toml and that the receiver answers 2xx.`,
    );
  }

  /** One POST; "" when it was taken (2xx), else what went wrong, without the URL's path or query. */
  private async attempt(item: Item): Promise<string> {
    try {
      const res = await fetch(item.url, {
        method: "POST",
        headers: { "content-type": "application/json", "user-agent": this.o.userAgent },
        body: item.body,
        // A redirect could carry the body to a host the user never named.
        redirect: "manual",
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      await res.body?.cancel().catch(() => {});
      if (res.status >= 200 && res.status < 300) return "";
      if (res.status >= 300 && res.status < 400)
        return `HTTP ${res.status} (a redirect; lazy does not follow a webhook's redirects: put the final URL in lazy.toml)`;
      return `HTTP ${res.status}`;
    } catch (e) {
      const err = e as Error & { code?: string };
      if (err.name === "TimeoutError") return `no answer within ${this.timeoutMs / 1000} s`;
      return scrub(err.code && !err.message.startsWith(err.code) ? `${err.code}: ${err.message}` : err.message, item.url);
    }
  }
}

/** An error message with the URL (and its path and query, wherever they appear) cut out. */
function scrub(message: string, url: string): string {
  let out = message.split(url).join(originOf(url));
  try {
    const u = new URL(url);
    for (const part of [u.pathname + u.search, u.search, u.pathname, u.username, u.password])
      if (part.length > 1) out = out.split(part).join("…");
  } catch {}
  return out.slice(0, 300);
}

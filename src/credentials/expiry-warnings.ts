/**
 * Warnings ahead of an OAuth token's lapse. lazy never refreshes a token itself, and the first a
 * user heard of a lapsed one was a turn failing on the provider's 401. For every stored token
 * whose expiry lazy knows (expiry.ts), this says so a day ahead, and again once it has lapsed,
 * with the command that replaces it: in `lazy doctor` and `lazy auth list` (through the API), in
 * `lazy watch` and on the dashboard's Home, as a notification (once per token and state), and in
 * the daemon's log.
 */
import type { Logger } from "../util/log";
import type { CredentialStore } from "./store";

/** How long before its expiry a token is warned of. */
export const WARN_MS = 24 * 3600_000;
const CHECK_MS = 60_000;

export interface ExpiryNotice {
  credential: string;
  expiresAt: string;
  expired: boolean;
  /** The sentence shown everywhere: what lapses when, and the commands that replace it. */
  message: string;
}

/** The sentence for a token that lapses (or lapsed) at `at`. */
export function expiryMessage(name: string, at: number, now: number): string {
  const fix = `make a new token (claude setup-token; or log in with claude again) and store it: lazy auth set ${name}`;
  const when = new Date(at).toISOString().replace(/\.\d{3}Z$/, "Z");
  if (at <= now) return `The OAuth token "${name}" expired at ${when}: the provider refuses requests on it. ${cap(fix)}.`;
  return `The OAuth token "${name}" expires in ${span(at - now)} (${when}): ${fix}.`;
}

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

function span(ms: number): string {
  const min = Math.max(1, Math.round(ms / 60_000));
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  return min % 60 && h < 10 ? `${h} h ${min % 60} min` : `${h} h`;
}

export class ExpiryWarnings {
  private current: ExpiryNotice[] = [];
  /** What was already told (credential → expiry and state), so each is notified once. */
  private told = new Map<string, string>();
  private listeners = new Set<(n: ExpiryNotice) => void>();
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private d: {
      credentials: Pick<CredentialStore, "expiring" | "onChange">;
      /** A notification through [notify] (webhook, desktop); never throws. */
      notify: (event: string, message: string) => void;
      log: Logger;
      now?: () => number;
    },
  ) {}

  start(): void {
    if (this.timer) return;
    this.check();
    this.timer = setInterval(() => this.check(), CHECK_MS);
    this.timer.unref();
    this.d.credentials.onChange(() => this.check());
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The tokens that lapse within a day, or have lapsed, soonest first. */
  notices(): ExpiryNotice[] {
    return this.current;
  }

  /** Call `fn` with each new notice (a token entering the window, or lapsing); returns the unsubscribe. */
  on(fn: (n: ExpiryNotice) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  check(): void {
    const now = (this.d.now ?? Date.now)();
    this.current = this.d.credentials.expiring(now + WARN_MS).map((e) => ({
      credential: e.name,
      expiresAt: new Date(e.expiresAt).toISOString(),
      expired: e.expiresAt <= now,
      message: expiryMessage(e.name, e.expiresAt, now),
    }));
    const names = new Set(this.current.map((n) => n.credential));
    for (const name of this.told.keys()) if (!names.has(name)) this.told.delete(name);
    for (const n of this.current) {
      const key = `${n.expiresAt} ${n.expired}`;
      if (this.told.get(n.credential) === key) continue;
      this.told.set(n.credential, key);
      this.d.log.warn(n.message);
      this.d.notify(n.expired ? "credential_expired" : "credential_expiring", n.message);
      for (const fn of this.listeners)
        try {
          fn(n);
        } catch {}
    }
  }
}

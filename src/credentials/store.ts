/**
 * The credential store the daemon holds: every value in memory, so the proxy's per-request
 * `get` never waits on a keychain or a file. Writes go to the backend first and then replace
 * the memory at once; a poll re-reads the backend so a change made outside lazy (another
 * daemon, `secret-tool store`, `security`) shows within seconds.
 */
import { LazyError } from "../util/errors";
import { create } from "../util/log";
import type { BackendImpl, Stored } from "./backend";
import { choose } from "./choose";
import { Expiries, fromClaudeJson } from "./expiry";
import {
  type Backend,
  type CredentialInfo,
  type CredentialKind,
  cleanOutside,
  kindOf,
  last4,
  STANDARD,
  validName,
  validValue,
} from "./kinds";
import { encodePem, looksLikePem, PEM_RULE } from "./private-key";

const log = create("credentials");

export interface OpenOptions {
  /** lazy's home (`lazyHome()`); the file store and the index live in `<home>/credentials/`. */
  home: string;
  /** The daemon's environment: standard-name fallbacks and LAZY_CREDENTIAL_BACKEND. Defaults to process.env. */
  env?: Record<string, string | undefined>;
  /** Force a backend; "auto" (the default) lets LAZY_CREDENTIAL_BACKEND or the platform decide. */
  backend?: Backend | "auto";
  /** How often start()'s poll re-reads the backend. */
  pollMs?: number;
  /** The OS store's service name (tests use their own). */
  service?: string;
}

export interface Resolved {
  value: string;
  kind: CredentialKind;
  source: Backend | "env";
}

interface Entry extends Stored {
  kind: CredentialKind;
}

const DEFAULT_POLL_MS = 2_000;

export class CredentialStore {
  readonly backend: Backend;
  readonly backendNote: string;
  private entries = new Map<string, Entry>();
  private readonly impl: BackendImpl;
  private readonly env: Record<string, string | undefined>;
  private readonly pollMs: number;
  private timer: ReturnType<typeof setInterval> | undefined;
  /** Bumped by every local set/remove: a refresh that raced one is older than memory. */
  private mutations = 0;
  private chain: Promise<void> = Promise.resolve();
  private loading = false;
  private loaded = false;
  /** Warned once each: a poll failure, and names whose stored value is unusable. */
  private pollWarning: string | undefined;
  private badValues = new Set<string>();
  private listeners: (() => void)[] = [];
  /** OAuth tokens' expiry, where lazy was told it (Claude Code's OAuth JSON). */
  private readonly expiries: Expiries;

  private constructor(impl: BackendImpl, note: string, env: Record<string, string | undefined>, pollMs: number, home: string) {
    this.expiries = new Expiries(home);
    this.impl = impl;
    this.backend = impl.kind;
    this.backendNote = note;
    this.env = env;
    this.pollMs = pollMs;
  }

  static async open(opts: OpenOptions): Promise<CredentialStore> {
    const service = opts.service ?? "lazy";
    if (!validName(service))
      throw new LazyError("invalid_input", `credential service name "${service}" must be lowercase letters, digits, '.', '_' or '-'`);
    const env = opts.env ?? process.env;
    const chosen = await choose({ home: opts.home, env, backend: opts.backend ?? "auto", service });
    const store = new CredentialStore(chosen.impl, chosen.note, env, opts.pollMs ?? DEFAULT_POLL_MS, opts.home);
    await store.refresh();
    log.debug(chosen.note);
    return store;
  }

  /** From memory only: the proxy calls this on every request. A stored value wins over the env. */
  get(name: string): Resolved | undefined {
    const e = this.entries.get(name);
    if (e) return { value: e.value, kind: e.kind, source: this.backend };
    const fallback = this.fromEnv(name);
    return fallback && { value: fallback.value, kind: kindOf(fallback.value), source: "env" };
  }

  /** Every name get() answers for, resolved: a copy for the proxy's thread. */
  snapshot(): Record<string, Resolved> {
    const out: Record<string, Resolved> = {};
    for (const { name } of this.list()) out[name] = this.get(name)!;
    return out;
  }

  /** Call `fn` after every change in memory (a set, a remove, a reload). */
  onChange(fn: () => void): void {
    this.listeners.push(fn);
  }

  private changed(): void {
    for (const fn of this.listeners) fn();
  }

  list(): CredentialInfo[] {
    const out: CredentialInfo[] = [];
    for (const [name, e] of this.entries) out.push(this.info(name, e));
    for (const name of Object.keys(STANDARD)) {
      if (this.entries.has(name)) continue;
      const fallback = this.fromEnv(name);
      if (fallback) {
        out.push({ name, kind: kindOf(fallback.value), source: "env", envVar: fallback.envVar, setAt: null, last4: last4(fallback.value) });
      }
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * Store `value` as `name`. Claude Code's OAuth JSON (its .credentials.json, as it is) stores its
   * access token, and its `expiresAt` is kept so lazy can warn before the token lapses.
   */
  async set(name: string, given: string): Promise<CredentialInfo> {
    checkName(name);
    const oauth = fromClaudeJson(given);
    if (oauth === null)
      throw new LazyError(
        "invalid_input",
        `the value for credential "${name}" is JSON but not Claude Code's OAuth credentials (claudeAiOauth.accessToken); give the key or token itself, or that file whole; nothing was stored`,
      );
    let value = oauth ? oauth.token : given;
    if (!oauth && looksLikePem(given)) {
      // A PEM private key is stored as one word (private-key.ts): every backend takes it as it is.
      const pem = encodePem(given);
      if ("refused" in pem)
        throw new LazyError("invalid_input", `the value for credential "${name}" is refused: ${pem.refused}; nothing was stored`);
      value = pem.stored;
    }
    if (!validValue(value)) {
      throw new LazyError(
        "invalid_input",
        `the value for credential "${name}" must be a single key or token: printable ASCII with no spaces or line breaks (at most 8192 characters); ${PEM_RULE}; nothing was stored`,
      );
    }
    const stored = await this.impl.set(name, value);
    this.expiries.set(name, value, oauth?.expiresAt ?? null);
    const entry: Entry = { ...stored, kind: kindOf(value) };
    this.mutations++;
    this.entries.set(name, entry);
    this.changed();
    log.info(`stored credential "${name}" (${entry.kind}) in ${this.impl.where}`);
    return this.info(name, entry);
  }

  async remove(name: string): Promise<boolean> {
    checkName(name);
    const removed = await this.impl.remove(name);
    this.mutations++;
    this.entries.delete(name);
    this.changed();
    if (removed) log.info(`removed credential "${name}" from ${this.impl.where}`);
    return removed;
  }

  /** Re-read the backend. Calls queue behind one another, so each sees a read that began after it. */
  refresh(): Promise<void> {
    const next = this.chain.then(() => this.reload());
    this.chain = next.catch(() => {});
    return next;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      // A slow backend (a keychain prompt) must not pile up reads.
      if (this.loading) return;
      this.refresh().then(
        () => this.pollSucceeded(),
        (e: unknown) => this.pollFailed(e),
      );
    }, this.pollMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async reload(): Promise<void> {
    this.loading = true;
    try {
      const before = this.mutations;
      const loaded = await this.impl.load();
      if (this.mutations !== before) return;
      const next = new Map<string, Entry>();
      const bad = new Set<string>();
      for (const [name, s] of loaded) {
        const value = cleanOutside(s.value);
        if (value === undefined) {
          bad.add(name);
          if (!this.badValues.has(name)) {
            log.warn(
              `credential "${name}" in ${this.impl.where} is empty or has spaces or control characters inside; set it again with lazy auth set ${name}`,
            );
          }
          continue;
        }
        next.set(name, { value, setAt: s.setAt, kind: kindOf(value) });
      }
      this.badValues = bad;
      if (this.loaded) this.report(next);
      this.loaded = true;
      const same = next.size === this.entries.size && [...next].every(([name, e]) => this.entries.get(name)?.value === e.value);
      this.entries = next;
      if (!same) this.changed();
    } finally {
      this.loading = false;
    }
  }

  /** Say which names changed outside this process (names only, never values). */
  private report(next: Map<string, Entry>): void {
    const changed: string[] = [];
    for (const [name, e] of next) if (this.entries.get(name)?.value !== e.value) changed.push(name);
    for (const name of this.entries.keys()) if (!next.has(name)) changed.push(name);
    if (changed.length) log.info(`credentials changed outside this process: ${changed.sort().join(", ")}`);
  }

  private fromEnv(name: string): { value: string; envVar: string } | undefined {
    const envVar = STANDARD[name];
    if (!envVar) return undefined;
    const value = cleanOutside(this.env[envVar]);
    return value === undefined ? undefined : { value, envVar };
  }

  private info(name: string, e: Entry): CredentialInfo {
    const expires = this.expiries.of(name, e.value);
    return {
      name,
      kind: e.kind,
      source: this.backend,
      setAt: e.setAt,
      last4: last4(e.value),
      ...(expires !== undefined ? { expiresAt: new Date(expires).toISOString() } : {}),
    };
  }

  /** Stored credentials whose expiry lazy knows and that lapse before `until` (ms), soonest first. */
  expiring(until: number): { name: string; kind: CredentialKind; expiresAt: number }[] {
    const out: { name: string; kind: CredentialKind; expiresAt: number }[] = [];
    for (const [name, e] of this.entries) {
      const at = this.expiries.of(name, e.value);
      if (at !== undefined && at <= until) out.push({ name, kind: e.kind, expiresAt: at });
    }
    return out.sort((a, b) => a.expiresAt - b.expiresAt);
  }

  private pollFailed(e: unknown): void {
    const message = `could not re-read credentials from ${this.impl.where}: ${e instanceof Error ? e.message : String(e)}`;
    if (message !== this.pollWarning) log.warn(message);
    this.pollWarning = message;
  }

  private pollSucceeded(): void {
    if (this.pollWarning !== undefined) log.info(`credentials readable again from ${this.impl.where}`);
    this.pollWarning = undefined;
  }
}

/**
 * A bad name is never echoed: `lazy auth set <key>` with the arguments
 * swapped must not print the key back, and a key-shaped name would put a key in every log line.
 */
function checkName(name: string): void {
  if (kindOf(name) !== "unknown" || name.length > 64) {
    throw new LazyError(
      "invalid_input",
      "the credential name looks like a key, not a name: give the name first (anthropic, openai, work-openai, ...) and the value second",
    );
  }
  if (!validName(name)) {
    throw new LazyError(
      "invalid_input",
      "the credential name is not valid: use 1-64 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit",
    );
  }
}

/**
 * Where a brokered service's real secret comes from, in the daemon on the host: a stored
 * credential, a host command (`gh auth token`) cached for its stated lifetime, or a GitHub App
 * installation token minted per task. The terminator asks `get` for each request it swaps, so a
 * cached secret is answered from memory; a run or a mint happens once however many requests ask
 * at the same moment, and a failure is kept a few seconds so a flood of retries cannot fork-bomb
 * the host or hammer GitHub. `status` is what lazy doctor, lazy watch and the task's events say:
 * the last outcome per service, never a secret.
 */
import { isStoredKey } from "../credentials";
import type { Logger } from "../util/log";
import { type FetchLike, GitHubApp, REFRESH_MS } from "./github-app";
import { cut, runOnHost, TIMEOUT_MS } from "./host-command";
import type { SourceSpec } from "./types";

/** How long a failed run or mint is answered from memory before it is tried again. */
export const RETRY_MS = 5_000;

/** A source that could not give a secret: the message names the cause and the remedy, never a secret. */
export class SourceError extends Error {
  readonly service: string;
  readonly source: SourceSpec["kind"];
  constructor(service: string, source: SourceSpec["kind"], message: string) {
    super(message);
    this.name = "SourceError";
    this.service = service;
    this.source = source;
  }
}

export interface Secret {
  value: string;
  /** When the daemon must stop using it (ms since the epoch); null: no stated end. */
  expiresAt: number | null;
}

export interface SourceStatus {
  service: string;
  kind: SourceSpec["kind"];
  ok: boolean;
  /** What happened, in words, never a secret. */
  detail: string;
  at: number;
}

export interface SourcesDeps {
  credential(name: string): Promise<string | null>;
  log: Logger;
  /** The project root: a command's working directory. */
  cwd: string;
  now?: () => number;
  /** How the GitHub App's calls go out (the company proxy/CA; a test's loopback). Default: fetch. */
  fetch?: FetchLike;
  /** A command's time limit (default 20 s). */
  commandTimeoutMs?: number;
  /** An App token with less than this left is minted again (default 10 min). */
  appRefreshMs?: number;
}

interface CommandEntry {
  /** The spec it was run for: a reloaded lazy.toml with another argv or ttl starts afresh. */
  key: string;
  value?: string;
  expiresAt: number;
  refreshAt: number;
  failure?: { error: SourceError; until: number };
  running?: Promise<Secret>;
}

/** A command as errors name it: bounded, and cut of anything token-shaped someone put in argv. */
const quote = (argv: readonly string[]) => {
  const s = cut(argv.join(" "));
  return `"${s.length > 120 ? `${s.slice(0, 120)}…` : s}"`;
};

export class Sources {
  private readonly deps: SourcesDeps;
  private readonly now: () => number;
  private readonly commands = new Map<string, CommandEntry>();
  private readonly apps = new Map<string, { key: string; app: GitHubApp }>();
  private readonly outcomes = new Map<string, SourceStatus>();

  constructor(deps: SourcesDeps) {
    this.deps = deps;
    this.now = deps.now ?? Date.now;
  }

  async get(service: string, spec: SourceSpec, task: { id: string; repos: string[] }): Promise<Secret> {
    try {
      const secret = await this.resolve(service, spec, task);
      return secret;
    } catch (e) {
      const error = e instanceof SourceError ? e : new SourceError(service, spec.kind, `service ${service}: ${cut(String(e))}`);
      this.record(service, spec.kind, false, error.message);
      throw error;
    }
  }

  /** The last outcome per service, for lazy doctor, lazy watch and the task's events. */
  status(): SourceStatus[] {
    return [...this.outcomes.values()].sort((a, b) => a.service.localeCompare(b.service));
  }

  /** A task ended: its App tokens are dropped from memory. */
  forgetTask(taskId: string): void {
    for (const { app } of this.apps.values()) app.forgetTask(taskId);
  }

  private record(service: string, kind: SourceSpec["kind"], ok: boolean, detail: string): void {
    this.outcomes.set(service, { service, kind, ok, detail, at: this.now() });
  }

  private resolve(service: string, spec: SourceSpec, task: { id: string; repos: string[] }): Promise<Secret> {
    switch (spec.kind) {
      case "credential":
        return this.credential(service, spec.name);
      case "command":
        return this.command(service, spec);
      case "app":
        return this.app(service, spec, task);
    }
  }

  private async credential(service: string, name: string): Promise<Secret> {
    const value = await this.deps.credential(name);
    if (value === null)
      throw new SourceError(
        service,
        "credential",
        `service ${service}: no credential ${name}: lazy auth set ${name} (it reads the token from a hidden prompt or stdin), then retry the turn.`,
      );
    if (isStoredKey(value))
      throw new SourceError(
        service,
        "credential",
        `service ${service}: the credential ${name} is a private key, not a token: for a GitHub App write source = { app = …, key = "${name}" } in its [[service]].`,
      );
    this.record(service, "credential", true, `the stored credential ${name}`);
    return { value, expiresAt: null };
  }

  private async command(service: string, spec: Extract<SourceSpec, { kind: "command" }>): Promise<Secret> {
    const key = JSON.stringify([spec.argv, spec.ttlMs]);
    let e = this.commands.get(service);
    if (!e || e.key !== key) {
      e = { key, expiresAt: 0, refreshAt: 0 };
      this.commands.set(service, e);
    }
    const entry = e;
    const now = this.now();
    const cached = (): Secret | undefined =>
      entry.value !== undefined && this.now() < entry.expiresAt ? { value: entry.value, expiresAt: entry.expiresAt } : undefined;
    if (entry.value !== undefined && now < entry.refreshAt) return { value: entry.value, expiresAt: entry.expiresAt };
    if (entry.failure && now < entry.failure.until) {
      // A failed re-run leaves a still-valid token usable; the status says the command failed.
      const old = cached();
      if (old) return old;
      throw entry.failure.error;
    }
    entry.running ??= this.runCommand(service, spec, entry).finally(() => {
      entry.running = undefined;
    });
    try {
      return await entry.running;
    } catch (err) {
      const old = cached();
      if (old) return old;
      throw err;
    }
  }

  private async runCommand(service: string, spec: Extract<SourceSpec, { kind: "command" }>, entry: CommandEntry): Promise<Secret> {
    const started = this.now();
    const ran = await runOnHost(spec.argv, { cwd: this.deps.cwd, timeoutMs: this.deps.commandTimeoutMs ?? TIMEOUT_MS });
    const what = `the command ${quote(spec.argv)} for service ${service}`;
    const remedy = "Fix it on the host (run it yourself), then retry the turn.";
    let why: string | undefined;
    switch (ran.kind) {
      case "spawn":
        why = `${what} could not start: ${ran.why}. Check the command in its [[service]] in lazy.toml (is it installed and on the daemon's PATH?), then retry the turn.`;
        break;
      case "exit":
        why = `${what} ${ran.code === null ? `was killed by ${ran.signal ?? "a signal"}` : `exited with ${ran.code}`}${ran.stderr ? `: ${ran.stderr}` : ""}. ${remedy}`;
        break;
      case "timeout":
        why = `${what} did not finish within ${ran.ms / 1000} s and was killed (a prompt waiting for input?). ${remedy}`;
        break;
      case "overflow":
        why = `${what} printed more than ${ran.max / 1024} KiB, the most lazy reads of a token command; make it print only the token. ${remedy}`;
        break;
      case "no-token":
        why = `${what} gave no token: ${ran.why}. Make it print the token alone on its first line, then retry the turn.`;
        break;
      case "ok": {
        entry.value = ran.token;
        entry.expiresAt = started + spec.ttlMs;
        entry.refreshAt = entry.expiresAt - Math.min(60_000, spec.ttlMs / 10);
        entry.failure = undefined;
        const detail = `${quote(spec.argv)} ran; its token is used until ${new Date(entry.expiresAt).toISOString()}`;
        this.record(service, "command", true, detail);
        this.deps.log.info(`service ${service}: ${detail}`);
        return { value: ran.token, expiresAt: entry.expiresAt };
      }
    }
    const error = new SourceError(service, "command", why);
    entry.failure = { error, until: this.now() + RETRY_MS };
    this.record(service, "command", false, why);
    this.deps.log.repeated("warn", `source:${service}`, why);
    throw error;
  }

  private app(service: string, spec: Extract<SourceSpec, { kind: "app" }>, task: { id: string; repos: string[] }): Promise<Secret> {
    const key = JSON.stringify([spec.appId, spec.key, spec.permissions, spec.api]);
    let a = this.apps.get(service);
    if (!a || a.key !== key) {
      a = {
        key,
        app: new GitHubApp(service, spec, {
          credential: this.deps.credential,
          fetch: this.deps.fetch ?? ((input, init) => fetch(input, init)),
          now: this.now,
          refreshMs: this.deps.appRefreshMs ?? REFRESH_MS,
          retryMs: RETRY_MS,
          log: this.deps.log,
          fail: (message) => new SourceError(service, "app", message),
          minted: (detail) => this.record(service, "app", true, detail),
        }),
      };
      this.apps.set(service, a);
    }
    return a.app.token(task);
  }
}

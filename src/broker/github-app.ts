/**
 * A GitHub App as a secret source: the daemon holds the App's private key (stored with
 * `lazy auth set`) and mints an installation token per task, scoped to the task's repositories
 * and the permissions lazy.toml names, so no task ever holds a token that outlives it or reaches
 * another repository. The key signs a short RS256 JWT (node:crypto) that only the daemon sees;
 * the key and the tokens never reach a log line or an error. A token is minted again while it
 * still has `refreshMs` to live (GitHub's last an hour), once however many requests ask.
 */
import { type KeyObject, sign } from "node:crypto";
import { privateKeyOf } from "../credentials";
import type { Logger } from "../util/log";
import { cut } from "./host-command";
import type { SourceSpec } from "./types";

export type AppSpec = Extract<SourceSpec, { kind: "app" }>;
/** The part of fetch the App's calls use: the daemon routes it through the company proxy and CA. */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** A token with less than this left is minted again. */
export const REFRESH_MS = 10 * 60_000;
/** One API call's time limit, and the most of an answer read. */
const CALL_MS = 20_000;
const BODY_MAX = 64 * 1024;
const REPO = /^[A-Za-z0-9_.-]{1,100}\/[A-Za-z0-9_.-]{1,100}$/;

export interface AppDeps {
  credential(name: string): Promise<string | null>;
  fetch: FetchLike;
  now: () => number;
  refreshMs: number;
  retryMs: number;
  log: Logger;
  /** The error to throw, with this message (the caller's SourceError). */
  fail: (message: string) => Error;
  /** A token was minted: what to say of it (never the token). */
  minted: (detail: string) => void;
}

interface Held {
  token?: string;
  expiresAt: number;
  failure?: { error: Error; until: number };
  running?: Promise<{ value: string; expiresAt: number }>;
}

const b64url = (b: Buffer | string) => Buffer.from(b).toString("base64url");

/** The App's JWT: RS256, issued a minute back (clock drift), good for 9 minutes (GitHub allows 10). */
export function appJwt(appId: string, key: KeyObject, nowMs: number): string {
  const now = Math.floor(nowMs / 1000);
  const head = b64url(JSON.stringify({ alg: "RS256", typ: "JWT" }));
  const body = b64url(JSON.stringify({ iat: now - 60, exp: now + 9 * 60, iss: appId }));
  const signature = sign("sha256", Buffer.from(`${head}.${body}`), key);
  return `${head}.${body}.${b64url(signature)}`;
}

export class GitHubApp {
  private readonly held = new Map<string, Held>();
  private readonly api: string;

  constructor(
    private readonly service: string,
    private readonly spec: AppSpec,
    private readonly deps: AppDeps,
  ) {
    this.api = spec.api.replace(/\/+$/, "");
  }

  /** The task's installation token, minted when it has none or its token is inside the refresh margin. */
  async token(task: { id: string; repos: string[] }): Promise<{ value: string; expiresAt: number }> {
    const key = `${task.id}\0${task.repos.join(",")}`;
    let h = this.held.get(key);
    if (!h) {
      h = { expiresAt: 0 };
      this.held.set(key, h);
    }
    const held = h;
    const now = this.deps.now();
    if (held.token !== undefined && held.expiresAt - now > this.deps.refreshMs) return { value: held.token, expiresAt: held.expiresAt };
    const stillValid = () =>
      held.token !== undefined && held.expiresAt > this.deps.now() ? { value: held.token, expiresAt: held.expiresAt } : undefined;
    if (held.failure && now < held.failure.until) {
      const old = stillValid();
      if (old) return old;
      throw held.failure.error;
    }
    held.running ??= this.mint(task, held).finally(() => {
      held.running = undefined;
    });
    try {
      return await held.running;
    } catch (e) {
      const old = stillValid();
      if (old) return old;
      throw e;
    }
  }

  forgetTask(taskId: string): void {
    for (const k of this.held.keys()) if (k.startsWith(`${taskId}\0`)) this.held.delete(k);
  }

  private async mint(task: { id: string; repos: string[] }, held: Held): Promise<{ value: string; expiresAt: number }> {
    try {
      const r = await this.mintOnce(task);
      held.token = r.value;
      held.expiresAt = r.expiresAt;
      held.failure = undefined;
      const detail = `App ${this.spec.appId}: a token for task ${task.id} (${task.repos.join(", ")}), good until ${new Date(r.expiresAt).toISOString()}`;
      this.deps.minted(detail);
      this.deps.log.info(`service ${this.service}: minted ${detail}`);
      return r;
    } catch (e) {
      const error = e instanceof Error && e.name === "SourceError" ? e : this.deps.fail(`service ${this.service}: ${cut(String(e))}`);
      held.failure = { error, until: this.deps.now() + this.deps.retryMs };
      this.deps.log.repeated("warn", `app:${this.service}`, error.message);
      throw error;
    }
  }

  private async mintOnce(task: { id: string; repos: string[] }): Promise<{ value: string; expiresAt: number }> {
    const { appId, key: keyName } = this.spec;
    const app = `the GitHub App ${appId} (service ${this.service})`;
    const stored = await this.deps.credential(keyName);
    if (stored === null)
      throw this.deps.fail(
        `${app}: no credential ${keyName} holds its private key: lazy auth set ${keyName} < the App's .pem file, then retry the turn.`,
      );
    let key: KeyObject;
    try {
      key = privateKeyOf(stored);
    } catch {
      throw this.deps.fail(
        `${app}: the credential ${keyName} is not a private key: store the App's .pem with lazy auth set ${keyName} < app.pem, then retry the turn.`,
      );
    }
    if (key.asymmetricKeyType !== "rsa")
      throw this.deps.fail(
        `${app}: the credential ${keyName} is a ${key.asymmetricKeyType} key; a GitHub App's key is RSA: store the .pem GitHub gave you.`,
      );
    if (!task.repos.length)
      throw this.deps.fail(
        `${app}: the task has no repository to scope a token to: set repos = ["owner/name"] in the [[service]], or give the project an origin remote.`,
      );
    const bad = task.repos.find((r) => !REPO.test(r));
    if (bad !== undefined) throw this.deps.fail(`${app}: "${cut(bad)}" is not an owner/name repository: fix repos in the [[service]].`);
    const owners = new Set(task.repos.map((r) => r.split("/")[0]!.toLowerCase()));
    if (owners.size > 1)
      throw this.deps.fail(
        `${app}: one installation token covers one owner's repositories, and repos names ${[...owners].join(", ")}: make one [[service]] per owner.`,
      );

    const jwt = appJwt(appId, key, this.deps.now());
    let installation: number | undefined;
    for (const repo of task.repos) {
      const r = await this.call("GET", `/repos/${repo}/installation`, jwt);
      if (r.status === 404)
        throw this.deps.fail(
          `${app} is not installed on ${repo}: install it on that repository (github.com/settings/installations), or change repos, then retry the turn.`,
        );
      this.refused(r, app, `finding its installation on ${repo}`);
      const id = (r.json as { id?: unknown } | undefined)?.id;
      if (typeof id !== "number" || !Number.isSafeInteger(id) || id <= 0)
        throw this.deps.fail(`${app}: ${this.api} answered no installation id for ${repo}: is api = "${this.api}" GitHub's API?`);
      installation ??= id;
      if (id !== installation)
        throw this.deps.fail(`${app}: ${task.repos.join(", ")} are in different installations: make one [[service]] per installation.`);
    }

    const body: Record<string, unknown> = { repositories: task.repos.map((r) => r.split("/")[1]!) };
    // No permissions named: the token gets the installation's own (GitHub's default).
    if (Object.keys(this.spec.permissions).length) body.permissions = this.spec.permissions;
    const r = await this.call("POST", `/app/installations/${installation}/access_tokens`, jwt, body);
    if (r.status === 422)
      throw this.deps.fail(
        `${app} refused a token for ${task.repos.join(", ")} with permissions ${JSON.stringify(this.spec.permissions)} (422: ${r.message}): grant those permissions in the App's settings and accept them on the installation, or change permissions in the [[service]].`,
      );
    this.refused(r, app, "minting an installation token");
    const { token, expires_at } = (r.json ?? {}) as { token?: unknown; expires_at?: unknown };
    const expiresAt = typeof expires_at === "string" ? Date.parse(expires_at) : Number.NaN;
    if (typeof token !== "string" || !/^[\x21-\x7e]{1,1024}$/.test(token) || !Number.isFinite(expiresAt))
      throw this.deps.fail(`${app}: ${this.api} answered no token and expiry: is api = "${this.api}" GitHub's API?`);
    return { value: token, expiresAt };
  }

  /** A status other than 2xx, worded (401: the key is not the App's). */
  private refused(r: { status: number; message: string }, app: string, doing: string): void {
    if (r.status >= 200 && r.status < 300) return;
    if (r.status === 401)
      throw this.deps.fail(
        `${app}: GitHub refused the App's signed token while ${doing} (401: ${r.message}): the private key stored as ${this.spec.key} does not match App id ${this.spec.appId}; generate a key in the App's settings and lazy auth set ${this.spec.key} < it.`,
      );
    throw this.deps.fail(
      `${app}: ${this.api} answered ${r.status} while ${doing}${r.message ? ` (${r.message})` : ""}; retry the turn, or check the App's settings.`,
    );
  }

  /** One API call; a network failure is worded with its cause. The JWT travels in the header only. */
  private async call(
    method: string,
    path: string,
    jwt: string,
    body?: unknown,
  ): Promise<{ status: number; json: unknown; message: string }> {
    const url = `${this.api}${path}`;
    let res: Response;
    try {
      res = await this.deps.fetch(url, {
        method,
        headers: {
          accept: "application/vnd.github+json",
          "x-github-api-version": "2022-11-28",
          "user-agent": "lazy",
          authorization: `Bearer ${jwt}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        redirect: "manual",
        signal: AbortSignal.timeout(CALL_MS),
      });
    } catch (e) {
      const why = e instanceof Error ? `${e.name === "TimeoutError" ? `no answer within ${CALL_MS / 1000} s` : e.message}` : String(e);
      throw this.deps.fail(
        `the GitHub App ${this.spec.appId} (service ${this.service}): could not reach ${url}: ${cut(why, [jwt])}. Check the network (and api = "${this.api}"), then retry the turn.`,
      );
    }
    const text = await bounded(res);
    let json: unknown;
    try {
      json = text === undefined ? undefined : JSON.parse(text);
    } catch {}
    const m = (json as { message?: unknown } | undefined)?.message;
    return {
      status: res.status,
      json,
      message: typeof m === "string" ? cut(m, [jwt]) : text === undefined ? "an answer too long to read" : "",
    };
  }
}

/** A body read up to BODY_MAX; undefined when it runs past it (a token answer is tiny). */
async function bounded(res: Response): Promise<string | undefined> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const parts: Uint8Array[] = [];
  let n = 0;
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      n += r.value.byteLength;
      if (n > BODY_MAX) return undefined;
      parts.push(r.value);
    }
  } finally {
    reader.cancel().catch(() => {});
  }
  return Buffer.concat(parts).toString("utf8");
}

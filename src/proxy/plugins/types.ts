/**
 * What a request plugin sees and may answer: the public contract of `[[proxy.plugins]]`, quoted
 * in the README's reference. A plugin's default export is `(req: PluginRequest) => PluginResult`
 * (or a promise of one).
 */

/** The outbound request as the agent sent it, before lazy puts the real credential in. */
export interface PluginRequest {
  method: string;
  /** The path and query as they will go upstream (after the endpoint's own prefix), e.g. `/v1/messages?beta=true`. */
  path: string;
  /** Lowercased names; never a credential (x-api-key and authorization are left out), nor hop-by-hop headers. */
  headers: Record<string, string>;
  /** The body as UTF-8 text, or null when there is none. */
  body: string | null;
  /** The task's code (or short id), or null for a request with no task. */
  task: string | null;
  /** The profile the caller's grant names, or null. */
  profile: string | null;
  /** The upstream's origin, e.g. `https://api.anthropic.com`. */
  upstream: string;
}

/**
 * Nothing: pass. `{ note }`: pass, the note kept in the audit trail. `{ refuse }`: the agent gets
 * a 403 with this reason, audited. Otherwise a rewrite: `path` (checked against what lazy
 * forwards again), `headers` (the whole set sent on; credential headers in it are dropped),
 * `body` (text).
 */
export type PluginResult =
  | undefined
  | null
  | { note: string }
  | { refuse: string }
  | { path?: string; headers?: Record<string, string>; body?: string; note?: string };

export type PluginFunction = (req: PluginRequest) => PluginResult | Promise<PluginResult>;

/** A plugin as the daemon's main thread found it: a file to load, or why it is refused. */
export type Spec = { name: string; file: string; timeoutMs: number } | { name: string; refused: string; timeoutMs: number };

/**
 * The request path's one call into the plugins: run the chain on a request whose body is read and
 * whose credential is not in yet, and turn its outcome into what forward.ts sends or refuses. A
 * rewritten path or headers meet the forwarding surface again, so no plugin opens a path lazy
 * does not forward; a throw, a timeout or a plugin that did not load fails the request loudly.
 */

import { MAX_BODY } from "../listen";
import type { Chain } from "../plugins";
import { pathRefusal, refusal, words } from "./errors";
import * as Surface from "./surface";

export type Applied =
  | { ok: true; note: string | null; path: string; query: string; headers?: Headers; body: Uint8Array | undefined }
  | { ok: false; note: string | null; response: Response; why: string };

export interface Asked {
  req: Request;
  kind: Surface.UpstreamKind;
  wire: Surface.Wire;
  /** The path as checked (and its query), the body as read. */
  path: string;
  query: string;
  body: Uint8Array | undefined;
  /** Headers that never go upstream: not shown to a plugin. */
  dropped: ReadonlySet<string>;
  task: string | null;
  profile: string | null;
  upstream: string;
  /** The path as the agent asked for it, for the refusal's words. */
  asked: string;
}

export async function applyPlugins(chain: Chain, a: Asked): Promise<Applied> {
  const bytes = a.body;
  let text: string | null | undefined;
  const out = await chain.run({
    method: a.req.method,
    path: a.path + a.query,
    headers: pluginHeaders(a.req.headers, a.dropped),
    // Decoded only if a plugin reads it: a turn's body is often 100 KiB or more.
    get body() {
      text ??= bytes ? new TextDecoder().decode(bytes) : null;
      return text;
    },
    task: a.task,
    profile: a.profile,
    upstream: a.upstream,
  });
  const note = out.note;
  if (out.kind === "fail") {
    const r = { code: "plugin_failed", plugin: out.plugin, error: out.error } as const;
    return { ok: false, note, response: refusal(a.wire, r), why: words(r) };
  }
  if (out.kind === "refuse")
    return {
      ok: false,
      note,
      response: refusal(a.wire, { code: "plugin_refused", method: a.req.method, path: a.asked, plugin: out.plugin, reason: out.reason }),
      why: `plugin ${out.plugin} refused: ${out.reason}`,
    };
  let { path, query } = a;
  let headers: Headers | undefined;
  if (out.path !== undefined || out.headers) {
    const rewritten = out.headers ? new Headers(out.headers) : a.req.headers;
    const again = Surface.check(a.kind, a.req.method, out.path ?? path + query, rewritten);
    if (!again.ok)
      return {
        ok: false,
        note,
        response: refusal(a.wire, pathRefusal(again)),
        why: `refused after plugin rewrite: ${again.reason}`,
      };
    path = again.path;
    query = again.query;
    if (out.headers) headers = rewritten;
  }
  let body = a.body;
  if (out.body !== undefined) {
    body = new TextEncoder().encode(out.body);
    if (body.length > MAX_BODY) {
      return {
        ok: false,
        note,
        response: refusal(a.wire, { code: "plugin_body_too_large", limit: MAX_BODY }),
        why: "plugin body too large",
      };
    }
  }
  return { ok: true, note, path, query, headers, body };
}

/** The headers a plugin sees: never a credential, nor what never goes upstream anyway. */
function pluginHeaders(incoming: Headers, dropped: ReadonlySet<string>): Record<string, string> {
  const all = incoming.toJSON() as Record<string, string | string[]>;
  const out: Record<string, string> = {};
  for (const k in all) {
    if (dropped.has(k) || k === "x-api-key" || k === "authorization") continue;
    const v = all[k]!;
    out[k] = typeof v === "string" ? v : v.join(", ");
  }
  return out;
}

/**
 * The proxy's own answers, written once: refusals and credential failures are data (a status
 * and a body in the wire's error shape), and every one carries `x-should-retry: false` so the
 * SDKs do not hammer the proxy with a request that cannot succeed. Errors name the party:
 * the provider (with host, profile and credential label, and how far the request got), or
 * lazy itself ("lazy's proxy failed").
 */
import type { Wire } from "./surface";

const NO_RETRY = { "x-should-retry": "false" };

export function errorResponse(wire: Wire | "cursor", status: number, type: string, message: string, extra: Record<string, string> = {}): Response {
  const body =
    wire === "openai"
      ? { error: { message, type, param: null, code: type === "authentication_error" ? "invalid_api_key" : type } }
      : { type: "error", error: { type, message } };
  return Response.json(body, { status, headers: { ...NO_RETRY, ...extra } });
}

export function rawResponse(status: number, body: object): Response {
  return Response.json(body, { status, headers: NO_RETRY });
}

export type NetFailure = "reset" | "connect" | "timeout";

export function classify(e: unknown): NetFailure | "aborted" | "other" {
  const err = e as { name?: string; code?: string | number };
  if (err?.name === "AbortError") return "aborted";
  if (err?.name === "TimeoutError" || err?.code === "ETIMEDOUT") return "timeout";
  const code = String(err?.code ?? "");
  if (code === "ECONNRESET" || code === "EPIPE" || code === "ConnectionClosed") return "reset";
  if (code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "EHOSTUNREACH" || code === "ENETUNREACH" || code === "FailedToOpenSocket" || code === "ConnectionRefused")
    return "connect";
  return "other";
}

const what: Record<NetFailure, string> = {
  reset: "reset the connection",
  connect: "could not be reached",
  timeout: "sent no response headers",
};

/** `Anthropic (api.anthropic.com, profile code-builder, credential anthropic) reset the connection 4 ms into the request` */
export function providerFailure(p: { provider: string; host: string; profile: string | null; credential: string | null }, failure: NetFailure, ms: number, detail?: string): string {
  const who = [p.host, p.profile ? `profile ${p.profile}` : null, p.credential ? `credential ${p.credential}` : null].filter(Boolean).join(", ");
  const when = failure === "connect" ? `(${detail ?? "connection failed"}) ${Math.round(ms)} ms into the request` : `${Math.round(ms)} ms into the request`;
  return `${p.provider} (${who}) ${what[failure]} ${when}`;
}
